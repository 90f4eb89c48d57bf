//! Resources, resource templates, prompts and completion, forwarded from the MCP
//! providers to downstream clients under the policy.
//!
//! * **Deny unless allowed.** A provider's resources are served only when its policy
//!   has `resources` globs, and then only the URIs (and templates, read as text) that
//!   match; prompts likewise with `prompts` globs over the provider's own names.
//! * **Names prefixed, URIs kept.** A prompt is served as `<provider>__<name>`, like a
//!   tool. A resource keeps its URI, so `file://` and `https://` URIs stay meaningful to
//!   the client, and its name is prefixed. A read is routed by the policy, not by what
//!   providers claim: to the one provider whose globs allow the URI. A URI two
//!   providers' globs allow is served by neither (a provider cannot answer for
//!   another's URIs), and contents whose URI the provider may not serve are dropped.
//! * **Text cleaned and framed.** Titles and descriptions are sanitized, capped, and
//!   left out when the injection detector flags them. Text contents and prompt
//!   messages are screened like tool results: detection, the provider's `injection`
//!   action (`ask` withholds: nobody is asked about a read), sanitizing and a framed
//!   block. Binary contents, images and audio pass as sent (the transport bounded
//!   their size); content of an unknown type is replaced by a note.
//! * **Audited.** Every read and prompt fetch has the records of a call: `requested`
//!   and `started` durable before it runs, then how it ended.
//! * **One provider failing fails only its part.** A list that fails is left out with a
//!   warning; the others are served.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use wasmgate_adapter::McpProvider;
use wasmgate_agent::{CancellationToken, ToolResult};
use wasmgate_audit::Event;
use wasmgate_client::ClientError;
use wasmgate_guard::Guard;
use wasmgate_guard::screen::{Screened, screen};
use wasmgate_policy::{InjectionAction, ProviderPolicy, detect, prefixed_name, sanitize, split_prefixed};
use wasmgate_protocol::server::{CompleteParams, CompletionRef, GetPromptParams, MAX_COMPLETION_VALUES};
use wasmgate_protocol::{CompleteRequest, PromptArgument, ResourceContents};
use wasmgate_server::{Completion, Offers, Prompt, Refusal};

/// The most characters of a title or description served.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// The frame's subject for resource text and for prompt text.
const READ_SUBJECT: &str = "read_resource";
const PROMPT_SUBJECT: &str = "get_prompt";

/// What the client reads instead of content of a type the gateway does not know.
const UNKNOWN_CONTENT: &str = "[content of an unknown type was withheld by wasmgate]";

/// The forwarding half of the gateway's backend.
#[derive(Debug)]
pub(crate) struct Forwarder {
    guard: Arc<Guard>,
    providers: Vec<McpProvider>,
}

impl Forwarder {
    pub(crate) fn new(guard: Arc<Guard>, providers: Vec<McpProvider>) -> Self {
        Self { guard, providers }
    }

    fn rules(&self, provider: &str) -> Option<&ProviderPolicy> {
        self.guard.policy().provider(provider)
    }

    /// The providers whose policy offers resources (or prompts), with their rules.
    fn offering(&self, which: fn(&ProviderPolicy) -> bool) -> impl Iterator<Item = (&McpProvider, &ProviderPolicy)> {
        self.providers.iter().filter_map(move |p| self.rules(p.name()).filter(|r| which(r)).map(|r| (p, r)))
    }

    pub(crate) fn offers(&self) -> Offers {
        let resources = self.offering(ProviderPolicy::offers_resources).next().is_some();
        let prompts = self.offering(ProviderPolicy::offers_prompts).next().is_some();
        Offers { resources, prompts, completions: resources || prompts }
    }

    /// Whether `provider` is the one provider the policy routes `uri` to.
    fn routes(&self, uri: &str, provider: &str) -> bool {
        self.guard.policy().resource_readers(uri) == [provider]
    }

