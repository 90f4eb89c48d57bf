//! [`ToolsBackend`]: a [`Backend`] over a replaceable set of [`Tool`] values.
//!
//! The simplest backend: whatever runs behind each `Tool` (a local function, the MCP
//! adapter, a policy-wrapped tool) is its own business. Replacing the set moves the
//! change counter, which the server announces.

use std::sync::{Arc, PoisonError, RwLock};

use serde_json::{Map, Value};
use tokio::sync::watch;
use wasmgate_core::{BoxFuture, CancellationToken, Tool, ToolResult, ToolSpec};

use crate::backend::{Backend, CallFailure};

/// Serves a set of [`Tool`]s. Cheap to clone: clones share the set.
#[derive(Debug, Clone)]
pub struct ToolsBackend {
    tools: Arc<RwLock<Vec<Tool>>>,
    changes: Arc<watch::Sender<u64>>,
}

impl ToolsBackend {
    /// A backend serving `tools`.
    #[must_use]
    pub fn new(tools: Vec<Tool>) -> Self {
        Self { tools: Arc::new(RwLock::new(tools)), changes: Arc::new(watch::Sender::new(0)) }
    }

    /// Replaces the set and announces the change.
    pub fn replace(&self, tools: Vec<Tool>) {
        *self.tools.write().unwrap_or_else(PoisonError::into_inner) = tools;
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn find(&self, name: &str) -> Option<Tool> {
        self.tools.read().unwrap_or_else(PoisonError::into_inner).iter().find(|t| t.spec.name == name).cloned()
    }
}

impl Backend for ToolsBackend {
    fn tools(&self) -> BoxFuture<'_, Vec<ToolSpec>> {
        let specs = self.tools.read().unwrap_or_else(PoisonError::into_inner).iter().map(|t| t.spec.clone()).collect();
        Box::pin(std::future::ready(specs))
    }

    fn call(
        &self,
        name: String,
        arguments: Map<String, Value>,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<ToolResult, CallFailure>> {
        Box::pin(async move {
            let tool = self.find(&name).ok_or(CallFailure::UnknownTool(name))?;
            Ok(tool.execute(Value::Object(arguments), cancel).await?)
        })
    }

    fn tool(&self, name: &str) -> BoxFuture<'_, Option<ToolSpec>> {
        Box::pin(std::future::ready(self.find(name).map(|t| t.spec)))
    }

    fn tool_changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}
