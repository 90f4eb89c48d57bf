//! Any text a provider might return, through what the data-flow memory does with it:
//! the values it carries (`extract`), whether each stands in running text
//! (`Prose`, `in_prose`), the literals it quotes (`quoted`), the text as a whole value
//! (`text_value`), and, when it is JSON, the strings of it as structured content
//! (`strings`). It must only ever return, every span must be a place in the text, and
//! one `Prose` asked about every value, in order and then backwards, must answer as a
//! fresh one for each.

#![no_main]

use libfuzzer_sys::fuzz_target;
use wasmgate_policy::{
    MAX_QUOTED_CHARS, MAX_VALUE_BYTES, MAX_VALUES_PER_TEXT, MIN_TEXT_CHARS, Prose, extract, in_prose, quoted, strings,
    text_value,
};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let found = extract(text);
    assert!(found.len() <= MAX_VALUES_PER_TEXT, "{} values", found.len());
    for f in &found {
        assert!(!f.value.is_empty() && f.value.len() <= MAX_VALUE_BYTES, "{f:?}");
        assert!(text.get(f.span.clone()).is_some(), "{f:?} is not a place in the text");
    }
    let spans: Vec<_> = found.iter().map(|f| f.span.clone()).filter(|s| !s.is_empty()).collect();
    let mut lines = Prose::new(text);
    for span in spans.iter().chain(spans.iter().rev()) {
        assert_eq!(lines.holds(span.clone()), in_prose(text, span.clone()), "{span:?}");
    }
    let mut literals = 0;
    quoted(text, |value, span| {
        assert!(text.get(span.clone()).is_some(), "{span:?} is not a place in the text");
        assert!(!value.is_empty() && value.chars().count() <= MAX_QUOTED_CHARS, "{value:?}");
        let _ = lines.holds(span);
        literals += 1;
    });
    assert!(literals <= MAX_VALUES_PER_TEXT);
    if let Some(whole) = text_value(text) {
        assert!(whole.chars().count() >= MIN_TEXT_CHARS && whole.len() <= MAX_VALUE_BYTES);
    }
    if let Ok(json) = serde_json::from_str::<serde_json::Value>(text) {
        assert!(strings(&json).len() <= MAX_VALUES_PER_TEXT);
    }
});