    pub(crate) async fn resources(&self) -> Vec<Value> {
        let mut served = Vec::new();
        for (provider, rules) in self.offering(ProviderPolicy::offers_resources) {
            let name = provider.name();
            match provider.client().list_resources().await {
                Ok(list) => served.extend(list.into_iter().filter(|r| rules.allows_resource(&r.uri)).filter_map(|r| {
                    let sole = self.routes(&r.uri, name);
                    if !sole {
                        tracing::warn!(provider = name, uri = %r.uri, "resource left out: more than one provider's policy allows its URI");
                    }
                    let mut entry = Map::new();
                    entry.insert("uri".into(), Value::String(r.uri));
                    described(&mut entry, name, &r.name, r.title.as_deref(), r.description.as_deref());
                    if let Some(mime) = r.mime_type {
                        entry.insert("mimeType".into(), Value::String(clean(&mime)));
                    }
                    if let Some(size) = r.size {
                        entry.insert("size".into(), Value::from(size));
                    }
                    sole.then_some(Value::Object(entry))
                })),
                Err(e) => tracing::warn!(provider = name, error = %e, "resources/list failed: its resources are left out"),
            }
        }
        served
    }

    pub(crate) async fn resource_templates(&self) -> Vec<Value> {
        let mut served = Vec::new();
        for (provider, rules) in self.offering(ProviderPolicy::offers_resources) {
            let name = provider.name();
            match provider.client().list_resource_templates().await {
                Ok(list) => {
                    served.extend(list.into_iter().filter(|t| rules.allows_resource(&t.uri_template)).map(|t| {
                        let mut entry = Map::new();
                        entry.insert("uriTemplate".into(), Value::String(t.uri_template));
                        described(&mut entry, name, &t.name, t.title.as_deref(), t.description.as_deref());
                        if let Some(mime) = t.mime_type {
                            entry.insert("mimeType".into(), Value::String(clean(&mime)));
                        }
                        Value::Object(entry)
                    }))
                }
                Err(e) => {
                    tracing::warn!(provider = name, error = %e, "resources/templates/list failed: its templates are left out");
                }
            }
        }
        served
    }

    /// The one MCP provider the policy routes `uri` to.
    fn reader(&self, uri: &str) -> Result<&McpProvider, Refusal> {
        if wasmgate_policy::climbs(uri) {
            return Err(Refusal::InvalidParams(format!(
                "{uri} has a `..` path segment: resource globs match URIs as written, so such a URI is never read"
            )));
        }
        let readers = self.guard.policy().resource_readers(uri);
        match readers.as_slice() {
            [one] => {
                self.providers.iter().find(|p| p.name() == *one).ok_or_else(|| Refusal::ResourceNotFound(uri.into()))
            }
            [] => Err(Refusal::ResourceNotFound(uri.into())),
            many => Err(Refusal::InvalidParams(format!(
                "the policy lets more than one provider ({}) serve {uri}, so none does: narrow their `resources` globs",
                many.join(", ")
            ))),
        }
    }

    pub(crate) async fn read_resource(&self, uri: String, cancel: CancellationToken) -> Result<Vec<Value>, Refusal> {
        let provider = self.reader(&uri)?;
        let name = provider.name();
        let arguments = json!({ "uri": uri });
        let access = self.guard.begin_access(name, "resources/read", arguments, "the policy allows this URI").await;
        let access = access.map_err(|e| Refusal::Failed(e.to_string()))?;
        let result = match provider.client().read_resource(&uri, cancel).await {
            Ok(result) => result,
            Err(e) => {
                let refusal = match &e {
                    ClientError::Rpc { code: -32602 | -32002, .. } => Refusal::ResourceNotFound(uri.clone()),
                    _ => Refusal::Failed(format!("the provider {name} could not read the resource")),
                };
                access.end(Event::Failed { error: e.to_string() });
                return Err(refusal);
            }
        };
        let mut screened = Screening::new(self.action(name));
        let mut contents = Vec::new();
        for entry in result.contents {
            if entry.uri() != uri && !self.routes(entry.uri(), name) {
                tracing::warn!(provider = name, uri = %entry.uri(), "contents for a URI this provider may not serve dropped");
                continue;
            }
            contents.push(match entry {
                ResourceContents::Text { uri, text, .. } => {
                    let text = screened.text(name, READ_SUBJECT, text).await;
                    json!({ "uri": uri, "mimeType": "text/plain", "text": text })
                }
                ResourceContents::Blob { raw, .. } => binary(&raw, &["uri", "mimeType", "blob"]),
            });
        }
        access.end(screened.event());
        Ok(contents)
    }

