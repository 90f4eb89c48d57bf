//! What a tool provider hands back, checked before anyone relies on it: its
//! tool definitions and each call's outcome. A guest that breaks the contract
//! gets an error (`InvalidOutput`, `OutputTooLarge`), never a panic and never
//! a half-checked value.

use std::collections::HashSet;

use serde_json::Value;

use crate::bindings::{CallOutcome as GuestOutcome, ToolDefinition as GuestDefinition};
use crate::error::SandboxError;

/// Most tools one component may list.
pub const MAX_TOOLS: usize = 256;
/// Longest tool name, in bytes.
pub const MAX_NAME_BYTES: usize = 128;
/// Longest tool description, in bytes.
pub const MAX_DESCRIPTION_BYTES: usize = 8 << 10;
/// Longest input schema, in bytes.
pub const MAX_SCHEMA_BYTES: usize = 64 << 10;
/// Most content blocks in one outcome.
pub const MAX_CONTENT_BLOCKS: usize = 1024;

/// A tool as a component lists it, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    /// 1 to 128 of `[A-Za-z0-9_.-]`, unique within the component.
    pub name: String,
    /// What the tool does, in the component's own words (untrusted text:
    /// review and frame it before a model reads it).
    pub description: String,
    /// The JSON Schema of the arguments: always a JSON object.
    pub input_schema: Value,
}

/// The outcome of a tool call that ran, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    /// MCP content blocks: a JSON array of objects, each with a string `type`.
    pub content: Value,
    /// The structured result: a JSON object, when the tool gives one.
    pub structured_content: Option<Value>,
    /// The tool failed in a way the model should read (MCP's `isError`).
    pub is_error: bool,
}

fn invalid(what: String) -> SandboxError {
    SandboxError::InvalidOutput(what)
}

/// Checks the list a component returned: bounded in count and total size,
/// every name well-formed and unique, every schema a JSON object.
pub(crate) fn check_definitions(
    list: Vec<GuestDefinition>,
    output_bytes: usize,
) -> Result<Vec<ToolDefinition>, SandboxError> {
    if list.len() > MAX_TOOLS {
        return Err(invalid(format!("{} tools listed; at most {MAX_TOOLS} are accepted", list.len())));
    }
    let size: usize = list.iter().map(|d| d.name.len() + d.description.len() + d.input_schema.len()).sum();
    if size > output_bytes {
        return Err(SandboxError::OutputTooLarge { size, limit: output_bytes }.counted());
    }
    let mut seen = HashSet::new();
    let mut checked = Vec::with_capacity(list.len());
    for (index, def) in list.into_iter().enumerate() {
        let what = |why: &str| {
            invalid(format!("tool {index} ({:?}): {why}", text_safety::escape_for_log_cut(&def.name, MAX_NAME_BYTES)))
        };
        if !valid_name(&def.name) {
            return Err(what(&format!("a name must be 1 to {MAX_NAME_BYTES} of [A-Za-z0-9_.-]")));
        }
        if !seen.insert(def.name.clone()) {
            return Err(what("the name is listed twice"));
        }
        if def.description.len() > MAX_DESCRIPTION_BYTES {
            return Err(what(&format!("the description is over {MAX_DESCRIPTION_BYTES} bytes")));
        }
        if def.input_schema.len() > MAX_SCHEMA_BYTES {
            return Err(what(&format!("the input schema is over {MAX_SCHEMA_BYTES} bytes")));
        }
        let input_schema = match serde_json::from_str(&def.input_schema) {
            Ok(schema @ Value::Object(_)) => schema,
            Ok(_) => return Err(what("the input schema is not a JSON object")),
            Err(e) => return Err(what(&format!("the input schema is not JSON: {e}"))),
        };
        checked.push(ToolDefinition { name: def.name, description: def.description, input_schema });
    }
    Ok(checked)
}

fn valid_name(name: &str) -> bool {
    (1..=MAX_NAME_BYTES).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// Checks one call's outcome: within the output cap, `content` an array of
/// typed blocks, `structured-content` an object.
pub(crate) fn check_outcome(outcome: GuestOutcome, output_bytes: usize) -> Result<CallOutcome, SandboxError> {
    let size = outcome.content.len() + outcome.structured_content.as_ref().map_or(0, String::len);
    if size > output_bytes {
        return Err(SandboxError::OutputTooLarge { size, limit: output_bytes }.counted());
    }
    let content = match serde_json::from_str(&outcome.content) {
        Ok(Value::Array(blocks)) => blocks,
        Ok(_) => return Err(invalid("content is not a JSON array".into())),
        Err(e) => return Err(invalid(format!("content is not JSON: {e}"))),
    };
    if content.len() > MAX_CONTENT_BLOCKS {
        return Err(invalid(format!("{} content blocks; at most {MAX_CONTENT_BLOCKS} are accepted", content.len())));
    }
    if let Some(index) = content.iter().position(|block| !block.get("type").is_some_and(Value::is_string)) {
        return Err(invalid(format!("content block {index} is not an object with a string `type`")));
    }
    let structured_content = match outcome.structured_content.as_deref().map(serde_json::from_str) {
        None => None,
        Some(Ok(object @ Value::Object(_))) => Some(object),
        Some(Ok(_)) => return Err(invalid("structured content is not a JSON object".into())),
        Some(Err(e)) => return Err(invalid(format!("structured content is not JSON: {e}"))),
    };
    Ok(CallOutcome { content: Value::Array(content), structured_content, is_error: outcome.is_error })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "tool_output_tests.rs"]
mod tests;
