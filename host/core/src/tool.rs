//! The one abstraction the agent loop knows: a [`Tool`] is a [`ToolSpec`] and an
//! `execute` that returns text or a [`ToolError`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::error::ToolError;

/// A boxed, sendable future: what [`ToolExecute`] and the loop's traits return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a model is told about a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The name the model calls it by (for MCP tools: prefixed with the provider).
    pub name: String,
    /// What the tool does, in the provider's words (untrusted text, shown to the model).
    pub description: String,
    /// A JSON Schema object for the tool's input.
    pub input_schema: Value,
}

/// What a tool call produced: text for the model, and whether it reports a failure
/// the model should read and react to (a bad argument, a business error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    /// The text the model reads.
    pub content: String,
    /// The tool ran and reports a failure.
    pub is_error: bool,
    /// Blocks that reach an MCP client as they are, beside the text (a provider whose
    /// policy passes media). The agent loop shows its model the text only.
    pub attachments: Vec<Attachment>,
    /// The provider's `structuredContent`, as it sent it: never shown (the text is what
    /// its formatter made of it), kept for the guard's data-flow memory, which remembers
    /// its strings as values.
    pub structured: Option<Box<serde_json::Value>>,
}

impl ToolResult {
    /// A successful result.
    #[must_use]
    pub fn text(content: impl Into<String>) -> Self {
        Self { content: content.into(), is_error: false, attachments: Vec::new(), structured: None }
    }

    /// A failure the model should read.
    #[must_use]
    pub fn error(content: impl Into<String>) -> Self {
        Self { content: content.into(), is_error: true, attachments: Vec::new(), structured: None }
    }
}

/// A block of a result passed on as it is, beside its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attachment {
    /// An image or audio block that passed the media check in the sandbox.
    Media {
        /// Image or audio.
        kind: MediaKind,
        /// Its declared type (checked against its bytes).
        mime_type: String,
        /// Its bytes, base64.
        data: String,
    },
    /// An embedded binary resource that passed the media check.
    Blob {
        /// The resource's URI.
        uri: String,
        /// Its declared type (checked against its bytes).
        mime_type: String,
        /// Its bytes, base64.
        blob: String,
    },
    /// An embedded text resource: untrusted text, screened and framed like the
    /// result's own text before it leaves the gateway.
    Text {
        /// The resource's URI.
        uri: String,
        /// Its text.
        text: String,
    },
}

/// The kind of a media attachment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaKind {
    /// An `image` block.
    Image,
    /// An `audio` block.
    Audio,
}

impl MediaKind {
    /// The MCP block type.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Image => "image",
            Self::Audio => "audio",
        }
    }
}

/// What runs a tool. Implemented by the MCP adapter, by WASM tool components, and by
/// anything a host wants to offer the model.
pub trait ToolExecute: Send + Sync + fmt::Debug {
    /// Runs one call. `cancel` is the caller's: when it fires, stop and return
    /// [`ToolError::cancelled`].
    fn execute(&self, input: Value, cancel: CancellationToken) -> BoxFuture<'_, Result<ToolResult, ToolError>>;
}

/// A tool as the agent loop sees it. Cheap to clone.
#[derive(Clone)]
pub struct Tool {
    /// What the model is told.
    pub spec: ToolSpec,
    executor: Arc<dyn ToolExecute>,
}

impl Tool {
    /// A tool from a spec and what runs it.
    #[must_use]
    pub fn new(spec: ToolSpec, executor: Arc<dyn ToolExecute>) -> Self {
        Self { spec, executor }
    }

    /// A tool whose calls run `f` (for local tools and tests).
    pub fn from_fn<F, Fut>(spec: ToolSpec, f: F) -> Self
    where
        F: Fn(Value, CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolResult, ToolError>> + Send + 'static,
    {
        Self::new(spec, Arc::new(FnTool(f)))
    }

    /// Runs one call.
    ///
    /// # Errors
    ///
    /// A [`ToolError`] when the call produced no result: see the failure contract.
    pub async fn execute(&self, input: Value, cancel: CancellationToken) -> Result<ToolResult, ToolError> {
        self.executor.execute(input, cancel).await
    }
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool").field("spec", &self.spec).field("executor", &self.executor).finish()
    }
}

struct FnTool<F>(F);

impl<F> fmt::Debug for FnTool<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FnTool")
    }
}

impl<F, Fut> ToolExecute for FnTool<F>
where
    F: Fn(Value, CancellationToken) -> Fut + Send + Sync,
    Fut: Future<Output = Result<ToolResult, ToolError>> + Send + 'static,
{
    fn execute(&self, input: Value, cancel: CancellationToken) -> BoxFuture<'_, Result<ToolResult, ToolError>> {
        Box::pin((self.0)(input, cancel))
    }
}