    pub(crate) async fn prompts(&self) -> Vec<Value> {
        let mut served = Vec::new();
        for (provider, rules) in self.offering(ProviderPolicy::offers_prompts) {
            let name = provider.name();
            match provider.client().list_prompts().await {
                Ok(list) => served.extend(list.into_iter().filter(|p| rules.allows_prompt(&p.name)).filter_map(|p| {
                    let exposed = prefixed_name(name, &p.name).ok()?;
                    let mut entry = Map::new();
                    entry.insert("name".into(), Value::String(exposed));
                    titled(&mut entry, p.title.as_deref(), p.description.as_deref());
                    let Some(arguments) = prompt_arguments(&p.arguments) else {
                        tracing::warn!(provider = name, "a prompt whose argument names are not plain was left out");
                        return None;
                    };
                    entry.insert("arguments".into(), Value::Array(arguments));
                    Some(Value::Object(entry))
                })),
                Err(e) => tracing::warn!(provider = name, error = %e, "prompts/list failed: its prompts are left out"),
            }
        }
        served
    }

    /// The provider and its own prompt name for an exposed prompt name, if the policy
    /// serves it.
    fn prompt(&self, exposed: &str) -> Option<(&McpProvider, String)> {
        let (provider, prompt) = split_prefixed(exposed)?;
        let rules = self.rules(provider)?;
        let found = self.providers.iter().find(|p| p.name() == provider)?;
        rules.allows_prompt(prompt).then(|| (found, prompt.to_owned()))
    }

    pub(crate) async fn get_prompt(
        &self,
        params: GetPromptParams,
        cancel: CancellationToken,
    ) -> Result<Prompt, Refusal> {
        let unknown = || Refusal::InvalidParams(format!("Unknown prompt: {}", params.name));
        let (provider, prompt) = self.prompt(&params.name).ok_or_else(unknown)?;
        let name = provider.name();
        let arguments = json!({ "name": prompt, "arguments": params.arguments });
        let access = self.guard.begin_access(name, "prompts/get", arguments, "the policy allows this prompt").await;
        let access = access.map_err(|e| Refusal::Failed(e.to_string()))?;
        let result = match provider.client().get_prompt(&prompt, params.arguments.clone(), cancel).await {
            Ok(result) => result,
            Err(e) => {
                let refusal = match &e {
                    ClientError::Rpc { code: -32602, .. } => {
                        Refusal::InvalidParams(format!("the provider {name} refused the prompt's arguments"))
                    }
                    _ => Refusal::Failed(format!("the provider {name} could not produce the prompt")),
                };
                access.end(Event::Failed { error: e.to_string() });
                return Err(refusal);
            }
        };
        let mut screened = Screening::new(self.action(name));
        let mut messages = Vec::new();
        for message in result.messages {
            let content = screened.content(name, message.content).await;
            messages.push(json!({ "role": message.role.as_str(), "content": content }));
        }
        access.end(screened.event());
        Ok(Prompt { description: result.description.as_deref().and_then(describe), messages })
    }

