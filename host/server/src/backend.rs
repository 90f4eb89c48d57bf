//! [`Backend`]: what the server serves. The server knows nothing else about tools.
//!
//! The policy, approval, sandbox and audit pipeline sits behind this trait, so the
//! server stays a protocol face: it lists what the backend lists, calls what the
//! backend calls, and announces what the backend says changed.

use serde_json::{Map, Value};
use tokio::sync::watch;
use wasmgate_agent::{BoxFuture, CancellationToken, ToolError, ToolResult, ToolSpec};

/// The tools a server offers, and how to run them.
pub trait Backend: Send + Sync + 'static {
    /// The tools as they are now. Asked on every `tools/list`, so keep it cheap.
    fn tools(&self) -> BoxFuture<'_, Vec<ToolSpec>>;

    /// Runs one call. `cancel` fires when the client cancels (`notifications/cancelled`,
    /// or a closed 2026-07-28 HTTP stream) or when the server shuts down and the grace
    /// period is over; the call should then stop and return
    /// [`ToolError::cancelled`](wasmgate_agent::ToolError::cancelled).
    fn call(
        &self,
        name: String,
        arguments: Map<String, Value>,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<ToolResult, CallFailure>>;

    /// A counter that moves whenever the tool list changes. The server announces each
    /// move to its clients (`notifications/tools/list_changed`).
    fn tool_changes(&self) -> watch::Receiver<u64>;
}

/// Why a call produced no tool result.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum CallFailure {
    /// No tool has this name: a JSON-RPC error (-32602 "Unknown tool: NAME").
    #[error("Unknown tool: {0}")]
    UnknownTool(String),
    /// The call failed without a result. The client gets a tool result with
    /// `isError: true` and the error's `Display` text, which is stable and model-safe;
    /// the details (provider, cause) go to the log only.
    #[error(transparent)]
    Tool(#[from] ToolError),
}
