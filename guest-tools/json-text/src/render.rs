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

use serde_json::{Map, Value};

use crate::sanitize::push_clean;

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

/// The marker that ends truncated output.
pub const TRUNCATED: &str = "\n[... output truncated by the formatter]";

/// Renders one tool result.
pub fn render(input: Input<'_>) -> Result<String, RenderError> {
    let content: Value = serde_json::from_str(input.content)
        .map_err(|e| RenderError::InvalidInput(format!("content is not JSON: {e}")))?;
    let Value::Array(blocks) = content else {
        return Err(RenderError::InvalidInput("content is not a JSON array".into()));
    };
    let structured = match input.structured {
        None => None,
        Some(text) => Some(
            serde_json::from_str::<Value>(text)
                .map_err(|e| RenderError::InvalidInput(format!("structuredContent is not JSON: {e}")))?,
        ),
    };

    let mut out = Out::new(input.max_output_bytes);
    if input.is_error {
        out.line(0, "The tool reported an error:");
    }
    for block in &blocks {
        if out.full() {
            break;
        }
        // Tools that return structured content usually repeat it as a JSON text
        // block for older clients; render it once.
        if structured.is_some() && text_block_json(block).as_ref() == structured.as_ref() {
            continue;
        }
        render_block(&mut out, block);
    }
    if let Some(value) = &structured {
        render_value(&mut out, 0, value);
    }
    Ok(out.finish())
}

/// The JSON value inside a text block, if the block is text holding an object or array.
fn text_block_json(block: &Value) -> Option<Value> {
    let text = block.get("text")?.as_str()?;
    if block.get("type")?.as_str()? != "text" {
        return None;
    }
    let trimmed = text.trim_start();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return None;
    }
    serde_json::from_str(text).ok()
}

fn render_block(out: &mut Out, block: &Value) {
    let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "text" => match text_block_json(block) {
            Some(value) => render_value(out, 0, &value),
            None => out.text(0, str_field(block, "text").unwrap_or("")),
        },
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

fn render_value(out: &mut Out, indent: usize, value: &Value) {
    match value {
        Value::Object(map) if map.is_empty() => out.line(indent, "(empty)"),
        Value::Array(items) if items.is_empty() => out.line(indent, "(none)"),
        Value::Object(map) => render_object(out, indent, map),
        Value::Array(items) => {
            for item in items {
                if out.full() {
                    return;
                }
                render_item(out, indent, item);
            }
        }
        scalar => {
            out.start_line(indent);
            out.scalar_inline(indent + 2, scalar);
        }
    }
}

fn render_object(out: &mut Out, indent: usize, map: &Map<String, Value>) {
    for (key, value) in map {
        if out.full() {
            return;
        }
        out.start_line(indent);
        render_entry(out, indent + 2, key, value);
    }
}

/// `key: value` on the current line, or `key:` with the nested value below it.
fn render_entry(out: &mut Out, nested_indent: usize, key: &str, value: &Value) {
    out.clean(key);
    if is_nested(value) {
        out.push(":");
        render_value(out, nested_indent, value);
    } else {
        out.push(": ");
        out.scalar_inline(nested_indent, value);
    }
}

/// One array element: `- ` then the element, its further lines indented under it.
fn render_item(out: &mut Out, indent: usize, item: &Value) {
    out.start_line(indent);
    out.push("- ");
    match item {
        Value::Object(map) if !map.is_empty() => {
            // The first key shares the bullet's line; the rest align under it.
            for (i, (key, value)) in map.iter().enumerate() {
                if out.full() {
                    return;
                }
                if i > 0 {
                    out.start_line(indent + 2);
                }
                render_entry(out, indent + 4, key, value);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            out.push("(list)");
            render_value(out, indent + 2, item);
        }
        scalar => out.scalar_inline(indent + 2, scalar),
    }
}

fn is_nested(value: &Value) -> bool {
    match value {
        Value::Object(map) => !map.is_empty(),
        Value::Array(items) => !items.is_empty(),
        _ => false,
    }
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

/// Splits on every kind of line break (`\n`, `\r\n`, `\r`, NEL, LS, PS), so
/// each continuation line gets its indentation.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.split('\n')
        .flat_map(|line| line.strip_suffix('\r').unwrap_or(line).split(['\r', '\u{85}', '\u{2028}', '\u{2029}']))
}

/// The output buffer: line-oriented, cleaned, and bounded.
struct Out {
    text: String,
    /// Where content must stop so that the truncation marker still fits.
    budget: usize,
    truncated: bool,
}

impl Out {
    fn new(max_bytes: usize) -> Self {
        Out { text: String::new(), budget: max_bytes.saturating_sub(TRUNCATED.len()), truncated: false }
    }

    fn full(&self) -> bool {
        self.truncated
    }

    fn start_line(&mut self, indent: usize) {
        if !self.text.is_empty() {
            self.push("\n");
        }
        for _ in 0..indent / 2 {
            self.push("  ");
        }
    }

    fn line(&mut self, indent: usize, text: &str) {
        self.start_line(indent);
        self.push(text);
    }

    /// A bracketed one-line placeholder built from untrusted parts.
    fn placeholder(&mut self, parts: &[&str]) {
        self.start_line(0);
        self.push("[");
        for part in parts {
            self.clean(part);
        }
        self.push("]");
    }

    /// Untrusted multi-line text, each line indented.
    fn text(&mut self, indent: usize, text: &str) {
        self.start_line(indent);
        self.continue_text(indent, text);
    }

    /// Untrusted text continuing the current line; later lines are indented.
    fn continue_text(&mut self, indent: usize, text: &str) {
        let mut lines = lines(text);
        if let Some(first) = lines.next() {
            self.clean(first);
        }
        for line in lines {
            self.start_line(indent);
            self.clean(line);
        }
    }

    fn scalar_inline(&mut self, continuation_indent: usize, value: &Value) {
        match value {
            Value::String(s) => self.continue_text(continuation_indent, s),
            Value::Null => self.push("null"),
            Value::Bool(b) => self.push(if *b { "true" } else { "false" }),
            Value::Number(n) => self.push(&n.to_string()),
            Value::Object(_) => self.push("(empty)"),
            Value::Array(_) => self.push("(none)"),
        }
    }

    /// Appends cleaned untrusted text, within the budget.
    fn clean(&mut self, text: &str) {
        if self.truncated {
            return;
        }
        push_clean(&mut self.text, text);
        if self.text.len() > self.budget {
            self.cut();
        }
    }

    /// Appends trusted text, within the budget.
    fn push(&mut self, text: &str) {
        if self.truncated {
            return;
        }
        if self.text.len() + text.len() > self.budget {
            self.text.push_str(text);
            self.cut();
        } else {
            self.text.push_str(text);
        }
    }

    /// Cuts the text back to the budget on a char boundary and marks it truncated.
    fn cut(&mut self) {
        let mut end = self.budget.min(self.text.len());
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        self.text.truncate(end);
        self.truncated = true;
    }

    fn finish(mut self) -> String {
        if self.truncated {
            self.text.push_str(TRUNCATED);
        }
        self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render_content(content: &str) -> String {
        render(Input { content, structured: None, is_error: false, max_output_bytes: 1 << 20 }).unwrap()
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