    pub(crate) async fn complete(
        &self,
        params: CompleteParams,
        cancel: CancellationToken,
    ) -> Result<Completion, Refusal> {
        let (provider, reference) = match &params.reference {
            CompletionRef::Prompt(exposed) => {
                let (provider, prompt) =
                    self.prompt(exposed).ok_or_else(|| Refusal::InvalidParams(format!("Unknown prompt: {exposed}")))?;
                (provider, json!({ "type": "ref/prompt", "name": prompt }))
            }
            CompletionRef::Resource(template) => {
                (self.reader(template)?, json!({ "type": "ref/resource", "uri": template }))
            }
        };
        let request = CompleteRequest {
            reference,
            argument_name: params.argument_name,
            argument_value: params.argument_value,
            context_arguments: params.context_arguments,
        };
        match provider.client().complete(request, cancel).await {
            Ok(result) => {
                let mut values: Vec<String> =
                    result.values.iter().map(|v| clean(v)).filter(|v| !v.is_empty()).collect();
                values.truncate(MAX_COMPLETION_VALUES);
                Ok(Completion { values, total: result.total, has_more: result.has_more })
            }
            Err(ClientError::Unsupported(_)) => Ok(Completion::default()),
            Err(e) => {
                tracing::warn!(provider = provider.name(), error = %e, "completion/complete failed");
                Err(Refusal::Failed(format!("the provider {} could not complete the argument", provider.name())))
            }
        }
    }

    fn action(&self, provider: &str) -> InjectionAction {
        self.rules(provider).map_or(InjectionAction::Flag, |r| r.injection)
    }
}

/// `text` sanitized (control, escape, invisible and bidi characters removed) and capped.
fn clean(text: &str) -> String {
    sanitize(text).text.chars().take(MAX_DESCRIPTION_CHARS).collect()
}

/// Longest prompt argument name served, in characters.
const MAX_ARGUMENT_NAME_CHARS: usize = 64;

/// A prompt's arguments as served, or `None` when a name is not plain (empty, long, or
/// changed by cleaning). A name cannot be cleaned like a description: the client sends
/// it back to fill the prompt, so the prompt is left out instead.
fn prompt_arguments(arguments: &[PromptArgument]) -> Option<Vec<Value>> {
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
fn describe(text: &str) -> Option<String> {
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
fn described(
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
fn titled(entry: &mut Map<String, Value>, title: Option<&str>, description: Option<&str>) {
    for (key, text) in [("title", title), ("description", description)] {
        if let Some(text) = text.and_then(describe) {
            entry.insert(key.into(), Value::String(text));
        }
    }
}

/// The listed string fields of a binary entry, as sent.
fn binary(raw: &Value, fields: &[&str]) -> Value {
    let mut kept = Map::new();
    for field in fields {
        if let Some(value) = raw.get(*field).filter(|v| v.is_string()) {
            kept.insert((*field).into(), value.clone());
        }
    }
    Value::Object(kept)
}

/// Screens the text of one read or prompt, and sums up what it found for the audit log.
struct Screening {
    action: InjectionAction,
    flags: Vec<String>,
    withheld: bool,
}

impl Screening {
    fn new(action: InjectionAction) -> Self {
        Self { action, flags: Vec::new(), withheld: false }
    }

    /// `text` screened: framed (with a warning when flagged), or the withheld note.
    async fn text(&mut self, provider: &str, subject: &str, text: String) -> String {
        let Screened { result, event } =
            screen(provider, subject, ToolResult::text(text), self.action, |_| std::future::ready(false)).await;
        match event {
            Event::Finished { flags, .. } => self.flags.extend(flags),
            Event::Withheld { flags, .. } => {
                self.withheld = true;
                self.flags.extend(flags);
            }
            _ => {}
        }
        result.content
    }

    /// One content block of a prompt message, screened.
    async fn content(&mut self, provider: &str, block: Value) -> Value {
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
    fn event(self) -> Event {
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
        let raw = json!({"name": name, "description": "d", "required": true});
        PromptArgument { name: name.into(), title: None, description: Some("d".into()), required: true, raw }
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
