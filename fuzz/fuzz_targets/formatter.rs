//! json-text, the default formatter, on any input, run natively (the same code the
//! sandbox runs). `json_text::render::render` must only ever return, and text it
//! returns must hold its two promises to the model that reads it:
//!
//! - it is at most `max_output_bytes` long, and when it was cut it ends with the
//!   truncation marker;
//! - it contains none of the characters the cleaning removes: C0 controls other
//!   than line feed and tab, DEL, C1 controls, and the invisible, bidi and tag
//!   characters of wasmgate's one list (`text-safety`), but for an emoji's
//!   joiner and presentation selector, which that crate keeps. Line separators
//!   have become line feeds.
//!
//! Byte 0 picks the budget (just the marker, up to a few hundred bytes, or 1 MiB),
//! byte 1 what the rest of the input (taken as lossy UTF-8) becomes:
//! - 0: the `content` array's JSON text, with no structured content;
//! - 1: the structured content's JSON text, after one text block;
//! - 2: every untrusted string of a well-formed result (text, resource link name,
//!   URI and description, media type, an embedded resource's text, an object key
//!   and values in structured content), so the cleaning is reached through every
//!   path even when the fuzzer's bytes are not JSON;
//! - 3: as 2, with the result marked as an error.

#![no_main]

use json_text::render::{Input, TRUNCATED, render};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    let [budget, mode, rest @ ..] = data else { return };
    let text = String::from_utf8_lossy(rest);
    let max_output_bytes = match budget {
        255 => 1 << 20,
        n => TRUNCATED.len() + usize::from(*n) * 2,
    };
    let (content, structured, is_error) = match mode % 4 {
        0 => (text.to_string(), None, false),
        1 => (json!([{"type": "text", "text": "see below"}]).to_string(), Some(text.to_string()), false),
        m => {
            let s = text.as_ref();
            let content = json!([
                {"type": "text", "text": s},
                {"type": "resource_link", "name": s, "uri": s, "description": s},
                {"type": "image", "mimeType": s, "data": "AAAA"},
                {"type": "resource", "resource": {"uri": s, "text": s}},
                {"type": s},
            ]);
            let structured = json!({ s: [s, {s: s}], "plain": s });
            (content.to_string(), Some(structured.to_string()), m == 3)
        }
    };
    let input = Input { content: &content, structured: structured.as_deref(), is_error, max_output_bytes };
    let Ok(out) = render(input) else { return };
    assert!(out.len() <= max_output_bytes, "{} bytes over a budget of {max_output_bytes}", out.len());
    if out.len() > max_output_bytes - TRUNCATED.len() {
        assert!(out.ends_with(TRUNCATED), "over the content budget without the marker: {out:?}");
    }
    for c in out.chars() {
        let removed = match c {
            '\n' | '\t' => false,
            '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}' => true,
            '\u{200d}' | '\u{fe0e}' | '\u{fe0f}' => false,
            c => text_safety::is_invisible(c),
        };
        assert!(!removed, "{c:?} (U+{:04X}) in the output: {out:?}", u32::from(c));
    }
});
