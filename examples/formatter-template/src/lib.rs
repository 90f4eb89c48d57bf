//! A wasmgate formatter component: turns one untrusted tool result into plain text.
//!
//! This one writes a header line naming the tool, then the top-level fields of
//! `structuredContent` as `- key: value` lines, or, without structured content, the text
//! blocks. Replace [`render`] with your own rendering; keep the rules it follows:
//! clean every string that came from the result, and stay within `max_output_bytes`.
//! See docs/FORMATTER.md in the wasmgate repository.

use serde_json::Value;

/// Renders one result. `content` is the result's `content` array and `structured` its
/// `structuredContent` object, both as JSON text, exactly as the provider sent them.
///
/// # Errors
///
/// A message saying what was wrong with the input.
pub fn render(
    tool_name: &str,
    content: &str,
    structured: Option<&str>,
    is_error: bool,
    max_output_bytes: usize,
) -> Result<String, String> {
    let blocks: Vec<Value> = serde_json::from_str(content).map_err(|e| format!("content: {e}"))?;
    let mut lines = vec![format!("{} {}:", if is_error { "Error from" } else { "Result of" }, clean(tool_name))];
    match structured.map(serde_json::from_str::<Value>).transpose().map_err(|e| format!("structured: {e}"))? {
        Some(Value::Object(fields)) => {
            for (key, value) in &fields {
                let value = match value {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                lines.push(format!("- {}: {}", clean(key), clean(&value)));
            }
        }
        _ => {
            for block in &blocks {
                match block.get("text").and_then(Value::as_str) {
                    Some(text) => lines.push(clean(text)),
                    None => lines.push("[non-text content not shown]".to_owned()),
                }
            }
        }
    }
    Ok(bounded(lines.join("\n"), max_output_bytes))
}

/// `text` without escape sequences, without control characters (line breaks and tabs
/// kept) and without the invisible and bidi characters that hide text from a reader:
/// wasmgate's one screening, the `text-safety` crate.
fn clean(text: &str) -> String {
    text_safety::clean(text)
}

/// `text` cut to at most `max` bytes on a character boundary, marked when cut.
fn bounded(mut text: String, max: usize) -> String {
    const MARK: &str = "\n[truncated]";
    if text.len() <= max {
        return text;
    }
    let mut end = max.saturating_sub(MARK.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    if max >= MARK.len() {
        text.push_str(MARK);
    }
    text
}

/// The component's export: the `formatter` world of `wit/sandbox.wit`. The bindings
/// wit-bindgen generates export the function by name, which is unsafe code by the
/// compiler's definition; nothing else here is.
#[cfg(target_arch = "wasm32")]
#[allow(unsafe_code)]
mod component {
    wit_bindgen::generate!({ world: "formatter", path: "wit" });

    use exports::wasmgate::sandbox::format::{FormatError, Guest, ToolResult};

    struct Template;

    impl Guest for Template {
        fn format(result: ToolResult) -> Result<String, FormatError> {
            let max = result.max_output_bytes as usize;
            let structured = result.structured_content.as_deref();
            crate::render(&result.tool_name, &result.content, structured, result.is_error, max)
                .map_err(FormatError::InvalidInput)
        }
    }

    export!(Template);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::render;

    #[test]
    fn structured_fields_become_lines_and_text_is_cleaned() {
        let out = render("w__forecast", "[]", Some(r#"{"city":"Paris\u202e","temp_c":21}"#), false, 1000);
        assert_eq!(out.unwrap(), "Result of w__forecast:\n- city: Paris\n- temp_c: 21");
        let out = render("w__f", r#"[{"type":"text","text":"a\u0007b"},{"type":"image"}]"#, None, true, 1000);
        assert_eq!(out.unwrap(), "Error from w__f:\nab\n[non-text content not shown]");
        let out = render("w__f", r#"[{"type":"text","text":"\u001b[2J\u001b[31mred\u001b[0m"}]"#, None, false, 1000);
        assert_eq!(out.unwrap(), "Result of w__f:\nred");
    }

    #[test]
    fn the_shared_table_holds_for_every_cleaned_string() {
        for case in text_safety::cases::CASES {
            let content = serde_json::json!([{"type": "text", "text": case.input}]).to_string();
            let out = render("t", &content, None, false, 100_000).unwrap();
            assert_eq!(out, format!("Result of t:\n{}", case.clean), "{}", case.name);
        }
    }

    #[test]
    fn output_is_bounded() {
        let long = format!(r#"[{{"type":"text","text":"{}"}}]"#, "é".repeat(1000));
        assert!(render("t", &long, None, false, 100).unwrap().len() <= 100);
    }
}
