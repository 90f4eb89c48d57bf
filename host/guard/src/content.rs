//! [`GuardedContent`]: resources, resource templates, prompts and completion of the
//! providers that have them, served under the policy. The trust decisions for
//! everything a provider offers besides tools are made here, against the plain
//! [`ContentSource`] every such provider implements (an MCP server, through the
//! adapter).
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
use wasmgate_audit::Event;
use wasmgate_core::{
    CallContext, CancellationToken, CompleteParams, Completion, CompletionRef, CompletionRequest, ContentSource,
    Contents, MAX_COMPLETION_VALUES, Naming, Offers, Prompt, Refusal, ResourceWatch, SourceError,
};
use wasmgate_policy::{InjectionAction, Policy, ProviderPolicy, exposed_name, split_prefixed};

use crate::bridge::bridged;
use crate::guard::{Access, Guard};
use crate::provenance::Source;
use crate::shaping::{READ_SUBJECT, Screening, binary, clean, describe, described, prompt_arguments, titled};

/// Resources, templates, prompts and completion of every content source, guarded.
#[derive(Debug)]
pub struct GuardedContent {
    guard: Arc<Guard>,
    sources: std::sync::RwLock<Vec<Arc<dyn ContentSource>>>,
}

impl GuardedContent {
    /// The content of `sources`, served under `guard`'s policy and audit log.
    #[must_use]
    pub fn new(guard: Arc<Guard>, sources: Vec<Arc<dyn ContentSource>>) -> Self {
        Self { guard, sources: std::sync::RwLock::new(sources) }
    }

    /// Serves `sources` from now on, in place of those it had (a reload that started
    /// or stopped providers).
    pub fn set_sources(&self, sources: Vec<Arc<dyn ContentSource>>) {
        *self.sources.write().unwrap_or_else(std::sync::PoisonError::into_inner) = sources;
    }

    fn sources(&self) -> Vec<Arc<dyn ContentSource>> {
        self.sources.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Whether the policy lets the caller of the request being served use `provider`
    /// at all: `Err` with why not when the provider's caller rules deny it.
    fn for_caller(policy: &Policy, provider: &str) -> Result<(), Refusal> {
        let facts = CallContext::caller().map(|caller| caller.facts());
        match policy.refuses_caller(provider, facts.as_ref()) {
            Some(why) => Err(Refusal::InvalidParams(why)),
            None => Ok(()),
        }
    }

    /// The sources whose policy offers resources (or prompts), with their rules.
    fn offering<'a>(
        sources: &'a [Arc<dyn ContentSource>],
        policy: &'a Policy,
        which: fn(&ProviderPolicy) -> bool,
    ) -> impl Iterator<Item = (&'a Arc<dyn ContentSource>, &'a ProviderPolicy)> {
        sources.iter().filter_map(move |s| policy.provider(s.provider()).filter(|r| which(r)).map(|r| (s, r)))
    }

    /// What the policy lets be served.
    #[must_use]
    pub fn offers(&self) -> Offers {
        let (policy, sources) = (self.guard.policy(), self.sources());
        let resources = Self::offering(&sources, &policy, ProviderPolicy::offers_resources).next().is_some();
        let prompts = Self::offering(&sources, &policy, ProviderPolicy::offers_prompts).next().is_some();
        Offers { resources, prompts, completions: resources || prompts, subscriptions: resources, logging: false }
    }

    /// Whether `provider` is the one provider the policy routes `uri` to.
    fn routes(&self, uri: &str, provider: &str) -> bool {
        self.guard.policy().resource_readers(uri) == [provider]
    }

    /// The `Resource` entries served: the allowed ones of every provider, cleaned.
    pub async fn resources(&self) -> Vec<Value> {
        let mut served = Vec::new();
        let (policy, sources) = (self.guard.policy(), self.sources());
        for (source, rules) in Self::offering(&sources, &policy, ProviderPolicy::offers_resources) {
            let name = source.provider();
            let list = match source.resources().await {
                Ok(list) => list,
                Err(e) => {
                    tracing::warn!(provider = name, error = %e, "resources/list failed: its resources are left out");
                    continue;
                }
            };
            for resource in list.into_iter().filter(|r| rules.allows_resource(&r.uri)) {
                if !self.routes(&resource.uri, name) {
                    tracing::warn!(provider = name, uri = %resource.uri, "resource left out: more than one provider's policy allows its URI");
                    continue;
                }
                let mut entry = Map::new();
                entry.insert("uri".into(), Value::String(resource.uri));
                described(&mut entry, name, &resource.name, resource.title.as_deref(), resource.description.as_deref());
                if let Some(mime) = resource.mime_type {
                    entry.insert("mimeType".into(), Value::String(clean(&mime)));
                }
                if let Some(size) = resource.size {
                    entry.insert("size".into(), Value::from(size));
                }
                served.push(Value::Object(entry));
            }
        }
        served
    }

