//! Rendering an MCP tool result as readable plain text.
//!
//! Plain Rust with no WebAssembly in it, so the same code is unit-tested and
//! benchmarked natively and runs inside the sandbox as the default formatter.
//!
//! - Content blocks are rendered in order: text as is (or, when it holds a JSON
//!   object or array, rendered like structured content); images and audio as
//!   one placeholder line with the mime type and size, never the base64;
//!   resource links as name and URI; embedded text resources as their text.
//! - JSON renders as indented `key: value` lines, arrays as `- ` bullets.
//! - Every string from the result is cleaned (see [`crate::sanitize`]).
//! - Output never exceeds the caller's byte budget: it is cut on a character
//!   boundary and ends with a marker saying so.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use serde_json::Value;

use crate::json::{JsonError, render_json};
use crate::out::Out;
pub use crate::out::TRUNCATED;

/// What the formatter is given: the raw parts of one tool result.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// The `content` array as JSON text.
    pub content: &'a str,
    /// `structuredContent` as JSON text, if present.
    pub structured: Option<&'a str>,
    /// The result's `isError` flag.
    pub is_error: bool,
    /// The most bytes of text to return, marker included.
    pub max_output_bytes: usize,
}

/// Why a result could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RenderError {
    /// The content or structured content was not JSON of the expected shape.
    InvalidInput(String),
}

/// Renders one tool result.
///
/// Structured content follows the blocks. Once the output is full the rest of the
/// input is not read, so JSON that is invalid only past the budget is no error.
pub fn render(input: Input<'_>) -> Result<String, RenderError> {
    let content: Vec<Value> = match serde_json::from_str(input.content) {
        Ok(Value::Array(blocks)) => blocks,
        Ok(_) => return Err(RenderError::InvalidInput("content is not a JSON array".into())),
        Err(e) => return Err(RenderError::InvalidInput(format!("content is not JSON: {e}"))),
    };
    let mut out = Out::new(input.max_output_bytes);
    if input.is_error {
        out.line(0, "The tool reported an error:");
    }
    match input.structured {
        // A text block holding JSON is compared with the structured content's
        // rendering, which is made first.
        Some(json) if content.iter().any(|block| json_text(block).is_some()) => {
            rendered_apart(out, &content, json, input.max_output_bytes)
        }
        // Otherwise the structured content is written after the blocks into the same
        // text rather than rendered apart and copied there: in the sandbox a large
        // result's output pages are then touched once, not twice.
        structured => {
            render_blocks(&mut out, &content, None);
            if let Some(json) = structured {
                render_json(&mut out, 0, json).map_err(structured_error)?;
            }
            Ok(out.finish())
        }
    }
}

/// The blocks of `content`, then the structured content `json` rendered before them
/// (so that a text block repeating it can be recognised), appended.
fn rendered_apart(mut out: Out, content: &[Value], json: &str, max_output_bytes: usize) -> Result<String, RenderError> {
    let mut rendered = Out::new(max_output_bytes);
    render_json(&mut rendered, 0, json).map_err(structured_error)?;
    render_blocks(&mut out, content, Some(&rendered));
    out.append(&rendered);
    Ok(out.finish())
}

fn render_blocks(out: &mut Out, content: &[Value], structured: Option<&Out>) {
    for block in content {
        if out.full() {
            break;
        }
        render_block(out, block, structured);
    }
}

fn structured_error(JsonError::Invalid(e): JsonError) -> RenderError {
    RenderError::InvalidInput(format!("structuredContent is not JSON: {e}"))
}

/// The text of a text block that looks like a JSON object or array.
fn json_text(block: &Value) -> Option<&str> {
    let text = str_field(block, "text")?;
    let trimmed = text.trim_start();
    (trimmed.starts_with('{') || trimmed.starts_with('[')).then_some(text)
}

/// Renders a text block holding JSON like structured content. Returns false,
/// leaving `out` as it was, when the text is not JSON after all.
fn render_json_text(out: &mut Out, text: &str, structured: Option<&Out>) -> bool {
    let mark = out.mark();
    if let Some(structured) = structured {
        // Tools that return structured content usually repeat it as a JSON
        // text block for older clients: render it once.
        let mut rendered = Out::new(usize::MAX);
        if render_json(&mut rendered, 0, text).is_ok() && rendered.as_str() == structured.as_str() {
            return true;
        }
    }
    match render_json(out, 0, text) {
        Ok(()) => true,
        Err(_) => {
            out.rewind(mark);
            false
        }
    }
}

