//! A single-pass byte scanner that runs *before* the JSON parser.
//!
//! Why not let serde_json find these problems? Two reasons:
//!
//! * **Depth.** serde_json parses recursively and stops at 128 levels, but every later
//!   consumer of a `Value` (drop, clone, `Debug`, serialisation, the policy engine) recurses
//!   too. Rejecting deep input up front, with a loop instead of recursion, keeps a
//!   100,000-level `[[[[…` from ever reaching a recursive code path, and gives a precise
//!   [`TooDeep`](crate::ProtocolError::TooDeep) instead of a parser message.
//! * **Duplicate keys.** serde_json silently keeps the *last* of two equal keys; other
//!   parsers keep the first or fail. A gateway that inspects `{"name":"safe","name":"rm"}`
//!   must not see a different message than whoever else reads those bytes, so the
//!   scanner records the first duplicate and [`parse_message`](crate::parse_message)
//!   rejects it once the text is known to be valid JSON.
//!
//! The scanner only understands the structure it needs: brackets, commas, and strings
//! (so `"[[["` inside a string counts for nothing, and `\"` does not end a string). It
//! does not validate the JSON; the real parser does that right after.

use std::collections::HashSet;

use crate::ProtocolError;

/// What the scan found that is only an error if the text turns out to be valid JSON.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ScanReport {
    /// The first key that appears twice in the same object, unescaped.
    pub(crate) duplicate_key: Option<String>,
}

/// One open array or object.
struct Frame {
    /// Keys seen so far; `None` for arrays.
    keys: Option<HashSet<String>>,
    /// In an object: the next string is a key (after `{` or `,`), not a value.
    expect_key: bool,
}

/// Scans `text`, failing fast with [`ProtocolError::TooDeep`] once more than `max_depth`
/// arrays/objects are open at the same time. Iterative: uses no stack proportional to depth.
pub(crate) fn scan(text: &str, max_depth: usize) -> Result<ScanReport, ProtocolError> {
    let bytes = text.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut report = ScanReport::default();
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        match byte {
            b'{' | b'[' => {
                if stack.len() >= max_depth {
                    return Err(ProtocolError::TooDeep { limit: max_depth });
                }
                let keys = (byte == b'{').then(HashSet::new);
                stack.push(Frame { keys, expect_key: true });
                i += 1;
            }
            b'}' | b']' => {
                stack.pop();
                i += 1;
            }
            b',' => {
                if let Some(frame) = stack.last_mut() {
                    frame.expect_key = true;
                }
                i += 1;
            }
            b'"' => {
                let (end, has_escape) = string_end(bytes, i + 1);
                if let Some(frame) = stack.last_mut()
                    && frame.expect_key
                    && let Some(keys) = frame.keys.as_mut()
                {
                    frame.expect_key = false;
                    if report.duplicate_key.is_none() {
                        let raw = text.get(i + 1..end).unwrap_or_default();
                        let key = if has_escape { unescape(raw) } else { raw.to_owned() };
                        if let Some(key) = keys.replace(key) {
                            report.duplicate_key = Some(key);
                        }
                    }
                }
                // Skip the closing quote (or run off the end of an unterminated string).
                i = end + 1;
            }
            _ => i += 1,
        }
    }
    Ok(report)
}

/// Index of the quote closing the string whose contents start at `start` (or the input's
/// length if it is unterminated), and whether the contents contain a backslash escape.
fn string_end(bytes: &[u8], start: usize) -> (usize, bool) {
    let mut j = start;
    let mut has_escape = false;
    while let Some(&byte) = bytes.get(j) {
        match byte {
            b'"' => return (j, has_escape),
            b'\\' => {
                has_escape = true;
                j += 2;
            }
            _ => j += 1,
        }
    }
    (bytes.len(), has_escape)
}

/// Decodes JSON string escapes, so `"a"` and `"\u0061"` are recognised as the same key.
/// Invalid escapes decode to U+FFFD: such text is rejected by the parser anyway.
fn unescape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let decoded = match chars.next() {
            Some('"') => '"',
            Some('\\') => '\\',
            Some('/') => '/',
            Some('b') => '\u{8}',
            Some('f') => '\u{c}',
            Some('n') => '\n',
            Some('r') => '\r',
            Some('t') => '\t',
            Some('u') => decode_unicode_escape(&mut chars),
            _ => char::REPLACEMENT_CHARACTER,
        };
        out.push(decoded);
    }
    out
}

/// Decodes the `XXXX` of a `\uXXXX` escape, joining a UTF-16 surrogate pair if one follows.
fn decode_unicode_escape(chars: &mut std::str::Chars<'_>) -> char {
    let Some(first) = hex4(chars) else { return char::REPLACEMENT_CHARACTER };
    if (0xD800..0xDC00).contains(&first) {
        let mut lookahead = chars.clone();
        if lookahead.next() == Some('\\')
            && lookahead.next() == Some('u')
            && let Some(second) = hex4(&mut lookahead)
            && (0xDC00..0xE000).contains(&second)
        {
            *chars = lookahead;
            let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
            return char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER);
        }
        return char::REPLACEMENT_CHARACTER;
    }
    char::from_u32(first).unwrap_or(char::REPLACEMENT_CHARACTER)
}

fn hex4(chars: &mut std::str::Chars<'_>) -> Option<u32> {
    let mut value = 0;
    for _ in 0..4 {
        value = value * 16 + chars.next()?.to_digit(16)?;
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn dup(text: &str) -> Option<String> {
        scan(text, 64).unwrap().duplicate_key
    }

    #[test]
    fn brackets_inside_strings_do_not_count_towards_depth() {
        assert!(scan(r#"{"a":"[[[[[[[[{{{{{{"}"#, 2).is_ok());
        assert!(scan(r#"["\"[[[[[[", "\\"]"#, 1).is_ok());
    }

    #[test]
    fn depth_is_the_number_of_open_containers() {
        assert!(scan("[[]]", 2).is_ok());
        assert_eq!(scan("[[[]]]", 2), Err(ProtocolError::TooDeep { limit: 2 }));
        assert!(scan("[][][]", 1).is_ok());
        assert!(scan("42", 0).is_ok());
    }

    #[test]
    fn duplicate_keys_are_found_even_when_escaped_differently() {
        assert_eq!(dup(r#"{"a":1,"a":2}"#), Some("a".into()));
        assert_eq!(dup(r#"{"a":1,"\u0061":2}"#), Some("a".into()));
        assert_eq!(dup(r#"{"\ud83d\ude00":1,"😀":2}"#), Some("😀".into()));
    }

    #[test]
    fn equal_keys_in_different_objects_or_values_are_not_duplicates() {
        assert_eq!(dup(r#"{"a":{"a":1},"b":[{"a":1},{"a":2}]}"#), None);
        assert_eq!(dup(r#"{"a":"a","b":"a"}"#), None);
    }

    #[test]
    fn unterminated_input_does_not_panic() {
        for text in ["\"", "{\"a", "{\"a\\", "[\"\\u12", "{\"\\ud800\\u", "}}]]", "{\"a\":1,\"a"] {
            let _ = scan(text, 4);
        }
    }
}
