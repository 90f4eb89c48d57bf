//! What an agent loop sees of tools, and the loop itself.
//!
//! This crate knows nothing of MCP, HTTP, child processes or WebAssembly: a [`Tool`] is
//! a [`ToolSpec`] and an `execute` that returns a [`ToolResult`] (text for the model) or
//! a [`ToolError`] (no result; its `Display` is a stable, model-safe sentence and the
//! details are for the host). The adapter crate turns MCP tools into these.
//!
//! # Layout
//!
//! * [`tool`]: [`Tool`], [`ToolSpec`], [`ToolResult`], the [`ToolExecute`] trait;
//! * [`context`]: [`CallContext`], what a caller offers a call besides its arguments
//!   (a progress sink, a person to [`Ask`]), carried as a task-local;
//! * [`error`]: [`ToolError`] and its [`ToolErrorKind`];
//! * [`model`]: the conversation ([`Message`]) and the [`ModelClient`] trait;
//! * [`run`]: [`run_agent`], its [`Hooks`] (`before_tool_call`) and the [`Toolset`] it
//!   asks for the current tools before each turn;
//! * [`script`]: [`ScriptedModel`], a model that plays back fixed turns (tests, examples);
//! * [`source`]: [`ToolSource`], what every kind of provider implements, and [`Offer`],
//!   a tool with the definition it was made from (what review pins).

pub mod context;
pub mod error;
pub mod model;
pub mod run;
pub mod script;
pub mod source;
pub mod tool;

pub use context::{
    Answer, Ask, CallContext, Caller, Input, InputRefusal, LogLevel, LogMessage, LogSink, Progress, ProgressSink,
    Resume,
};
pub use error::{ToolError, ToolErrorKind};
pub use model::{CallStatus, Message, ModelClient, ModelError, ModelTurn, ToolCall};
pub use run::{AgentConfig, AgentError, AllowAll, HookDecision, Hooks, SKIPPED, Toolset, run_agent};
pub use script::ScriptedModel;
pub use source::{Offer, ToolSource};
pub use tokio_util::sync::CancellationToken;
pub use tool::{Attachment, BoxFuture, MediaKind, Tool, ToolExecute, ToolResult, ToolSpec};
