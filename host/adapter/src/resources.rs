//! An optional `read_resource` tool for one provider: its resources (`resources/list`)
//! become one tool that reads a listed resource by URI, with the contents rendered by
//! the formatter like any tool result.
//!
//! * The tool is named `<provider>.read_resource`. A provider's own tools are exposed as
//!   `<provider>__<tool>` and provider names have no `.`, so no tool of any provider can
//!   take this name.
//! * Only listed URIs are read. An unknown URI makes the tool list the resources again
//!   once (the list may have grown); resource templates are not offered.
//! * Blobs are never shown: the formatter renders them as a placeholder line.
//!
//! Prompts are not consumed: a prompt is a provider-written message template meant for a
//! person to pick in a user interface. Putting it into an agent's conversation would give
//! an untrusted provider the instruction channel that the framing of results keeps from it.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wasmgate_client::{ClientError, McpClient};
use wasmgate_core::{BoxFuture, CancellationToken, Resource, Tool, ToolError, ToolExecute, ToolResult, ToolSpec};
use wasmgate_policy::sanitize;
use wasmgate_protocol::{CallToolResult, ContentBlock, ResultKind};
use wasmgate_sandbox::Formatter;

use crate::mcp_tool::{caller_options, tool_error};
use crate::render::{Origin, render};

/// The tool's name after the provider's.
pub const READ_RESOURCE: &str = "read_resource";
/// Resources named in the tool's description, at most.
const LISTED_IN_DESCRIPTION: usize = 50;

/// The `read_resource` tool of the provider behind `client`, or `None` when it has no
/// resources (or did not declare the capability).
///
/// # Errors
///
/// The client's, when the list cannot be fetched.
pub async fn read_resource_tool(
    provider: &str,
    client: &McpClient,
    formatter: Arc<Formatter>,
) -> Result<Option<Tool>, ClientError> {
    let resources = client.list_resources().await?;
    if resources.is_empty() {
        return Ok(None);
    }
    let name = format!("{provider}.{READ_RESOURCE}");
    let spec = ToolSpec { name: name.clone(), description: describe(provider, &resources), input_schema: schema() };
    let uris = resources.into_iter().map(|r| r.uri).collect();
    let executor =
        ReadResource { provider: provider.to_owned(), name, client: client.clone(), formatter, uris: Mutex::new(uris) };
    Ok(Some(Tool::new(spec, Arc::new(executor))))
}

/// Characters of one resource's URI, and of its description, in the tool's description.
const DESCRIBED_CHARS: usize = 200;

/// The tool's description. URIs and descriptions are server text that reaches the
/// model without review: sanitized (control, escape, invisible and bidi characters
/// removed) and capped, as the gateway does for forwarded descriptions.
fn describe(provider: &str, resources: &[Resource]) -> String {
    let clean = |text: &str| text_safety::truncated(&sanitize(text).text, DESCRIBED_CHARS);
    let mut text = format!("Reads one resource of {provider} by its URI. Available resources:");
    for resource in resources.iter().take(LISTED_IN_DESCRIPTION) {
        let about = resource.description.as_deref().or(resource.title.as_deref()).unwrap_or(&resource.name);
        text.push_str(&format!("\n- {} ({})", clean(&resource.uri), clean(about)));
    }
    if resources.len() > LISTED_IN_DESCRIPTION {
        text.push_str(&format!("\n- and {} more", resources.len() - LISTED_IN_DESCRIPTION));
    }
    text
}

fn schema() -> Value {
    json!({"type": "object", "properties": {"uri": {"type": "string", "description": "the resource's URI"}},
           "required": ["uri"], "additionalProperties": false})
}

struct ReadResource {
    provider: String,
    name: String,
    client: McpClient,
    formatter: Arc<Formatter>,
    /// The URIs listed, refreshed once when asked for one not in it.
    uris: Mutex<Vec<String>>,
}

impl std::fmt::Debug for ReadResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadResource").field("provider", &self.provider).finish_non_exhaustive()
    }
}

impl ToolExecute for ReadResource {
    fn execute(&self, input: Value, cancel: CancellationToken) -> BoxFuture<'_, Result<ToolResult, ToolError>> {
        Box::pin(self.read(input, cancel))
    }
}

impl ReadResource {
    fn listed(&self, uri: &str) -> bool {
        self.uris.lock().is_ok_and(|uris| uris.iter().any(|u| u == uri))
    }

    async fn read(&self, input: Value, cancel: CancellationToken) -> Result<ToolResult, ToolError> {
        let Some(uri) = input.get("uri").and_then(Value::as_str) else {
            return Ok(ToolResult::error("invalid arguments: `uri` (a string) is required"));
        };
        if !self.listed(uri) {
            // The caller's cancellation (a gateway's deadline) ends the walk over the
            // server's pages, which the server can make as slow as it likes.
            let looked = cancel.run_until_cancelled(self.client.list_resources()).await;
            match looked.unwrap_or(Err(ClientError::Cancelled)) {
                Ok(fresh) => {
                    if let Ok(mut uris) = self.uris.lock() {
                        *uris = fresh.into_iter().map(|r| r.uri).collect();
                    }
                }
                Err(error) => return Err(self.failed(error)),
            }
            if !self.listed(uri) {
                return Ok(ToolResult::error(format!("unknown resource: {uri:?} is not listed by {}", self.provider)));
            }
        }
        let read = self.client.read_resource_with(uri, cancel, caller_options()).await.map_err(|e| self.failed(e))?;
        let blocks: Vec<Value> =
            read.contents.iter().map(|c| json!({"type": "resource", "resource": c.raw().clone()})).collect();
        let result = CallToolResult {
            kind: ResultKind::Complete,
            content: blocks.iter().cloned().map(ContentBlock::Resource).collect(),
            structured_content: None,
            is_error: false,
            raw: json!({"content": blocks}),
        };
        Ok(render(Origin { provider: &self.provider, tool: &self.name }, &self.formatter, None, &result).await)
    }

    fn failed(&self, error: ClientError) -> ToolError {
        tool_error(&self.provider, error)
    }
}
