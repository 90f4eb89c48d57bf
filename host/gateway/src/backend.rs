//! [`GatewayBackend`]: the gateway's guarded tools served to downstream MCP clients.
//!
//! It serves every reviewed tool the policy does not deny outright (a tool denied for
//! every call would only waste a client's context); `ask` tools are served, and their
//! calls are answered by the gateway's approver. Every call runs the whole pipeline of
//! the guarded tool: policy, approval, the upstream call, sandbox formatting, screening
//! and audit. The list is watched: a provider's change notification, or a different
//! list on a later look, moves the counter the server announces to its clients.
//!
//! Resources, resource templates, prompts and completion are the guard's
//! [`GuardedContent`], served as it answers them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use tokio::sync::watch;
use wasmgate_core::{
    BoxFuture, CallContext, CancellationToken, CompleteParams, Completion, ContentSource, Offers, Prompt, Refusal,
    ResourceWatch, Tool, ToolResult, ToolSpec,
};
use wasmgate_guard::{Guard, GuardedContent, GuardedToolset};
use wasmgate_policy::split_prefixed;
use wasmgate_protocol::server::GetPromptParams;
use wasmgate_server::{Backend, CallFailure};

use crate::gateway::Gateway;

/// The gateway as a server [`Backend`].
#[derive(Debug)]
pub struct GatewayBackend {
    toolset: Arc<GuardedToolset>,
    guard: Arc<Guard>,
    /// The tools served at the last look; `None` before the first.
    served: Mutex<Option<Vec<Tool>>>,
    /// Every admitted tool of the last look, served or denied outright: each shown
    /// name's provider and the provider's own name for it.
    admitted: Mutex<HashMap<String, (String, String)>>,
    changes: watch::Sender<u64>,
    /// Moved when a provider says its resource list changed.
    resource_changes: watch::Sender<u64>,
    /// Moved when a provider says its prompt list changed.
    prompt_changes: watch::Sender<u64>,
    content: GuardedContent,
    readiness: crate::gateway::Readiness,
}

impl Gateway {
    /// This gateway as a server backend, watching every MCP provider for list changes.
    #[must_use]
    pub fn backend(&self) -> Arc<GatewayBackend> {
        let backend = Arc::new(GatewayBackend {
            toolset: Arc::clone(&self.toolset),
            guard: Arc::clone(&self.guard),
            served: Mutex::default(),
            admitted: Mutex::default(),
            changes: watch::Sender::new(0),
            resource_changes: watch::Sender::new(0),
            prompt_changes: watch::Sender::new(0),
            content: GuardedContent::new(
                Arc::clone(&self.guard),
                self.mcp_providers().iter().map(|p| Arc::clone(p) as Arc<dyn ContentSource>).collect(),
            ),
            readiness: self.readiness(),
        });
        for provider in self.mcp_providers() {
            backend.follow(&provider);
        }
        backend
    }
}

