//! An MCP provider as a [`ContentSource`]: its resources, templates, prompts and
//! completion, as its client read them. The guard decides what is served, and screens
//! and audits it.

use serde_json::{Map, Value};
use wasmgate_client::ClientError;
use wasmgate_core::{
    BoxFuture, CancellationToken, Completion, CompletionRequest, ContentSource, Contents, Naming, PromptInfo,
    PromptMessages, Resource, ResourceTemplate, ResourceWatch, SourceError,
};

use crate::mcp_tool::{caller_options, put_off};
use crate::provider::McpProvider;

/// A client error in a content source's terms: what the provider refused (an unknown resource
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

    fn naming(&self) -> Naming {
        self.naming()
    }

    fn resources(&self) -> BoxFuture<'_, Result<Vec<Resource>, SourceError>> {
        Box::pin(async move { self.client().list_resources().await.map_err(source_error) })
    }

    fn resource_templates(&self) -> BoxFuture<'_, Result<Vec<ResourceTemplate>, SourceError>> {
        Box::pin(async move { self.client().list_resource_templates().await.map_err(source_error) })
    }

    fn read_resource<'a>(
        &'a self,
        uri: &'a str,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<Vec<Contents>, SourceError>> {
        Box::pin(async move {
            let read = self.client().read_resource_with(uri, cancel, caller_options()).await.map_err(source_error)?;
            Ok(read.contents)
        })
    }

    fn prompts(&self) -> BoxFuture<'_, Result<Vec<PromptInfo>, SourceError>> {
        Box::pin(async move { self.client().list_prompts().await.map_err(source_error) })
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
            Ok(result.prompt)
        })
    }

    fn complete(
        &self,
        request: CompletionRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<Completion, SourceError>> {
        Box::pin(async move { self.client().complete(request, cancel).await.map_err(source_error) })
    }
}
