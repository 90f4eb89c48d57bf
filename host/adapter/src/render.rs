//! From a provider's result to the text a model reads: the formatter component renders
//! it in the sandbox, and the host only checks the declared output schema.
//!
//! The host never renders untrusted content itself. When the formatter fails (a trap,
//! the deadline, the memory or output cap, a format error, a busy pool), the model gets
//! [`WITHHELD`] and the details go to the logs: the call did run, so the model is told
//! its result exists but cannot be shown.

use std::sync::Arc;

use jsonschema::Validator;
use serde_json::Value;
use wasmgate_core::ToolResult;
use wasmgate_protocol::CallToolResult;
use wasmgate_sandbox::{FormatRequest, Formatter};

use crate::schema;

/// What the model reads when a result could not be rendered safely.
pub const WITHHELD: &str = "result withheld: the tool ran, but its result could not be rendered safely";

/// Prepended when `structuredContent` does not match the tool's `outputSchema`.
pub const SCHEMA_MISMATCH: &str = "note: this result does not match the output schema the tool declared";

/// Where a result came from, for the formatter and the logs.
#[derive(Debug, Clone, Copy)]
pub struct Origin<'a> {
    /// The provider's name.
    pub provider: &'a str,
    /// The tool's name as the agent sees it.
    pub tool: &'a str,
}

/// Renders `result` with `formatter`; checks `structuredContent` against `output`.
pub async fn render(
    origin: Origin<'_>,
    formatter: &Arc<Formatter>,
    output: Option<&Validator>,
    result: &CallToolResult,
) -> ToolResult {
    let mismatch = output.filter(|_| !result.is_error).and_then(|validator| {
        let problem = match &result.structured_content {
            Some(structured) => schema::check(validator, structured).err().map(|v| v.to_string()),
            None => Some("no structuredContent although the tool declares an outputSchema".to_owned()),
        };
        problem.inspect(|problem| {
            tracing::warn!(provider = origin.provider, tool = origin.tool, %problem, "result does not match outputSchema");
        })
    });
    let content = Value::Array(result.content.iter().map(|block| block.raw().clone()).collect());
    let request = FormatRequest {
        tool_name: origin.tool.to_owned(),
        provider: origin.provider.to_owned(),
        content: content.to_string(),
        structured_content: result.structured_content.as_ref().map(Value::to_string),
        is_error: result.is_error,
    };
    match format(formatter, request).await {
        Ok(text) => {
            let content = if mismatch.is_some() { format!("{SCHEMA_MISMATCH}\n{text}") } else { text };
            let structured = result.structured_content.clone().map(Box::new);
            ToolResult { content, is_error: result.is_error, attachments: Vec::new(), structured }
        }
        Err(why) => {
            tracing::warn!(
                provider = origin.provider,
                tool = origin.tool,
                formatter = formatter.name(),
                %why,
                "result withheld: the formatter failed"
            );
            ToolResult::error(WITHHELD)
        }
    }
}

/// Runs the formatter on the calling task ([`Formatter::format_async`]): the guest
/// runs on a fiber that yields at every epoch tick, so formatting never holds the
/// thread for long, and no handoff to another thread (two wake-ups, which on a small
/// machine cost more than formatting a small result) is paid.
async fn format(formatter: &Arc<Formatter>, request: FormatRequest) -> Result<String, String> {
    let started = std::time::Instant::now();
    let span = tracing::info_span!(target: wasmgate_guard::TRACE_TARGET, "format");
    let formatted = tracing::Instrument::instrument(formatter.format_async(request), span)
        .await
        .map_err(|e| wasmgate_core::report(&e));
    // Beside the guard's stages (the facade's: kept only when the host records).
    metrics::histogram!("wasmgate_stage_duration_seconds", "stage" => "format").record(started.elapsed());
    formatted
}
