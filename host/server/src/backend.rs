//! [`Backend`]: what the server serves. The server knows nothing else about tools.
//!
//! The policy, approval, sandbox and audit pipeline sits behind this trait, so the
//! server stays a protocol face: it lists what the backend lists, calls what the
//! backend calls, and announces what the backend says changed.
//!
//! Tools are required; resources, resource templates, prompts and completion are optional
//! ([`Offers`], `wasmgate-core`'s, like the answers' types). A backend that does not
//! offer them keeps the default methods, and the server neither announces the capability
//! nor answers the methods (-32601). What a backend returns for them (resource entries,
//! contents, prompt messages) is sent as is: cleaning and framing untrusted text is the
//! backend's job, as it is for tool results.

use serde_json::{Map, Value};
use tokio::sync::watch;
use wasmgate_core::{
    BoxFuture, CancellationToken, CompleteParams, Completion, Offers, Prompt, Refusal, ResourceWatch, ToolError,
    ToolResult, ToolSpec,
};
use wasmgate_protocol::server::GetPromptParams;

/// The tools a server offers, and how to run them.
pub trait Backend: Send + Sync + 'static {
    /// The tools as they are now. Asked on every `tools/list`, so keep it cheap.
    fn tools(&self) -> BoxFuture<'_, Vec<ToolSpec>>;

    /// Runs one call. `cancel` fires when the client cancels (`notifications/cancelled`,
    /// or a closed 2026-07-28 HTTP stream) or when the server shuts down and the grace
    /// period is over; the call should then stop and return
    /// [`ToolError::cancelled`](wasmgate_core::ToolError::cancelled).
    fn call(
        &self,
        name: String,
        arguments: Map<String, Value>,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<ToolResult, CallFailure>>;

    /// The tool named `name`, if served. Asked on the hot path of a call (the
    /// `Mcp-Param` header check), so a backend with a costly [`tools`](Self::tools)
    /// should answer from what it served last.
    fn tool(&self, name: &str) -> BoxFuture<'_, Option<ToolSpec>> {
        let name = name.to_owned();
        Box::pin(async move { self.tools().await.into_iter().find(|t| t.name == name) })
    }

    /// A counter that moves whenever the tool list changes. The server announces each
    /// move to its clients (`notifications/tools/list_changed`).
    fn tool_changes(&self) -> watch::Receiver<u64>;

    /// A counter that moves whenever the resource list may have changed, if the backend
    /// reports such changes (announced as `resources.listChanged`). Default: none.
    fn resource_changes(&self) -> Option<watch::Receiver<u64>> {
        None
    }

    /// The same for the prompt list (`prompts.listChanged`). Default: none.
    fn prompt_changes(&self) -> Option<watch::Receiver<u64>> {
        None
    }

    /// Why the backend should not be sent calls now, if anything (`/readyz` answers 503
    /// while this is not empty). Default: always ready.
    fn unready(&self) -> Vec<String> {
        Vec::new()
    }

    /// What the backend offers besides tools. Default: nothing.
    fn offers(&self) -> Offers {
        Offers::default()
    }

    /// The `Resource` entries of `resources/list`, whole (the server pages them).
    fn resources(&self) -> BoxFuture<'_, Result<Vec<Value>, Refusal>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    /// The `ResourceTemplate` entries of `resources/templates/list`, whole.
    fn resource_templates(&self) -> BoxFuture<'_, Result<Vec<Value>, Refusal>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    /// The `contents` of `resources/read` for `uri`.
    fn read_resource(&self, uri: String, cancel: CancellationToken) -> BoxFuture<'_, Result<Vec<Value>, Refusal>> {
        let _ = cancel;
        Box::pin(std::future::ready(Err(Refusal::ResourceNotFound(uri))))
    }

    /// Follows changes to the content of the resource at `uri` (`resources/subscribe`),
    /// until the watch is dropped. Asked only when [`Offers::subscriptions`] is set.
    /// Default: refused.
    fn watch_resource(&self, uri: String) -> BoxFuture<'_, Result<ResourceWatch, Refusal>> {
        let refused = Refusal::InvalidParams(format!("changes to {uri} cannot be followed"));
        Box::pin(std::future::ready(Err(refused)))
    }

    /// The `Prompt` entries of `prompts/list`, whole.
    fn prompts(&self) -> BoxFuture<'_, Result<Vec<Value>, Refusal>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    /// The answer to `prompts/get`.
    fn get_prompt(&self, params: GetPromptParams, cancel: CancellationToken) -> BoxFuture<'_, Result<Prompt, Refusal>> {
        let _ = cancel;
        Box::pin(std::future::ready(Err(Refusal::InvalidParams(format!("Unknown prompt: {}", params.name)))))
    }

    /// The answer to `completion/complete`.
    fn complete(
        &self,
        params: CompleteParams,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<Completion, Refusal>> {
        let _ = (params, cancel);
        Box::pin(std::future::ready(Ok(Completion::default())))
    }
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
