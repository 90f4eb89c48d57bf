//! [`run_agent`]: ask the model, run the tools it calls, feed the results back, until
//! it answers without calling a tool.
//!
//! The failure contract (docs/ARCHITECTURE.md) as the loop applies it:
//! * a result with `is_error`, a call the hook denied, and a call to a tool nobody
//!   offers all go back to the model as text, and the loop goes on;
//! * a [`ToolError`] (no result at all) is recorded as that call's stable text, every
//!   later call of the same turn is recorded as skipped, and the error is returned, so
//!   the host decides whether to retry or stop. The conversation stays well formed: every
//!   tool call has exactly one answer.
//!
//! Calls of one turn run one after another, in the model's order: approval prompts and
//! audit records then follow the order the model asked in.

use wasmgate_core::{BoxFuture, CallContext, CancellationToken, Tool, ToolError, ToolSpec, Toolset};

use crate::model::{CallStatus, Message, ModelClient, ModelError, ToolCall};

/// What the loop asks before every call.
pub trait Hooks: Send + Sync {
    /// Decides whether `call` of the tool `spec` may run. The default allows everything.
    fn before_tool_call<'a>(&'a self, call: &'a ToolCall, spec: &'a ToolSpec) -> BoxFuture<'a, HookDecision> {
        let _ = (call, spec);
        Box::pin(async { HookDecision::Allow })
    }
}

/// A `before_tool_call` verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookDecision {
    /// Run the call.
    Allow,
    /// Do not run it; the model reads `reason` as a tool error.
    Deny {
        /// Why, in words fit for the model.
        reason: String,
    },
}

/// Hooks that allow every call.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

impl Hooks for AllowAll {}

/// Bounds on one run.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Model turns at most, a guard against a model that never stops calling tools.
    pub max_turns: usize,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self { max_turns: 32 }
    }
}

/// Why a run ended without a final answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// A call produced no result; the host decides what happens next.
    #[error("tool {} failed: {error}", call.name)]
    Tool {
        /// The call that failed.
        call: ToolCall,
        /// Why (its `Display` is model-safe; details are for the host).
        error: ToolError,
    },
    /// The model failed.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The model kept calling tools for `limit` turns.
    #[error("the model did not finish within {limit} turns")]
    TurnLimit {
        /// [`AgentConfig::max_turns`].
        limit: usize,
    },
    /// The caller cancelled between steps.
    #[error("cancelled by the caller")]
    Cancelled,
}

/// The text recorded for a call that never ran because an earlier one failed.
pub const SKIPPED: &str = "skipped: an earlier tool call in this turn failed";

/// Runs the loop on `conversation` (which should end with the user's message) and
/// returns the model's final text. Every model turn and tool outcome is appended to
/// `conversation`, so the host keeps the transcript whatever happens.
///
/// # Errors
///
/// [`AgentError`]: a tool error, a model error, the turn limit, or cancellation.
pub async fn run_agent(
    model: &dyn ModelClient,
    tools: &dyn Toolset,
    hooks: &dyn Hooks,
    conversation: &mut Vec<Message>,
    config: &AgentConfig,
    cancel: &CancellationToken,
) -> Result<String, AgentError> {
    // One run is one conversation for the guard's data-flow rules, unless the host
    // named one around it.
    let context = CallContext::current();
    let context = CallContext { conversation: Some(context.conversation.unwrap_or_else(next_run)), ..context };
    for _ in 0..config.max_turns {
        if cancel.is_cancelled() {
            return Err(AgentError::Cancelled);
        }
        let offered = tools.current().await;
        let specs: Vec<ToolSpec> = offered.iter().map(|t| t.spec.clone()).collect();
        let turn =
            cancel.run_until_cancelled(model.respond(conversation, &specs)).await.ok_or(AgentError::Cancelled)??;
        conversation.push(Message::Assistant(turn.clone()));
        if turn.tool_calls.is_empty() {
            return Ok(turn.text);
        }
        let mut calls = turn.tool_calls.into_iter();
        while let Some(call) = calls.next() {
            let outcome = CallContext::scope(context.clone(), run_call(&offered, hooks, &call, cancel)).await;
            match outcome {
                Ok((content, is_error, status)) => {
                    conversation.push(Message::ToolResult { call_id: call.id, content, is_error, status });
                }
                Err(error) => {
                    tracing::warn!(tool = %call.name, provider = ?error.provider(), detail = %error.detail(), "tool call failed");
                    conversation.push(Message::ToolResult {
                        call_id: call.id.clone(),
                        content: error.to_string(),
                        is_error: true,
                        status: CallStatus::Failed,
                    });
                    for skipped in calls {
                        conversation.push(Message::ToolResult {
                            call_id: skipped.id,
                            content: SKIPPED.into(),
                            is_error: true,
                            status: CallStatus::Skipped,
                        });
                    }
                    return Err(AgentError::Tool { call, error });
                }
            }
        }
    }
    Err(AgentError::TurnLimit { limit: config.max_turns })
}

/// A conversation name no other run of this process has.
fn next_run() -> std::sync::Arc<str> {
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!("agent run {}", RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)).into()
}

async fn run_call(
    offered: &[Tool],
    hooks: &dyn Hooks,
    call: &ToolCall,
    cancel: &CancellationToken,
) -> Result<(String, bool, CallStatus), ToolError> {
    let Some(tool) = offered.iter().find(|t| t.spec.name == call.name) else {
        return Ok((
            format!("unknown tool: no tool named {:?} is available", call.name),
            true,
            CallStatus::UnknownTool,
        ));
    };
    if cancel.is_cancelled() {
        return Err(ToolError::cancelled());
    }
    if let HookDecision::Deny { reason } = hooks.before_tool_call(call, &tool.spec).await {
        return Ok((format!("denied: {reason}"), true, CallStatus::Denied));
    }
    let result = tool.execute(call.input.clone(), cancel.child_token()).await?;
    Ok((result.content, result.is_error, CallStatus::Completed))
}