impl GatewayBackend {
    /// Passes `provider`'s list changes on: its resource and prompt changes as they
    /// come (their lists are read afresh by every request anyway), its tool changes by
    /// looking at the tools again. The tasks end with the provider.
    fn follow(self: &Arc<Self>, provider: &Arc<wasmgate_adapter::Supervised>) {
        let pass_on = |mut moved: watch::Receiver<u64>, counter: fn(&GatewayBackend) -> &watch::Sender<u64>| {
            let watcher = Arc::downgrade(self);
            tokio::spawn(async move {
                while moved.changed().await.is_ok() {
                    let Some(backend) = watcher.upgrade() else { break };
                    counter(&backend).send_modify(|n| *n += 1);
                }
            });
        };
        pass_on(provider.resource_changes(), |b| &b.resource_changes);
        pass_on(provider.prompt_changes(), |b| &b.prompt_changes);
        let mut changes = provider.changes();
        let watcher = Arc::downgrade(self);
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                let Some(backend) = watcher.upgrade() else { break };
                backend.look().await;
            }
        });
    }

    /// Takes one reviewer's decision ([`Gateway::decide`]), tells clients what it changed,
    /// and says what it did: `approved: WHAT` (with `; started PROVIDER` when approved code
    /// started its provider) or `refused as asked: WHAT`.
    ///
    /// # Errors
    ///
    /// [`crate::ReviewError`]: the decision was not taken.
    /// With replicas, the decision is published for the others to follow
    /// ([`follow_reviews`](crate::follow_reviews)).
    pub async fn decide(
        self: &Arc<Self>,
        gateway: &Gateway,
        path: &std::path::Path,
        decision: &crate::Decision,
        reviewer: &str,
    ) -> Result<String, crate::ReviewError> {
        let outcome = self.apply(gateway, path, decision, reviewer).await?;
        if let Some(member) = &gateway.member {
            member.publish_decision(decision, reviewer).await;
        }
        Ok(outcome)
    }

    /// [`GatewayBackend::decide`] without publishing it: another replica's decision.
    pub(crate) async fn apply(
        self: &Arc<Self>,
        gateway: &Gateway,
        path: &std::path::Path,
        decision: &crate::Decision,
        reviewer: &str,
    ) -> Result<String, crate::ReviewError> {
        let decided = gateway.decide(path, decision, reviewer).await?;
        let reloaded = decided.reloaded.unwrap_or_default();
        self.reloaded(gateway, &reloaded).await;
        let what = match &decision.tool {
            Some(tool) => format!("{}__{tool}", decision.provider),
            None => format!("the code of {}", decision.provider),
        };
        Ok(match (decision.approve, reloaded.started.is_empty()) {
            (true, true) => format!("approved: {what}"),
            (true, false) => format!("approved: {what}; started {}", reloaded.started.join(", ")),
            (false, _) => format!("refused as asked: {what}"),
        })
    }

    /// Tells clients what a reload of `gateway` changed: the providers it started are
    /// followed and their resources and prompts served, the served tools are looked at
    /// again (a list-changed notice when they differ), and resource and prompt lists
    /// are announced as changed, since the policy's globs decide them.
    pub async fn reloaded(self: &Arc<Self>, gateway: &Gateway, reloaded: &crate::reload::Reloaded) {
        for provider in &reloaded.servers {
            self.follow(provider);
        }
        let sources = gateway.mcp_providers().into_iter().map(|p| p as Arc<dyn ContentSource>).collect();
        self.content.set_sources(sources);
        self.look().await;
        self.resource_changes.send_modify(|n| *n += 1);
        self.prompt_changes.send_modify(|n| *n += 1);
    }

    /// Whether the policy denies every call of `provider`'s tool `tool`.
    fn always_denied(&self, provider: &str, tool: &str) -> bool {
        self.guard.policy().denies_everyone(provider, tool)
    }

    /// Puts a call of a tool that is not served in the audit log, saying why it is not.
    fn refuse_unoffered(&self, name: &str, arguments: Map<String, Value>) {
        let admitted = self.admitted.lock().ok().and_then(|admitted| admitted.get(name).cloned());
        let withheld = || {
            let withheld = self.toolset.withheld();
            withheld
                .iter()
                .find(|w| w.offer.tool.spec.name == name)
                .map(|w| (w.offer.provider.clone(), w.offer.name.clone()))
        };
        let named = admitted
            .clone()
            .or_else(withheld)
            .or_else(|| split_prefixed(name).map(|(provider, tool)| (provider.to_owned(), tool.to_owned())));
        let (provider, tool, reason) = match named {
            Some((provider, tool)) if admitted.is_some() && self.always_denied(&provider, &tool) => {
                (provider, tool, "not offered: the policy denies every call of this tool")
            }
            Some((provider, tool)) if self.guard.policy().provider(&provider).is_some() => (
                provider,
                tool,
                "not offered: not reviewed, changed since review, shown by two providers, or not listed by the provider",
            ),
            _ => (String::new(), name.to_owned(), "not offered: no provider of that name"),
        };
        self.guard.refused_unoffered(&provider, &tool, Value::Object(arguments), reason);
    }

    /// The served tool `name`: from the last look, or from a fresh one when it is not
    /// there (a tool added since).
    async fn find(&self, name: &str) -> Option<Tool> {
        let known =
            self.served.lock().ok().and_then(|served| served.as_ref()?.iter().find(|t| t.spec.name == name).cloned());
        match known {
            Some(tool) => Some(tool),
            None => self.look().await.into_iter().find(|t| t.spec.name == name),
        }
    }

    /// Asks the toolset again; moves the change counter when the served list differs
    /// from the last look's. The first look changes nothing a client could have seen.
    async fn look(&self) -> Vec<Tool> {
        let offers = self.toolset.refresh_offers().await;
        if let Ok(mut admitted) = self.admitted.lock() {
            *admitted = offers
                .iter()
                .map(|offer| (offer.tool.spec.name.clone(), (offer.provider.clone(), offer.name.clone())))
                .collect();
        }
        let policy = self.guard.policy();
        let tools: Vec<Tool> = offers
            .into_iter()
            .filter(|offer| !policy.denies_everyone(&offer.provider, &offer.name))
            .map(|offer| offer.tool)
            .collect();
        let specs = |tools: &[Tool]| tools.iter().map(|t| t.spec.clone()).collect::<Vec<_>>();
        let changed = match self.served.lock() {
            Ok(mut served) => {
                let changed = served.as_deref().is_some_and(|before| specs(before) != specs(&tools));
                *served = Some(tools.clone());
                changed
            }
            Err(_) => false,
        };
        if changed {
            self.changes.send_modify(|n| *n += 1);
        }
        tools
    }
}

