//! Passing a provider's images, audio and embedded resources to an MCP client as they
//! are (its policy's `media = "pass"`), beside the text the formatter rendered.
//!
//! The host does not judge a block itself: the media check component decides, in a
//! fresh sandbox instance per result, which image, audio and binary resource blocks
//! may pass (valid base64, a size cap, bytes of the declared type, the type on the
//! allowed list). The host then copies only the passed blocks' own fields, looked up
//! by index in the result it parsed, so nothing the check did not see can pass.
//! Embedded text resources pass as text attachments, which the guard screens and
//! frames like the result's text. A block refused, or every block when the check
//! fails, is named in a note at the end of the text.

use serde_json::Value;
use wasmgate_core::{Attachment, MediaKind, ToolResult};
use wasmgate_protocol::CallToolResult;
use wasmgate_sandbox::{MediaCheck, MediaCheckRequest};

use crate::render::{Origin, WITHHELD};

/// A provider's media passing: the check and what it lets through.
#[derive(Debug, Clone)]
pub struct MediaPass {
    check: MediaCheck,
    allowed: Vec<String>,
    max_bytes: u32,
}

impl MediaPass {
    /// Passes blocks that `check` approves, of `allowed` types and at most `max_bytes`.
    #[must_use]
    pub fn new(check: MediaCheck, allowed: Vec<String>, max_bytes: u32) -> Self {
        Self { check, allowed, max_bytes }
    }

    /// `rendered` (the text of `result`) with the blocks of `result` that may pass
    /// attached. A withheld rendering gets nothing attached.
    pub(crate) async fn attach(
        &self,
        origin: Origin<'_>,
        result: &CallToolResult,
        mut rendered: ToolResult,
    ) -> ToolResult {
        if rendered.content == WITHHELD {
            return rendered;
        }
        let blocks: Vec<&Value> = result.content.iter().map(|b| b.raw()).collect();
        let mut notes = Vec::new();
        let binary = blocks.iter().any(|b| binary_kind(b).is_some());
        let verdicts = if binary {
            let request = MediaCheckRequest {
                content: Value::Array(blocks.iter().map(|b| (*b).clone()).collect()).to_string(),
                allowed_types: self.allowed.clone(),
                max_bytes: self.max_bytes,
            };
            match self.check.check(request).await {
                Ok(verdicts) => verdicts,
                Err(why) => {
                    let why = wasmgate_core::report(&why);
                    tracing::warn!(provider = origin.provider, tool = origin.tool, %why, "media withheld: the media check failed");
                    notes.push(
                        "its images, audio and binary resources were not passed on: the media check failed".into(),
                    );
                    Vec::new()
                }
            }
        } else {
            Vec::new()
        };
        for (index, block) in blocks.iter().enumerate() {
            if let Some(kind) = binary_kind(block) {
                match verdicts.iter().find(|v| v.index == index) {
                    Some(verdict) => match (&verdict.refusal, passed(kind, block, self.max_bytes)) {
                        (None, Some(attachment)) => rendered.attachments.push(attachment),
                        (Some(why), _) => notes.push(format!("block {index} ({kind}) was not passed on: {why}")),
                        (None, None) => {
                            notes.push(format!("block {index} ({kind}) was not passed on: it is malformed"))
                        }
                    },
                    None if binary && notes.is_empty() => {
                        notes
                            .push(format!("block {index} ({kind}) was not passed on: the media check gave no verdict"));
                    }
                    None => {}
                }
            } else if let Some(attachment) = embedded_text(block) {
                rendered.attachments.push(attachment);
            }
        }
        for note in notes {
            rendered.content.push_str(&format!("\nnote: {note}"));
        }
        rendered
    }
}

/// `image`, `audio` or `resource` (binary) for a block the check judges.
fn binary_kind(block: &Value) -> Option<&'static str> {
    match block.get("type").and_then(Value::as_str) {
        Some("image") => Some("image"),
        Some("audio") => Some("audio"),
        Some("resource") if block.get("resource").and_then(|r| r.get("blob")).is_some() => Some("resource"),
        _ => None,
    }
}

/// The attachment of a block the check passed: its own fields, re-checked for shape
/// and encoded size (the check's word is not taken for what the host copies).
fn passed(kind: &str, block: &Value, max_bytes: u32) -> Option<Attachment> {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    let fits = |data: &str| data.len() / 4 * 3 <= max_bytes as usize + 3;
    match kind {
        "image" | "audio" => {
            let (mime_type, data) = (text(block.get("mimeType"))?, text(block.get("data"))?);
            let kind = if kind == "image" { MediaKind::Image } else { MediaKind::Audio };
            fits(&data).then_some(Attachment::Media { kind, mime_type, data })
        }
        _ => {
            let resource = block.get("resource")?;
            let (uri, mime_type) = (text(resource.get("uri"))?, text(resource.get("mimeType"))?);
            let blob = text(resource.get("blob"))?;
            fits(&blob).then_some(Attachment::Blob { uri, mime_type, blob })
        }
    }
}

/// An embedded text resource as a text attachment.
fn embedded_text(block: &Value) -> Option<Attachment> {
    if block.get("type").and_then(Value::as_str) != Some("resource") {
        return None;
    }
    let resource = block.get("resource")?;
    let uri = resource.get("uri").and_then(Value::as_str)?.to_owned();
    let text = resource.get("text").and_then(Value::as_str)?.to_owned();
    Some(Attachment::Text { uri, text })
}