    /// The `ResourceTemplate` entries served.
    pub async fn resource_templates(&self) -> Vec<Value> {
        let mut served = Vec::new();
        let (policy, sources) = (self.guard.policy(), self.sources());
        for (source, rules) in Self::offering(&sources, &policy, ProviderPolicy::offers_resources) {
            let name = source.provider();
            let list = match source.resource_templates().await {
                Ok(list) => list,
                Err(e) => {
                    tracing::warn!(provider = name, error = %e, "resources/templates/list failed: its templates are left out");
                    continue;
                }
            };
            for template in list.into_iter().filter(|t| rules.allows_resource(&t.uri_template)) {
                let mut entry = Map::new();
                entry.insert("uriTemplate".into(), Value::String(template.uri_template));
                described(&mut entry, name, &template.name, template.title.as_deref(), template.description.as_deref());
                if let Some(mime) = template.mime_type {
                    entry.insert("mimeType".into(), Value::String(clean(&mime)));
                }
                served.push(Value::Object(entry));
            }
        }
        served
    }

    /// The one source the policy routes `uri` to.
    fn reader(&self, uri: &str) -> Result<Arc<dyn ContentSource>, Refusal> {
        if wasmgate_policy::climbs(uri) {
            return Err(Refusal::InvalidParams(format!(
                "{uri} has a `..` path segment: resource globs match URIs as written, so such a URI is never read"
            )));
        }
        let policy = self.guard.policy();
        let readers = policy.resource_readers(uri);
        match readers.as_slice() {
            [one] => {
                Self::for_caller(&policy, one)?;
                let found = self.sources().into_iter().find(|s| s.provider() == *one);
                found.ok_or_else(|| Refusal::ResourceNotFound(uri.into()))
            }
            [] => Err(Refusal::ResourceNotFound(uri.into())),
            many => Err(Refusal::InvalidParams(format!(
                "the policy lets more than one provider ({}) serve {uri}, so none does: narrow their `resources` globs",
                many.join(", ")
            ))),
        }
    }

    /// Follows changes to the resource at `uri`, from the provider the policy lets serve
    /// it, recorded as a `resources/subscribe` access. The updates carry only the URI,
    /// so there is nothing of the provider's to screen.
    ///
    /// # Errors
    ///
    /// A [`Refusal`] for a URI no provider may serve, a provider that does not follow
    /// it, or when the audit log or the provider fails.
    pub async fn watch_resource(&self, uri: &str) -> Result<ResourceWatch, Refusal> {
        let source = self.reader(uri)?;
        let name = source.provider();
        let arguments = json!({ "uri": uri });
        let access =
            self.guard.begin_access(name, "resources/subscribe", arguments, "the policy allows this URI").await;
        let access = access.map_err(|e| Refusal::Failed(e.to_string()))?;
        match source.subscribe(uri).await {
            Ok(watch) => {
                access.end(Event::Finished { is_error: false, flags: Vec::new() });
                Ok(watch)
            }
            Err(e) => {
                let refusal = match &e {
                    SourceError::Unsupported(_) | SourceError::Refused(_) => {
                        Refusal::InvalidParams(format!("the provider {name} does not follow changes to {uri}"))
                    }
                    _ => Refusal::Failed(format!("the provider {name} could not follow the resource")),
                };
                access.end(Event::Failed { error: e.to_string() });
                Err(refusal)
            }
        }
    }

    /// The call context of a read or a prompt under `access` (`what`): the provider's
    /// requests for input while it answers go through the policy, as during a tool call;
    /// its log messages are not asked for.
    fn bridged(&self, access: &Access, provider: &str, what: &str) -> CallContext {
        CallContext { log: None, ..bridged(&self.guard, self.guard.policy(), access.call(), provider, what) }
    }

