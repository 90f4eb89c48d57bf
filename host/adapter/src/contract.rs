//! The pieces of the failure contract that every kind of tool shares, whatever runs it
//! (an MCP server or a WASM tool component): the argument check before the call, the
//! answer for a tool that is gone, and a provider's rejection of the arguments.

use std::sync::Arc;

use jsonschema::Validator;
use serde_json::{Map, Value, json};
use wasmgate_core::ToolResult;
use wasmgate_protocol::{CallToolResult, ContentBlock, ResultKind};
use wasmgate_sandbox::Formatter;

use crate::render::{Origin, render};
use crate::schema;

/// The arguments as a JSON object that satisfies `input` (`null` is an empty object).
///
/// # Errors
///
/// The error result the model reads instead, when the arguments are not an object or
/// break the schema (the validator's messages, each naming where): the tool is not called.
pub(crate) fn checked_arguments(input: &Validator, arguments: Value) -> Result<Map<String, Value>, ToolResult> {
    let arguments = match arguments {
        Value::Object(arguments) => arguments,
        Value::Null => Map::new(),
        _ => return Err(ToolResult::error("invalid arguments: expected a JSON object")),
    };
    let arguments = Value::Object(arguments);
    if let Err(problems) = schema::check(input, &arguments) {
        return Err(ToolResult::error(format!("invalid arguments:\n{problems}")));
    }
    match arguments {
        Value::Object(arguments) => Ok(arguments),
        _ => Err(ToolResult::error("invalid arguments")),
    }
}

/// What the model reads when the provider no longer has the tool it called.
pub(crate) fn gone(origin: Origin<'_>) -> ToolResult {
    ToolResult::error(format!("the tool {} is no longer available from {}", origin.tool, origin.provider))
}

/// The provider's rejection of the arguments as an error result, rendered by
/// `formatter` like any result: its `message` is untrusted text.
pub(crate) async fn rejected(origin: Origin<'_>, formatter: &Arc<Formatter>, message: &str) -> ToolResult {
    let block = json!({"type": "text", "text": format!("the provider rejected the arguments: {message}")});
    let result = CallToolResult {
        kind: ResultKind::Complete,
        content: vec![ContentBlock::Text(block.clone())],
        structured_content: None,
        is_error: true,
        raw: json!({"content": [block], "isError": true}),
    };
    render(origin, formatter, None, &result).await
}
