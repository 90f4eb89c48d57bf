//! One tool of a WASM tool component as a [`Tool`]: the same path as an MCP tool (the
//! arguments checked against `inputSchema`, the result rendered by a formatter in the
//! sandbox), with the call run in a fresh instance of the component under its grants.
//!
//! | component outcome | what the agent gets |
//! |---|---|
//! | an outcome (`is_error` or not) | `Ok`, rendered by the formatter in the sandbox |
//! | arguments that fail `inputSchema` | `Ok(is_error)` with the validator's message; no call |
//! | `invalid-arguments` from the component | `Ok(is_error)`, its text rendered like a result |
//! | `unknown-tool` | `Ok(is_error)` saying the tool is no longer available |
//! | cancelled | `Err` [`ToolErrorKind::Cancelled`] at once; the call itself ends within its deadline |
//! | `internal` from the component | `Err` [`ToolErrorKind::ExecutionFailed`], its text in the detail |
//! | the sandbox stopped the call (trap, deadline, fuel, memory, output cap, busy, a grant that cannot be given, output that breaks the contract) | `Err` [`ToolErrorKind::ExecutionFailed`], naming the limit or the trap in the detail |
//!
//! Unlike a formatter failure (the call ran, its result is withheld), a sandbox failure
//! here means the call produced no result at all.

use std::sync::Arc;

use jsonschema::Validator;
use serde_json::{Map, Value};
use wasmgate_core::{BoxFuture, CancellationToken, Tool, ToolError, ToolErrorKind, ToolExecute, ToolResult, ToolSpec};
use wasmgate_protocol::{CallToolResult, ProtocolError, parse_call_tool_result};
use wasmgate_sandbox::{
    CallError, CallLimits, CallOutcome, Formatter, Grants, ToolCallError, ToolDefinition, ToolProvider,
};

use crate::contract::{checked_arguments, gone, rejected};
use crate::offer::Withheld;
use crate::render::{Origin, render};
use crate::schema;

/// A loaded tool component and what every call of its tools gets. Clones share the
/// turn their calls take (see [`ComponentRunner::new`]).
#[derive(Debug, Clone)]
pub struct ComponentRunner {
    /// The provider's configured name.
    pub provider: String,
    /// The loaded component.
    pub component: ToolProvider,
    /// What each call may use (directories, the clock); nothing else is granted.
    pub grants: Grants,
    /// The limits of each call.
    pub limits: CallLimits,
    /// Held for the whole of each call when a directory is granted writable: see
    /// [`ComponentRunner::new`].
    one_at_a_time: Option<Arc<tokio::sync::Mutex<()>>>,
}

impl ComponentRunner {
    /// `component` as provider `provider`, its calls getting `grants` under `limits`.
    ///
    /// When `grants` include a writable directory, the component's calls run one at a
    /// time. Each call is a fresh instance that shares no memory with the others, so a
    /// tool that changes a file reads it, changes it and writes it back; WASI has no
    /// file locks, and two such calls at once would lose one's change. Only the host
    /// can order them. Calls with read-only or no directories still run side by side.
    #[must_use]
    pub fn new(provider: String, component: ToolProvider, grants: Grants, limits: CallLimits) -> Self {
        let one_at_a_time = grants.dirs.iter().any(|dir| !dir.read_only).then(|| Arc::new(tokio::sync::Mutex::new(())));
        ComponentRunner { provider, component, grants, limits, one_at_a_time }
    }

    /// Whether calls wait for each other (a directory is granted writable).
    #[must_use]
    pub fn one_call_at_a_time(&self) -> bool {
        self.one_at_a_time.is_some()
    }
}