impl Backend for GatewayBackend {
    fn tools(&self) -> BoxFuture<'_, Vec<ToolSpec>> {
        Box::pin(async move {
            let tools = self.look().await;
            // Each caller's list leaves out what the policy denies that caller whatever
            // the arguments (its provider's caller rules, the tool's own).
            let facts = CallContext::caller().map(|caller| caller.facts());
            let policy = self.guard.policy();
            let admitted = self.admitted.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let denied = |name: &str| {
                admitted.get(name).is_some_and(|(provider, own)| policy.denies_caller(provider, own, facts.as_ref()))
            };
            tools.into_iter().filter(|tool| !denied(&tool.spec.name)).map(|t| t.spec).collect()
        })
    }

    fn call(
        &self,
        name: String,
        arguments: Map<String, Value>,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<ToolResult, CallFailure>> {
        Box::pin(async move {
            let Some(tool) = self.find(&name).await else {
                self.refuse_unoffered(&name, arguments);
                return Err(CallFailure::UnknownTool(name));
            };
            Ok(tool.execute(Value::Object(arguments), cancel).await?)
        })
    }

    fn tool_changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn tool(&self, name: &str) -> BoxFuture<'_, Option<ToolSpec>> {
        let name = name.to_owned();
        Box::pin(async move { self.find(&name).await.map(|t| t.spec) })
    }

    fn resource_changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.resource_changes.subscribe())
    }

    fn prompt_changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.prompt_changes.subscribe())
    }

    fn offers(&self) -> Offers {
        Offers { logging: true, ..self.content.offers() }
    }

    fn resources(&self) -> BoxFuture<'_, Result<Vec<Value>, Refusal>> {
        Box::pin(async move { Ok(self.content.resources().await) })
    }

    fn resource_templates(&self) -> BoxFuture<'_, Result<Vec<Value>, Refusal>> {
        Box::pin(async move { Ok(self.content.resource_templates().await) })
    }

    fn read_resource(&self, uri: String, cancel: CancellationToken) -> BoxFuture<'_, Result<Vec<Value>, Refusal>> {
        Box::pin(async move { self.content.read_resource(&uri, cancel).await })
    }

    fn unready(&self) -> Vec<String> {
        self.readiness.unready()
    }

    fn watch_resource(&self, uri: String) -> BoxFuture<'_, Result<ResourceWatch, Refusal>> {
        Box::pin(async move { self.content.watch_resource(&uri).await })
    }

    fn prompts(&self) -> BoxFuture<'_, Result<Vec<Value>, Refusal>> {
        Box::pin(async move { Ok(self.content.prompts().await) })
    }

    fn get_prompt(&self, params: GetPromptParams, cancel: CancellationToken) -> BoxFuture<'_, Result<Prompt, Refusal>> {
        Box::pin(async move { self.content.get_prompt(&params.name, params.arguments, cancel).await })
    }

    fn complete(
        &self,
        params: CompleteParams,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<Completion, Refusal>> {
        Box::pin(async move { self.content.complete(params, cancel).await })
    }
}
