//! An MCP provider as the guard's [`ContentSource`]: its resources, templates, prompts
//! and completion in the guard's plain terms. Shape only: the guard decides what is
//! served, and screens and audits it.

use serde_json::{Map, Value};
use wasmgate_agent::{BoxFuture, CancellationToken};
use wasmgate_client::ClientError;
use wasmgate_guard::content::{
    Completion, CompletionRequest, ContentSource, Contents, PromptArgument, PromptInfo, PromptMessage, PromptMessages,
    Resource, ResourceTemplate, ResourceWatch, Role, SourceError,
};
use wasmgate_protocol::{CompleteRequest, ResourceContents};

use crate::mcp_tool::{caller_options, put_off};
use crate::provider::McpProvider;

/// A client error in the guard's terms: what the provider refused (an unknown resource
/// or prompt, invalid arguments) apart from what failed. A round of input the caller's
/// side put off is handed to it here ([`put_off`]).
fn source_error(error: ClientError) -> SourceError {
    match error {
        ClientError::InputDeferred { required, answered } => {
            let deferred = put_off(&required, &answered);
            let text = ClientError::InputDeferred { required, answered }.to_string();
            if deferred { SourceError::InputDeferred(text) } else { SourceError::Unsupported(text) }
        }
        ClientError::Rpc { code: -32602 | -32002, .. } => SourceError::Refused(error.to_string()),
        ClientError::Unsupported(_) => SourceError::Unsupported(error.to_string()),
        _ => SourceError::Failed(error.to_string()),
    }
}

impl ContentSource for McpProvider {
    fn provider(&self) -> &str {
        self.name()
    }

    fn naming(&self) -> wasmgate_policy::Naming {
        self.naming()
    }

    fn resources(&self) -> BoxFuture<'_, Result<Vec<Resource>, SourceError>> {
        Box::pin(async move {
            let list = self.client().list_resources().await.map_err(source_error)?;
            Ok(list
                .into_iter()
                .map(|r| Resource {
                    uri: r.uri,
                    name: r.name,
                    title: r.title,
                    description: r.description,
                    mime_type: r.mime_type,
                    size: r.size,
                })
                .collect())
        })
    }

    fn resource_templates(&self) -> BoxFuture<'_, Result<Vec<ResourceTemplate>, SourceError>> {
        Box::pin(async move {
            let list = self.client().list_resource_templates().await.map_err(source_error)?;
            Ok(list
                .into_iter()
                .map(|t| ResourceTemplate {
                    uri_template: t.uri_template,
                    name: t.name,
                    title: t.title,
                    description: t.description,
                    mime_type: t.mime_type,
                })
                .collect())
        })
    }

    fn read_resource<'a>(
        &'a self,
        uri: &'a str,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<Vec<Contents>, SourceError>> {
        Box::pin(async move {
            let read = self.client().read_resource_with(uri, cancel, caller_options()).await.map_err(source_error)?;
            Ok(read
                .contents
                .into_iter()
                .map(|entry| match entry {
                    ResourceContents::Text { uri, text, .. } => Contents::Text { uri, text },
                    ResourceContents::Blob { uri, raw, .. } => Contents::Blob { uri, raw },
                })
                .collect())
        })
    }

    fn prompts(&self) -> BoxFuture<'_, Result<Vec<PromptInfo>, SourceError>> {
        Box::pin(async move {
            let list = self.client().list_prompts().await.map_err(source_error)?;
            Ok(list
                .into_iter()
                .map(|p| PromptInfo {
                    name: p.name,
                    title: p.title,
                    description: p.description,
                    arguments: p
                        .arguments
                        .into_iter()
                        .map(|a| PromptArgument { name: a.name, description: a.description, required: a.required })
                        .collect(),
                })
                .collect())
        })
    }

    fn subscribe<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Result<ResourceWatch, SourceError>> {
        Box::pin(async move {
            let subscription = self.client().subscribe_resource(uri).await.map_err(source_error)?;
            Ok(ResourceWatch { changes: subscription.changes(), keep: Box::new(subscription) })
        })
    }

    fn get_prompt<'a>(
        &'a self,
        name: &'a str,
        arguments: Map<String, Value>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<PromptMessages, SourceError>> {
        Box::pin(async move {
            let options = caller_options();
            let result = self.client().get_prompt_with(name, arguments, cancel, options).await.map_err(source_error)?;
            let messages = result
                .messages
                .into_iter()
                .map(|m| PromptMessage {
                    role: match m.role {
                        wasmgate_protocol::Role::Assistant => Role::Assistant,
                        wasmgate_protocol::Role::User => Role::User,
                    },
                    content: m.content,
                })
                .collect();
            Ok(PromptMessages { description: result.description, messages })
        })
    }

    fn complete(
        &self,
        request: CompletionRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<Completion, SourceError>> {
        Box::pin(async move {
            let request = CompleteRequest {
                reference: request.reference,
                argument_name: request.argument_name,
                argument_value: request.argument_value,
                context_arguments: request.context_arguments,
            };
            let result = self.client().complete(request, cancel).await.map_err(source_error)?;
            Ok(Completion { values: result.values, total: result.total, has_more: result.has_more })
        })
    }
}
