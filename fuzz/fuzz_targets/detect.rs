//! Any text a provider might return, through the injection detector: `detect`, which
//! says what a result looks like, and `locate`, which says where in it each finding
//! stands and the passage around it. Both must only ever return; `detect` flags each
//! rule at most once; every place `locate` reports is a place in the text, inside its
//! passage, at most `MAX_LOCATED_PER_RULE` of a rule; and the two agree on which rules
//! the text trips, so that a flagged result is always placed.

#![no_main]

use std::collections::BTreeSet;

use libfuzzer_sys::fuzz_target;
use wasmgate_policy::{MAX_LOCATED_PER_RULE, detect, locate};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let flags = detect(text);
    let flagged: BTreeSet<&str> = flags.iter().map(|f| f.rule).collect();
    assert_eq!(flagged.len(), flags.len(), "a rule flagged twice: {flags:?}");
    let located = locate(text);
    for l in &located {
        assert!(text.get(l.span.clone()).is_some(), "{l:?}: the span is not a place in the text");
        assert!(text.get(l.passage.clone()).is_some(), "{l:?}: the passage is not a place in the text");
        assert!(l.passage.start <= l.span.start && l.span.end <= l.passage.end, "{l:?}: the passage misses the span");
    }
    let placed: BTreeSet<&str> = located.iter().map(|l| l.flag.rule).collect();
    for rule in &placed {
        let count = located.iter().filter(|l| l.flag.rule == *rule).count();
        assert!(count <= MAX_LOCATED_PER_RULE, "{rule}: {count} findings");
    }
    assert_eq!(placed, flagged, "detect and locate disagree");
});