/// Makes `definition` of `component` a [`Tool`] named `exposed`.
///
/// # Errors
///
/// Why the tool is withheld: an `inputSchema` that cannot be compiled (invalid, or
/// referring to something outside itself).
pub fn component_tool(
    component: &Arc<ComponentRunner>,
    exposed: String,
    definition: &ToolDefinition,
    formatter: Arc<Formatter>,
) -> Result<Tool, Withheld> {
    let input = schema::compile(&definition.input_schema)
        .map_err(|e| Withheld::new(format!("its inputSchema is unusable: {e}")))?;
    let spec = ToolSpec {
        name: exposed.clone(),
        description: definition.description.clone(),
        input_schema: definition.input_schema.clone(),
    };
    let executor = ComponentTool {
        component: Arc::clone(component),
        upstream: definition.name.clone(),
        exposed,
        input,
        formatter,
    };
    Ok(Tool::new(spec, Arc::new(executor)))
}

struct ComponentTool {
    component: Arc<ComponentRunner>,
    /// The component's own name for the tool.
    upstream: String,
    /// The name the agent knows.
    exposed: String,
    input: Validator,
    formatter: Arc<Formatter>,
}

impl std::fmt::Debug for ComponentTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComponentTool")
            .field("provider", &self.component.provider)
            .field("upstream", &self.upstream)
            .finish_non_exhaustive()
    }
}

impl ToolExecute for ComponentTool {
    fn execute(&self, input: Value, cancel: CancellationToken) -> BoxFuture<'_, Result<ToolResult, ToolError>> {
        Box::pin(self.call(input, cancel))
    }
}

impl ComponentTool {
    fn origin(&self) -> Origin<'_> {
        Origin { provider: &self.component.provider, tool: &self.exposed }
    }

    async fn call(&self, input: Value, cancel: CancellationToken) -> Result<ToolResult, ToolError> {
        let arguments = match checked_arguments(&self.input, input) {
            Ok(arguments) => arguments,
            Err(invalid) => return Ok(invalid),
        };
        if cancel.is_cancelled() {
            return Err(ToolError::cancelled().with_provider(&self.component.provider));
        }
        // On this task: the guest yields at every epoch tick until its deadline, so a
        // spinning tool never holds the thread for long. Cancellation drops the call.
        let component = &self.component;
        let arguments = Value::Object(arguments).to_string();
        let call = async {
            // Waiting for the turn counts as part of the call: cancellation ends it too.
            let _turn = match &component.one_at_a_time {
                Some(turn) => Some(turn.lock().await),
                None => None,
            };
            component.component.call_async(&self.upstream, &arguments, &component.grants, &component.limits).await
        };
        let Some(called) = cancel.run_until_cancelled(call).await else {
            return Err(ToolError::cancelled().with_provider(&self.component.provider));
        };
        match called {
            Ok(outcome) => match result_of(outcome) {
                Ok(result) => Ok(render(self.origin(), &self.formatter, None, &result).await),
                Err(malformed) => Err(self.failed(format!("its outcome is not a valid tool result: {malformed}"))),
            },
            Err(ToolCallError::Call(CallError::UnknownTool(_))) => Ok(gone(self.origin())),
            Err(ToolCallError::Call(CallError::InvalidArguments(why))) => {
                Ok(rejected(self.origin(), &self.formatter, &why).await)
            }
            Err(error) => Err(self.failed(wasmgate_core::report(&error)).with_source(error)),
        }
    }

    /// The call produced no result: `detail` (which names the limit, the trap or the
    /// component's own words) is for the host only.
    fn failed(&self, detail: String) -> ToolError {
        tracing::warn!(provider = %self.component.provider, tool = %self.upstream, %detail, "tool call failed");
        let detail = format!("tool {} of {}: {detail}", self.upstream, self.component.provider);
        ToolError::new(ToolErrorKind::ExecutionFailed, detail).with_provider(&self.component.provider)
    }
}

/// A component's outcome as an MCP result, parsed by the same rules as an MCP server's.
fn result_of(outcome: CallOutcome) -> Result<CallToolResult, ProtocolError> {
    let mut raw = Map::new();
    raw.insert("content".into(), outcome.content);
    if let Some(structured) = outcome.structured_content {
        raw.insert("structuredContent".into(), structured);
    }
    raw.insert("isError".into(), Value::Bool(outcome.is_error));
    parse_call_tool_result(&Value::Object(raw))
}
