//! Rendering a calendar tool's result: an agenda when the result carries
//! `structuredContent.events`, its plain text content otherwise.
//!
//! An event is an object with `start` and `end` (`YYYY-MM-DDTHH:MM`, or ISO 8601 with
//! seconds and a zone), `title` (or `summary`), and optionally `description` and `id`
//! (or `uid`); other fields are ignored. The events come from `structuredContent.events`,
//! or from a text block that is a JSON array of them (the CalDAV servers' shape). Each event
//! becomes one line: `Tue 2026-12-01 10:00–11:00  Team sync — Weekly planning  [evt-2]`.

use serde_json::Value;

use crate::{clean, when};

/// The marker that ends truncated output.
pub const TRUNCATED: &str = "\n[... output truncated by the formatter]";
/// Most events listed; the rest are counted.
pub const MAX_EVENTS: usize = 200;
/// Longest title shown, in characters.
pub const MAX_TITLE_CHARS: usize = 120;
/// Longest description shown, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 200;
/// Longest id shown, in characters.
pub const MAX_ID_CHARS: usize = 40;

/// What the formatter is given: the raw parts of one tool result.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// The tool's name as the agent sees it (`calendar__calendar_query`).
    pub tool_name: &'a str,
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
pub fn render(input: Input<'_>) -> Result<String, RenderError> {
    let content: Vec<Value> = match serde_json::from_str(input.content) {
        Ok(Value::Array(blocks)) => blocks,
        Ok(_) => return Err(RenderError::InvalidInput("content is not a JSON array".into())),
        Err(e) => return Err(RenderError::InvalidInput(format!("content is not JSON: {e}"))),
    };
    let structured: Option<Value> = input
        .structured
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| RenderError::InvalidInput(format!("structuredContent is not JSON: {e}")))?;
    let listed = listed_events(&content);
    let events = structured.as_ref().and_then(|s| s.get("events")).and_then(Value::as_array).or(listed.as_ref());
    let text = match events {
        Some(events) if !input.is_error => agenda(input.tool_name, events),
        _ => plain(&content, input.is_error),
    };
    Ok(bound(text, input.max_output_bytes))
}

/// The events of a result whose one text block is a JSON array of events, as CalDAV MCP
/// servers answer (`[{"uid", "summary", "start", "end", "description"}, ...]`): every
/// entry an object with a `start` and a `summary` or `title`, put in order of `start`.
/// Anything else is not an agenda, and is shown as text.
fn listed_events(content: &[Value]) -> Option<Vec<Value>> {
    let [block] = content else { return None };
    let text = block.get("text").and_then(Value::as_str)?;
    let Ok(Value::Array(entries)) = serde_json::from_str::<Value>(text.trim()) else { return None };
    let event = |e: &Value| e.get("start").is_some() && (e.get("summary").is_some() || e.get("title").is_some());
    if !entries.iter().all(event) {
        return None;
    }
    // Servers list them in storage order; an agenda reads in time order.
    let mut entries = entries;
    entries.sort_by(|a, b| a["start"].as_str().unwrap_or("").cmp(b["start"].as_str().unwrap_or("")));
    Some(entries)
}

/// One line per event, under a line saying what they are.
fn agenda(tool_name: &str, events: &[Value]) -> String {
    let header = match events.len() {
        0 => return "No events.".to_owned(),
        _ if tool_name.ends_with("calendar_create") => "Created:".to_owned(),
        _ if tool_name.ends_with("calendar_delete") => "Deleted:".to_owned(),
        1 => "1 event:".to_owned(),
        n => format!("{n} events:"),
    };
    let mut text = header;
    for event in events.iter().take(MAX_EVENTS) {
        text.push('\n');
        text.push_str(&event_line(event));
    }
    if events.len() > MAX_EVENTS {
        text.push_str(&format!("\n… and {} more events (narrow the query to see them)", events.len() - MAX_EVENTS));
    }
    text
}

/// `<span>  <title> — <description>  [<id>]`.
fn event_line(event: &Value) -> String {
    if !event.is_object() {
        return "(an entry that is not an event)".to_owned();
    }
    let field = |key: &str| event.get(key).and_then(Value::as_str).unwrap_or("");
    // `title` and `id`, or iCalendar's `summary` and `uid` as CalDAV servers name them.
    let either = |key: &str, other: &str| if field(key).is_empty() { field(other) } else { field(key) };
    let mut line = when::span(field("start"), field("end"));
    let title = clean::line(either("title", "summary"), MAX_TITLE_CHARS);
    line.push_str("  ");
    line.push_str(if title.is_empty() { "(untitled)" } else { &title });
    let description = clean::line(field("description"), MAX_DESCRIPTION_CHARS);
    if !description.is_empty() {
        line.push_str(" — ");
        line.push_str(&description);
    }
    let id = clean::line(either("id", "uid"), MAX_ID_CHARS);
    if !id.is_empty() {
        line.push_str(&format!("  [{id}]"));
    }
    line
}

/// The text blocks of `content`, in order; other blocks as one placeholder line each.
fn plain(content: &[Value], is_error: bool) -> String {
    let mut lines: Vec<String> = Vec::new();
    if is_error {
        lines.push("The tool reported an error:".into());
    }
    for block in content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => lines.push(clean::text(block.get("text").and_then(Value::as_str).unwrap_or(""))),
            Some(kind) => lines.push(format!("[{} content not shown]", clean::line(kind, 40))),
            None => lines.push("[content block without a type, not shown]".into()),
        }
    }
    if lines.is_empty() {
        lines.push("(the result has no content)".into());
    }
    lines.join("\n")
}

/// `text` within `max` bytes: cut on a character boundary, with [`TRUNCATED`]
/// at the end when it fits.
fn bound(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let marker = if max >= TRUNCATED.len() { TRUNCATED } else { "" };
    let mut end = max - marker.len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(marker);
    text
}

#[cfg(test)]
mod tests;
