//! The conversation and the model's side of the loop: [`Message`], [`ModelTurn`],
//! [`ToolCall`] and the [`ModelClient`] trait a real or scripted model implements.

use serde_json::Value;

use wasmgate_core::{BoxFuture, ToolSpec};

/// One tool call the model asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The model's id for the call, echoed in its result.
    pub id: String,
    /// The tool's name as the model saw it in a [`ToolSpec`].
    pub name: String,
    /// The arguments (untrusted: the model may have been steered by earlier results).
    pub input: Value,
}

/// What the model produced in one turn: text, and the tool calls it wants run.
/// A turn without tool calls ends the loop.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelTurn {
    /// The model's text.
    pub text: String,
    /// The calls to run, in order.
    pub tool_calls: Vec<ToolCall>,
}

/// How a tool call ended, for the host (the model reads only the message's text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallStatus {
    /// The tool ran and returned a result (which may report a failure).
    Completed,
    /// The `before_tool_call` hook denied the call; nothing ran.
    Denied,
    /// No tool of that name is offered; nothing ran.
    UnknownTool,
    /// The call produced no result (a [`ToolError`](wasmgate_core::ToolError)); the turn ended.
    Failed,
    /// An earlier call of the same turn failed, so this one never ran.
    Skipped,
}

/// One entry of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// The user's text.
    User(String),
    /// A model turn, as produced.
    Assistant(ModelTurn),
    /// The outcome of one tool call, answering the call with the same id.
    ToolResult {
        /// The [`ToolCall::id`] this answers.
        call_id: String,
        /// The text the model reads.
        content: String,
        /// Whether it reports a failure.
        is_error: bool,
        /// How the call ended.
        status: CallStatus,
    },
}

/// The model could not produce a turn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("model failed: {0}")]
pub struct ModelError(pub String);

/// A language model, or a script standing in for one.
pub trait ModelClient: Send + Sync {
    /// The next turn, given the whole conversation and the tools on offer now.
    fn respond<'a>(
        &'a self,
        conversation: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<ModelTurn, ModelError>>;
}
