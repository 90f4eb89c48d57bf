//! The agent loop: ask the model, run the tools it calls, feed the results back, until
//! it answers without calling a tool.
//!
//! The loop knows tools only as `wasmgate-core`'s [`Tool`](wasmgate_core::Tool): it asks
//! a [`Toolset`](wasmgate_core::Toolset) for the tools on offer before each turn, passes
//! each call through its [`Hooks`], and applies the failure contract: a result the model
//! reads and a [`ToolError`](wasmgate_core::ToolError) the host decides about.
//!
//! # Layout
//!
//! * `model`: the conversation ([`Message`], [`ModelTurn`], [`ToolCall`]) and the
//!   [`ModelClient`] trait a real or scripted model implements;
//! * `run`: [`run_agent`], its [`Hooks`] (`before_tool_call`) and [`AgentConfig`];
//! * `script`: [`ScriptedModel`], a model that plays back fixed turns (tests, examples),
//!   and the turns it makes ([`ModelTurn::calls`], [`ModelTurn::answer`]).

mod model;
mod run;
mod script;

pub use model::{CallStatus, Message, ModelClient, ModelError, ModelTurn, ToolCall};
pub use run::{AgentConfig, AgentError, AllowAll, HookDecision, Hooks, SKIPPED, run_agent};
pub use script::{ScriptedModel, Seen};