fn render_block(out: &mut Out, block: &Value, structured: Option<&Out>) {
    let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "text" => {
            if !json_text(block).is_some_and(|text| render_json_text(out, text, structured)) {
                out.text(0, str_field(block, "text").unwrap_or(""));
            }
        }
        "image" | "audio" => {
            let mime = str_field(block, "mimeType").unwrap_or("unknown type");
            let size = str_field(block, "data").map_or(0, base64_decoded_len);
            out.placeholder(&[kind, ": ", mime, ", ", &human_size(size)]);
        }
        "resource_link" => {
            let name = str_field(block, "name").unwrap_or("unnamed");
            let uri = str_field(block, "uri").unwrap_or("no uri");
            out.placeholder(&["link: ", name, " <", uri, ">"]);
            if let Some(description) = str_field(block, "description") {
                out.text(2, description);
            }
        }
        "resource" => {
            let resource = block.get("resource").unwrap_or(&Value::Null);
            let uri = str_field(resource, "uri").unwrap_or("no uri");
            if let Some(text) = str_field(resource, "text") {
                out.placeholder(&["resource: ", uri]);
                out.text(0, text);
            } else {
                let mime = str_field(resource, "mimeType").unwrap_or("unknown type");
                let size = str_field(resource, "blob").map_or(0, base64_decoded_len);
                out.placeholder(&["resource: ", uri, ", ", mime, ", ", &human_size(size)]);
            }
        }
        _ => out.placeholder(&["unsupported content block: ", kind]),
    }
}

fn str_field<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value.get(key)?.as_str()
}

/// Decoded size of base64 text, without decoding it.
fn base64_decoded_len(data: &str) -> usize {
    let trimmed = data.trim_end_matches('=');
    trimmed.len() / 4 * 3 + (trimmed.len() % 4 * 3 / 4)
}

