//! How what a provider offers besides tools is shaped for a client: titles and
//! descriptions cleaned, capped and left out when they read like instructions; prompt
//! arguments kept only when their names are plain; a resource link kept only when its URI
//! is; binary entries reduced to the fields a client needs; and the text of a read or a
//! prompt screened and framed like a tool result ([`Screening`], which sums up what the
//! screens found for the read's audit record).

use std::sync::Arc;

use serde_json::{Map, Value, json};
use wasmgate_audit::Event;
use wasmgate_core::{PromptArgument, ToolResult};
use wasmgate_policy::{InjectionAction, detect, sanitize};

use crate::guard::Guard;
use crate::provenance::{Marks, Source};
use crate::screen::{Screened, Screener, screen};

/// The most characters of a title or description served.
const MAX_DESCRIPTION_CHARS: usize = 1024;

/// Longest prompt argument name served, in characters.
const MAX_ARGUMENT_NAME_CHARS: usize = 64;

/// The frame's subject for resource text and for prompt text.
pub(crate) const READ_SUBJECT: &str = "read_resource";
pub(crate) const PROMPT_SUBJECT: &str = "get_prompt";

/// What the client reads instead of content of a type the gateway does not know.
pub const UNKNOWN_CONTENT: &str = "[content of an unknown type was withheld by wasmgate]";

/// `text` sanitized (control, escape, invisible and bidi characters removed) and capped.
pub(crate) fn clean(text: &str) -> String {
    sanitize(text).text.chars().take(MAX_DESCRIPTION_CHARS).collect()
}

/// A prompt's arguments as served, or `None` when a name is not plain (empty, long, or
/// changed by cleaning). A name cannot be cleaned like a description: the client sends
/// it back to fill the prompt, so the prompt is left out instead.
pub(crate) fn prompt_arguments(arguments: &[PromptArgument]) -> Option<Vec<Value>> {
    arguments
        .iter()
        .map(|a| {
            let plain = (1..=MAX_ARGUMENT_NAME_CHARS).contains(&a.name.chars().count()) && clean(&a.name) == a.name;
            if !plain {
                return None;
            }
            let mut arg = Map::new();
            arg.insert("name".into(), Value::String(a.name.clone()));
            if let Some(text) = a.description.as_deref().and_then(describe) {
                arg.insert("description".into(), Value::String(text));
            }
            arg.insert("required".into(), Value::Bool(a.required));
            Some(Value::Object(arg))
        })
        .collect()
}

/// A prompt's `resource_link` as served: its name cleaned, and its URI kept only when
/// cleaning would not change it (the client may read it back, so it is not rewritten).
fn resource_link(block: &Value) -> Value {
    let uri = block.get("uri").and_then(Value::as_str).unwrap_or_default();
    if uri.is_empty() || clean(uri) != uri {
        return json!({ "type": "text", "text": UNKNOWN_CONTENT });
    }
    let name = block.get("name").and_then(Value::as_str).map(clean).unwrap_or_default();
    json!({ "type": "resource_link", "uri": uri, "name": name })
}

/// A title or description as served: cleaned, or left out when empty or when it reads
/// like instructions to the model.
pub(crate) fn describe(text: &str) -> Option<String> {
    let text = clean(text);
    if text.trim().is_empty() {
        return None;
    }
    if !detect(&text).is_empty() {
        tracing::warn!("a description that looks like instructions was left out");
        return None;
    }
    Some(text)
}

/// Sets `name` (prefixed by the provider), `title` and `description` of an entry.
pub(crate) fn described(
    entry: &mut Map<String, Value>,
    provider: &str,
    name: &str,
    title: Option<&str>,
    description: Option<&str>,
) {
    entry.insert("name".into(), Value::String(format!("{provider}__{}", clean(name))));
    titled(entry, title, description);
}

/// Sets the `title` and `description` of an entry that pass [`describe`].
pub(crate) fn titled(entry: &mut Map<String, Value>, title: Option<&str>, description: Option<&str>) {
    for (key, text) in [("title", title), ("description", description)] {
        if let Some(text) = text.and_then(describe) {
            entry.insert(key.into(), Value::String(text));
        }
    }
}

/// The listed string fields of a binary entry, as sent.
pub(crate) fn binary(raw: &Value, fields: &[&str]) -> Value {
    let mut kept = Map::new();
    for field in fields {
        if let Some(value) = raw.get(*field).filter(|v| v.is_string()) {
            kept.insert((*field).into(), value.clone());
        }
    }
    Value::Object(kept)
}

/// What the model reads in place of a text whose values the shared store cannot keep.
pub(crate) const UNREMEMBERED: &str =
    "text withheld: the gateway's shared store cannot be reached to remember what it says; try again";

/// Screens the text of one read or prompt, and sums up what it found for the audit log.
pub(crate) struct Screening {
    action: InjectionAction,
    screeners: Vec<Arc<dyn Screener>>,
    flags: Vec<String>,
    withheld: bool,
    /// Where what is shown is remembered for the data-flow rules, and as what.
    memory: Option<(Arc<Guard>, Arc<str>, Source)>,
}

