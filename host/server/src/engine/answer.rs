//! The answers that take time: a `tools/list` page and a `tools/call`.

use serde_json::Value;
use wasmgate_agent::CancellationToken;
use wasmgate_protocol::codes::INVALID_PARAMS;
use wasmgate_protocol::server::{CallToolParams, call_tool_text_result, tool_definition, tools_list_result};
use wasmgate_protocol::{CacheHints, Id, ProtocolVersion, error_response, result_response};

use super::Engine;
use crate::backend::CallFailure;

impl Engine {
    /// One page of `tools/list`. The cursor is the offset of the page's first tool, as
    /// text: opaque to the client, and refused (-32602) when it is not one we could
    /// have issued for the current list.
    pub(crate) async fn list(&self, id: &Id, version: ProtocolVersion, cursor: Option<&str>) -> Value {
        let tools = self.backend.tools().await;
        let start = match cursor.map(str::parse::<usize>) {
            None => 0,
            Some(Ok(start)) if start > 0 && start < tools.len() => start,
            Some(_) => return error_response(Some(id), INVALID_PARAMS, "Invalid cursor", None),
        };
        let end = start.saturating_add(self.config.page_size.max(1)).min(tools.len());
        let next = (end < tools.len()).then(|| end.to_string());
        let page = tools[start..end]
            .iter()
            .map(|spec| tool_definition(&spec.name, &spec.description, spec.input_schema.clone()))
            .collect();
        result_response(id, tools_list_result(version, page, next.as_deref(), CacheHints::default()))
    }

    /// Runs a `tools/call` and builds its response; see [`CallFailure`] for the mapping.
    pub(crate) async fn call(
        &self,
        id: &Id,
        version: ProtocolVersion,
        params: CallToolParams,
        cancel: CancellationToken,
    ) -> Value {
        let CallToolParams { name, arguments } = params;
        match self.backend.call(name.clone(), arguments, cancel).await {
            Ok(result) => result_response(id, call_tool_text_result(version, &result.content, result.is_error)),
            Err(CallFailure::UnknownTool(name)) => {
                error_response(Some(id), INVALID_PARAMS, &format!("Unknown tool: {name}"), None)
            }
            Err(CallFailure::Tool(error)) => {
                tracing::warn!(
                    tool = %name,
                    kind = ?error.kind(),
                    provider = error.provider().unwrap_or("-"),
                    detail = error.detail(),
                    "tool call produced no result"
                );
                result_response(id, call_tool_text_result(version, &error.to_string(), true))
            }
        }
    }
}
