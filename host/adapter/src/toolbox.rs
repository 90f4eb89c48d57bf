//! [`Toolbox`]: the current tools of several providers, for the agent loop. Any
//! [`ToolSource`] fits: MCP servers ([`McpToolset`] is a toolbox of [`McpProvider`]s),
//! WASM tool components, or a mix of both as `Arc<dyn ToolSource>`.

use std::sync::Arc;

use wasmgate_core::{BoxFuture, Tool, ToolSource, Toolset};

use crate::provider::McpProvider;

/// The tools of several providers, fresh for every model turn.
///
/// The default source type, `Arc<dyn ToolSource>`, mixes kinds of provider:
/// `Toolbox::new(vec![Arc::new(mcp) as Arc<dyn ToolSource>, Arc::new(component)])`.
#[derive(Debug, Clone)]
pub struct Toolbox<S: ToolSource = Arc<dyn ToolSource>> {
    providers: Vec<S>,
    /// Tools offered beside the providers' own (a `read_resource` tool, local tools).
    extra: Vec<Tool>,
}

/// A toolbox of MCP servers only (its providers keep their MCP client).
pub type McpToolset = Toolbox<McpProvider>;

impl<S: ToolSource> Default for Toolbox<S> {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

impl<S: ToolSource> Toolbox<S> {
    /// A toolbox over `providers`.
    #[must_use]
    pub fn new(providers: Vec<S>) -> Self {
        Self { providers, extra: Vec::new() }
    }

    /// Also offers `tools` on every turn.
    #[must_use]
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = Tool>) -> Self {
        self.extra.extend(tools);
        self
    }

    /// The providers.
    #[must_use]
    pub fn providers(&self) -> &[S] {
        &self.providers
    }
}

impl<S: ToolSource> Toolset for Toolbox<S> {
    /// A provider whose list cannot be fetched keeps offering its last tools: calling
    /// one then fails with a [`ToolError`](wasmgate_core::ToolError), which ends the
    /// turn as the failure contract says, instead of tools vanishing silently.
    fn current(&self) -> BoxFuture<'_, Vec<Tool>> {
        Box::pin(async move {
            let mut all = Vec::new();
            for provider in &self.providers {
                let (offers, trouble) = provider.offers().await;
                if let Some(why) = trouble {
                    tracing::warn!(provider = %provider.provider(), %why, "offering the last known tools");
                }
                all.extend(offers.into_iter().map(|offer| offer.tool));
            }
            all.extend(self.extra.iter().cloned());
            all
        })
    }
}