impl Screening {
    pub(crate) fn new(action: InjectionAction, screeners: Vec<Arc<dyn Screener>>) -> Self {
        Self { action, screeners, flags: Vec::new(), withheld: false, memory: None }
    }

    /// The same, remembering in `guard`'s memory, for the conversation of the request
    /// being served, the values of every text it shows, as seen in `source`.
    pub(crate) fn remembering(self, guard: &Arc<Guard>, source: Source) -> Self {
        Self { memory: Some((Arc::clone(guard), Guard::conversation(), source)), ..self }
    }

    /// `text` screened: framed (with a warning when flagged), or the withheld note.
    pub(crate) async fn text(&mut self, provider: &str, subject: &str, text: String) -> String {
        let original = self.memory.is_some().then(|| text.clone());
        let Screened { result, event, marks } =
            screen(provider, subject, ToolResult::text(text), self.action, &self.screeners, |_| {
                std::future::ready(false)
            })
            .await;
        match event {
            Event::Finished { flags, .. } => {
                self.flags.extend(flags);
                if let (Some((guard, conversation, source)), Some(text)) = (&self.memory, original) {
                    let marks = Marks { sequence: guard.policy().starts_sequence(provider, &source.tool), ..marks };
                    let remembered = guard.provenance().remember(conversation, source.clone(), &text, None, marks);
                    // Other replicas must find it before the model can act on it.
                    if let Err(unavailable) = guard.provenance().share(conversation, remembered).await {
                        tracing::warn!(provider, error = %unavailable, "text withheld: what it said cannot be kept");
                        self.withheld = true;
                        return UNREMEMBERED.to_owned();
                    }
                }
            }
            Event::Withheld { flags, .. } => {
                self.withheld = true;
                self.flags.extend(flags);
            }
            _ => {}
        }
        result.content
    }

    /// One content block of a prompt message, screened.
    pub(crate) async fn content(&mut self, provider: &str, block: Value) -> Value {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
        match kind.as_str() {
            "text" => {
                let text = block.get("text").and_then(Value::as_str).unwrap_or_default().to_owned();
                json!({ "type": "text", "text": self.text(provider, PROMPT_SUBJECT, text).await })
            }
            "image" | "audio" => {
                let mut kept = binary(&block, &["type", "data", "mimeType"]);
                kept["type"] = Value::String(kind);
                kept
            }
            "resource" => match block.get("resource") {
                Some(resource) if resource.get("text").is_some_and(Value::is_string) => {
                    let text = resource.get("text").and_then(Value::as_str).unwrap_or_default().to_owned();
                    let uri = resource.get("uri").cloned().unwrap_or(Value::Null);
                    let text = self.text(provider, PROMPT_SUBJECT, text).await;
                    json!({ "type": "resource", "resource": { "uri": uri, "mimeType": "text/plain", "text": text } })
                }
                Some(resource) if resource.get("blob").is_some_and(Value::is_string) => {
                    json!({ "type": "resource", "resource": binary(resource, &["uri", "mimeType", "blob"]) })
                }
                _ => json!({ "type": "text", "text": UNKNOWN_CONTENT }),
            },
            "resource_link" => resource_link(&block),
            _ => json!({ "type": "text", "text": UNKNOWN_CONTENT }),
        }
    }

    /// The audit record of the whole read.
    pub(crate) fn event(self) -> Event {
        let mut flags = self.flags;
        flags.sort_unstable();
        flags.dedup();
        if self.withheld {
            Event::Withheld { reason: "instruction-like content".into(), flags }
        } else {
            Event::Finished { is_error: false, flags }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn argument(name: &str) -> PromptArgument {
        PromptArgument { name: name.into(), title: None, description: Some("d".into()), required: true }
    }

    #[test]
    fn a_prompt_with_an_argument_name_that_is_not_plain_is_left_out() {
        let served = prompt_arguments(&[argument("city"), argument("start_date")]).unwrap();
        assert_eq!(served[1], json!({"name": "start_date", "description": "d", "required": true}));
        for bad in ["", "city\u{202e}", "a\u{1b}[2Jb", "x\u{200b}", &"n".repeat(65)] {
            assert!(prompt_arguments(&[argument("city"), argument(bad)]).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn a_resource_link_keeps_only_a_plain_uri() {
        let link = |uri: &str| resource_link(&json!({"type": "resource_link", "uri": uri, "name": "n\u{202e}"}));
        assert_eq!(
            link("file:///docs/a.md"),
            json!({"type": "resource_link", "uri": "file:///docs/a.md", "name": "n"})
        );
        for bad in ["", "file:///docs/\u{202e}dm.exe", "file:///a\u{1b}[2J"] {
            assert_eq!(link(bad), json!({"type": "text", "text": UNKNOWN_CONTENT}), "{bad:?}");
        }
    }
}