    /// The `contents` of the resource at `uri`, read from the one provider the policy
    /// routes it to, audited and screened.
    ///
    /// # Errors
    ///
    /// A [`Refusal`] for a URI not served, or when the audit log or the provider fails.
    pub async fn read_resource(&self, uri: &str, cancel: CancellationToken) -> Result<Vec<Value>, Refusal> {
        let source = self.reader(uri)?;
        let name = source.provider();
        let arguments = json!({ "uri": uri });
        let access = self.guard.begin_access(name, "resources/read", arguments, "the policy allows this URI").await;
        let access = access.map_err(|e| Refusal::Failed(e.to_string()))?;
        let context = self.bridged(&access, name, "resources/read");
        let read = match CallContext::scope(context, source.read_resource(uri, cancel)).await {
            Ok(read) => read,
            Err(e) => {
                let refusal = match &e {
                    SourceError::Refused(_) => Refusal::ResourceNotFound(uri.to_owned()),
                    SourceError::InputDeferred(_) => {
                        Refusal::Failed(format!("the provider {name} needs input to read the resource"))
                    }
                    _ => Refusal::Failed(format!("the provider {name} could not read the resource")),
                };
                access.end(Event::Failed { error: e.to_string() });
                return Err(refusal);
            }
        };
        let read_as = Source { provider: name.to_owned(), tool: uri.to_owned(), record: access.record() };
        let mut screened =
            Screening::new(self.action(name), self.guard.screeners(name)).remembering(&self.guard, read_as);
        let mut contents = Vec::new();
        for entry in read {
            if entry.uri() != uri && !self.routes(entry.uri(), name) {
                tracing::warn!(provider = name, uri = %entry.uri(), "contents for a URI this provider may not serve dropped");
                continue;
            }
            contents.push(match entry {
                Contents::Text { uri, text, .. } => {
                    let text = screened.text(name, READ_SUBJECT, text).await;
                    json!({ "uri": uri, "mimeType": "text/plain", "text": text })
                }
                Contents::Blob { raw, .. } => binary(&raw, &["uri", "mimeType", "blob"]),
            });
        }
        let event = screened.event();
        crate::metrics::flags(name, &event);
        access.end(event);
        Ok(contents)
    }

    /// The `Prompt` entries served: the allowed ones of every provider, under their
    /// shown names, cleaned. A name two providers would show is left out for both.
    pub async fn prompts(&self) -> Vec<Value> {
        let mut served: Vec<Value> = Vec::new();
        let (policy, sources) = (self.guard.policy(), self.sources());
        for (source, rules) in Self::offering(&sources, &policy, ProviderPolicy::offers_prompts) {
            let name = source.provider();
            let list = match source.prompts().await {
                Ok(list) => list,
                Err(e) => {
                    tracing::warn!(provider = name, error = %e, "prompts/list failed: its prompts are left out");
                    continue;
                }
            };
            for prompt in list.into_iter().filter(|p| rules.allows_prompt(&p.name)) {
                let Ok(exposed) = exposed_name(name, &prompt.name, source.naming()) else { continue };
                let Some(arguments) = prompt_arguments(&prompt.arguments) else {
                    tracing::warn!(provider = name, "a prompt whose argument names are not plain was left out");
                    continue;
                };
                let mut entry = Map::new();
                entry.insert("name".into(), Value::String(exposed));
                titled(&mut entry, prompt.title.as_deref(), prompt.description.as_deref());
                entry.insert("arguments".into(), Value::Array(arguments));
                served.push(Value::Object(entry));
            }
        }
        let mut seen = std::collections::HashMap::<String, usize>::new();
        for entry in &served {
            *seen.entry(entry["name"].as_str().unwrap_or_default().to_owned()).or_default() += 1;
        }
        served.retain(|entry| {
            let shared = seen.get(entry["name"].as_str().unwrap_or_default()).is_some_and(|n| *n > 1);
            if shared {
                tracing::warn!(prompt = %entry["name"], "two providers offer a prompt of this name: it is left out");
            }
            !shared
        });
        served
    }

    /// The source and its own prompt name for a served prompt name, if the policy
    /// serves it.
    ///
    /// A name shown as is belongs to the one provider of its name whose policy allows
    /// it, asked among those that show names as is; a name more than one could claim is
    /// refused, as it is left out of the list.
    async fn prompt(&self, exposed: &str) -> Option<(Arc<dyn ContentSource>, String)> {
        let mut claims = Vec::new();
        let (policy, sources) = (self.guard.policy(), self.sources());
        if let Some((provider, prompt)) = split_prefixed(exposed)
            && let Some(found) =
                sources.iter().find(|s| s.provider() == provider && s.naming() == Naming::Prefixed).cloned()
            && policy.provider(provider).is_some_and(|rules| rules.allows_prompt(prompt))
        {
            claims.push((found, prompt.to_owned()));
        }
        for source in sources.iter().filter(|s| s.naming() == Naming::AsIs) {
            if !policy.provider(source.provider()).is_some_and(|rules| rules.allows_prompt(exposed)) {
                continue;
            }
            let listed = source.prompts().await.is_ok_and(|list| list.iter().any(|p| p.name == exposed));
            if listed {
                claims.push((Arc::clone(source), exposed.to_owned()));
            }
        }
        match claims.len() {
            1 => claims.pop(),
            _ => None,
        }
    }