fn human_size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn render_content(content: &str) -> String {
        render(Input { content, structured: None, is_error: false, max_output_bytes: 1 << 20 }).unwrap()
    }

    #[test]
    fn structured_content_after_the_blocks_is_what_rendering_it_apart_and_appending_gives() {
        let structured = r#"{"date":"2026-12-02","note":"héllo wörld ✓ 🎉","events":[{"title":"Standup","tags":["a","b"]},{"title":"Lunch"}],"empty":{}}"#;
        let contents = [
            "[]",
            r#"[{"type":"text","text":"Your agenda"}]"#,
            r#"[{"type":"text","text":"one ✓"},{"type":"image","mimeType":"image/png","data":"AAAA"}]"#,
        ];
        for content in contents {
            for is_error in [false, true] {
                let whole = Input { content, structured: Some(structured), is_error, max_output_bytes: 1 << 20 };
                let longest = render(whole).unwrap().len() + TRUNCATED.len() + 2;
                for max_output_bytes in 0..=longest {
                    let input = Input { max_output_bytes, ..whole };
                    let blocks: Vec<Value> = serde_json::from_str(content).unwrap();
                    let mut out = Out::new(max_output_bytes);
                    if is_error {
                        out.line(0, "The tool reported an error:");
                    }
                    let apart = rendered_apart(out, &blocks, structured, max_output_bytes);
                    assert_eq!(render(input), apart, "{content}, error {is_error}, {max_output_bytes} bytes");
                }
            }
        }
    }

    #[test]
    fn invalid_structured_content_is_an_error_unless_the_output_is_full_before_it() {
        let content = r#"[{"type":"text","text":"Your agenda"}]"#;
        let input = |max_output_bytes| Input {
            content,
            structured: Some(r#"{"a": 1, "b": }"#),
            is_error: false,
            max_output_bytes,
        };
        let invalid = render(input(1 << 20));
        assert!(
            matches!(&invalid, Err(RenderError::InvalidInput(e)) if e.starts_with("structuredContent is not JSON")),
            "{invalid:?}"
        );
        // The block fills the output: the structured content is not read.
        let full = render(input(TRUNCATED.len() + 5)).unwrap();
        assert_eq!(full, format!("Your {TRUNCATED}"));
    }

    #[test]
    fn text_blocks_are_rendered_in_order() {
        let out = render_content(r#"[{"type":"text","text":"one"},{"type":"text","text":"two\nlines"}]"#);
        assert_eq!(out, "one\ntwo\nlines");
    }

    #[test]
    fn objects_become_key_value_lines_and_arrays_bullets() {
        let structured = r#"{"date":"2026-12-02","events":[{"title":"Standup","start":"09:00","tags":["daily","team"]},{"title":"Lunch"}],"count":2,"done":false,"note":null,"meta":{}}"#;
        let out =
            render(Input { content: "[]", structured: Some(structured), is_error: false, max_output_bytes: 4096 })
                .unwrap();
        let expected = "\
date: 2026-12-02
events:
  - title: Standup
    start: 09:00
    tags:
      - daily
      - team
  - title: Lunch
count: 2
done: false
note: null
meta: (empty)";
        assert_eq!(out, expected);
    }

    #[test]
    fn nested_arrays_and_scalars_render_plainly() {
        assert_eq!(
            render_content(r#"[{"type":"text","text":"[[1,2],[],\"x\"]"}]"#),
            "- (list)\n  - 1\n  - 2\n- (none)\n- x"
        );
        assert_eq!(render_content("[]"), "");
    }

    #[test]
    fn every_kind_of_line_break_keeps_the_indentation() {
        let out = render(Input {
            content: "[]",
            structured: Some(r#"{"note":"a\r\nb\rc\u2028d\n"}"#),
            is_error: false,
            max_output_bytes: 4096,
        })
        .unwrap();
        assert_eq!(out, "note: a\n  b\n  c\n  d\n  ");
    }

    #[test]
    fn json_text_blocks_are_rendered_like_structured_content() {
        let out = render_content(r#"[{"type":"text","text":"{\"temperature\": 21.5, \"unit\": \"C\"}"}]"#);
        assert_eq!(out, "temperature: 21.5\nunit: C");
    }

    #[test]
    fn a_text_block_repeating_the_structured_content_is_rendered_once() {
        let out = render(Input {
            content: r#"[{"type":"text","text":"{\"a\":1}"}]"#,
            structured: Some(r#"{"a":1}"#),
            is_error: false,
            max_output_bytes: 4096,
        })
        .unwrap();
        assert_eq!(out, "a: 1");
    }

    #[test]
    fn media_become_placeholders_without_base64() {
        let out = render_content(
            r#"[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"},
                {"type":"audio","data":"AAAA","mimeType":"audio/wav"}]"#,
        );
        assert_eq!(out, "[image: image/png, 8 B]\n[audio: audio/wav, 3 B]");
        assert!(!out.contains("iVBOR"));
    }

    #[test]
    fn resources_render_as_links_and_text() {
        let out = render_content(
            r#"[{"type":"resource_link","name":"notes","uri":"file:///notes.md"},
                {"type":"resource","resource":{"uri":"mem://a","text":"hello\nworld"}},
                {"type":"resource","resource":{"uri":"mem://b","mimeType":"application/pdf","blob":"AAAAAAAA"}},
                {"type":"mystery"}]"#,
        );
        assert_eq!(
            out,
            "[link: notes <file:///notes.md>]\n[resource: mem://a]\nhello\nworld\n[resource: mem://b, application/pdf, 6 B]\n[unsupported content block: mystery]"
        );
    }

    #[test]
    fn errors_are_labelled() {
        let out = render(Input {
            content: r#"[{"type":"text","text":"no such city"}]"#,
            structured: None,
            is_error: true,
            max_output_bytes: 4096,
        })
        .unwrap();
        assert_eq!(out, "The tool reported an error:\nno such city");
    }

    #[test]
    fn untrusted_strings_are_cleaned_everywhere() {
        let out = render(Input {
            content: r#"[{"type":"text","text":"\u001b[31mred\u202e"}]"#,
            structured: Some(r#"{"k\u200by":"v\u0007al"}"#),
            is_error: false,
            max_output_bytes: 4096,
        })
        .unwrap();
        assert_eq!(out, "red\nky: val");
    }

    #[test]
    fn output_is_bounded_on_a_char_boundary_with_a_marker() {
        let long = format!(r#"[{{"type":"text","text":"{}"}}]"#, "é".repeat(10_000));
        for limit in [0, 1, 50, 101, 4096] {
            let out =
                render(Input { content: &long, structured: None, is_error: false, max_output_bytes: limit }).unwrap();
            assert!(out.len() <= limit.max(TRUNCATED.len()), "limit {limit}: {} bytes", out.len());
            assert!(out.ends_with(TRUNCATED));
        }
    }

    #[test]
    fn invalid_input_is_a_typed_error() {
        let err = |content: &str, structured: Option<&str>| {
            render(Input { content, structured, is_error: false, max_output_bytes: 100 }).unwrap_err()
        };
        assert!(matches!(err("not json", None), RenderError::InvalidInput(m) if m.contains("content is not JSON")));
        assert!(matches!(err("{}", None), RenderError::InvalidInput(m) if m.contains("not a JSON array")));
        assert!(matches!(err("[]", Some("{")), RenderError::InvalidInput(m) if m.contains("structuredContent")));
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(render(Input { content: &deep, structured: None, is_error: false, max_output_bytes: 100 }).is_err());
    }
}