    /// The prompt served as `exposed`, filled with `arguments`, audited and screened.
    ///
    /// # Errors
    ///
    /// A [`Refusal`] for a prompt not served, arguments the provider refused, or when
    /// the audit log or the provider fails.
    pub async fn get_prompt(
        &self,
        exposed: &str,
        arguments: Map<String, Value>,
        cancel: CancellationToken,
    ) -> Result<Prompt, Refusal> {
        let unknown = || Refusal::InvalidParams(format!("Unknown prompt: {exposed}"));
        let (source, prompt) = self.prompt(exposed).await.ok_or_else(unknown)?;
        let name = source.provider();
        Self::for_caller(&self.guard.policy(), name)?;
        let audited = json!({ "name": prompt, "arguments": arguments });
        let access = self.guard.begin_access(name, "prompts/get", audited, "the policy allows this prompt").await;
        let access = access.map_err(|e| Refusal::Failed(e.to_string()))?;
        let context = self.bridged(&access, name, "prompts/get");
        let result = match CallContext::scope(context, source.get_prompt(&prompt, arguments, cancel)).await {
            Ok(result) => result,
            Err(e) => {
                let refusal = match &e {
                    SourceError::Refused(_) => {
                        Refusal::InvalidParams(format!("the provider {name} refused the prompt's arguments"))
                    }
                    SourceError::InputDeferred(_) => {
                        Refusal::Failed(format!("the provider {name} needs input to produce the prompt"))
                    }
                    _ => Refusal::Failed(format!("the provider {name} could not produce the prompt")),
                };
                access.end(Event::Failed { error: e.to_string() });
                return Err(refusal);
            }
        };
        let fetched_as =
            Source { provider: name.to_owned(), tool: format!("prompt {prompt}"), record: access.record() };
        let mut screened =
            Screening::new(self.action(name), self.guard.screeners(name)).remembering(&self.guard, fetched_as);
        let mut messages = Vec::new();
        for message in result.messages {
            let content = screened.content(name, message.content).await;
            messages.push(json!({ "role": message.role.as_str(), "content": content }));
        }
        let event = screened.event();
        crate::metrics::flags(name, &event);
        access.end(event);
        Ok(Prompt { description: result.description.as_deref().and_then(describe), messages })
    }

    /// Values for an argument of a served prompt or a template's variable, cleaned.
    ///
    /// # Errors
    ///
    /// A [`Refusal`] for a prompt or template not served, or when the provider fails.
    pub async fn complete(&self, params: CompleteParams, cancel: CancellationToken) -> Result<Completion, Refusal> {
        let (source, reference) = match &params.reference {
            CompletionRef::Prompt(exposed) => {
                let (source, prompt) = self
                    .prompt(exposed)
                    .await
                    .ok_or_else(|| Refusal::InvalidParams(format!("Unknown prompt: {exposed}")))?;
                (source, json!({ "type": "ref/prompt", "name": prompt }))
            }
            CompletionRef::Resource(template) => {
                (self.reader(template)?, json!({ "type": "ref/resource", "uri": template }))
            }
        };
        let request = CompletionRequest {
            reference,
            argument_name: params.argument_name,
            argument_value: params.argument_value,
            context_arguments: params.context_arguments,
        };
        match source.complete(request, cancel).await {
            Ok(result) => {
                let mut values: Vec<String> =
                    result.values.iter().map(|v| clean(v)).filter(|v| !v.is_empty()).collect();
                values.truncate(MAX_COMPLETION_VALUES);
                Ok(Completion { values, total: result.total, has_more: result.has_more })
            }
            Err(SourceError::Unsupported(_)) => Ok(Completion::default()),
            Err(e) => {
                tracing::warn!(provider = source.provider(), error = %e, "completion/complete failed");
                Err(Refusal::Failed(format!("the provider {} could not complete the argument", source.provider())))
            }
        }
    }

    fn action(&self, provider: &str) -> InjectionAction {
        self.guard.policy().provider(provider).map_or(InjectionAction::Flag, |r| r.injection)
    }
}
