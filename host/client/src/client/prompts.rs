//! `prompts/list`, `prompts/get` and `completion/complete`.
//!
//! * Prompts are asked of a server whose capabilities hold a `prompts` object only.
//!   Without one, listing answers an empty list without a request, and getting a prompt
//!   is [`ClientError::Unsupported`]. Completion needs a `completions` object the same
//!   way, and is `Unsupported` without it.
//! * Listing walks every page with the shared walk of the `paging` module, bounded by
//!   `max_list_pages`, `max_prompts` and `max_list_bytes`; a repeated cursor or a name
//!   listed on two pages fails the listing. Nothing is cached, and
//!   `notifications/prompts/list_changed` is not followed (yet).
//! * Getting a prompt and asking for completions are one request each under
//!   `request_timeout`, cancelled like `tools/call`. A prompt argument that is not a
//!   string, or a completion reference of another kind than a prompt or a resource
//!   template, is [`ClientError::InvalidRequest`] and nothing is sent. A 2026-07-28
//!   server may answer `prompts/get` with `input_required`: its rounds are answered as
//!   a tool call's are (the `call` module), with the same [`CallOptions`].

use std::sync::Arc;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use wasmgate_core::{Completion, CompletionRequest, PromptInfo};
use wasmgate_protocol::{
    ClientContext, GetPromptResult, Id, ProtocolError, ResultKind, parse_complete_result, parse_get_prompt_result,
    parse_prompts_list,
};

use super::call::{Asking, Rounded};
use super::config::{CallOptions, ClientConfig};
use super::connect::request;
use super::paging::{self, Listing};
use super::router::Reply;
use super::{Session, Shared};
use crate::error::ClientError;

/// Whether the server declared the capability `name` (an object, as the schema says).
fn declared(shared: &Shared, name: &str) -> Result<bool, ClientError> {
    Ok(shared.session()?.capabilities.get(name).is_some_and(Value::is_object))
}

/// Fails with [`ClientError::Unsupported`] unless the server declared `capability`.
fn require(shared: &Shared, capability: &str) -> Result<(), ClientError> {
    if declared(shared, capability)? {
        Ok(())
    } else {
        Err(ClientError::Unsupported(format!(
            "the server {:?} did not declare the {capability} capability",
            shared.server
        )))
    }
}

/// A request the builder refused: the caller's, so nothing was sent.
fn invalid_request(method: &str, error: &ProtocolError) -> ClientError {
    ClientError::InvalidRequest(format!("{method}: {error}"))
}

pub(crate) async fn list(shared: &Arc<Shared>) -> Result<Vec<PromptInfo>, ClientError> {
    if !declared(shared, "prompts")? {
        return Ok(Vec::new());
    }
    paging::walk(shared, &listing(&shared.config)).await
}

/// The `prompts/list` walk: prompts keyed by name.
fn listing(config: &ClientConfig) -> Listing<PromptInfo> {
    Listing {
        method: "prompts/list",
        items: "prompts",
        item: "prompt",
        max_items: config.max_prompts,
        build: ClientContext::prompts_list,
        parse: |result, max| parse_prompts_list(result, max).map(|page| (page.prompts, page.next_cursor)),
        key: |prompt| &prompt.name,
    }
}

impl Rounded for GetPromptResult {
    fn parse(reply: Reply) -> Result<Self, ClientError> {
        Ok(parse_get_prompt_result(&Value::Object(reply.result))?)
    }

    fn kind(&mut self) -> &mut ResultKind {
        &mut self.kind
    }
}

pub(crate) async fn get(
    shared: &Arc<Shared>,
    name: &str,
    arguments: &Map<String, Value>,
    cancel: &CancellationToken,
    options: CallOptions,
) -> Result<GetPromptResult, ClientError> {
    require(shared, "prompts")?;
    let build = |session: &Session, id: &Id| {
        session.context.prompts_get(id, name, arguments).map_err(|e| invalid_request("prompts/get", &e))
    };
    let timeout = options.timeout.unwrap_or(shared.config.request_timeout);
    let asking = Asking::new(shared, "prompts/get", format!("prompt {name:?}"), cancel, timeout, options);
    asking.through(shared, &build).await
}

pub(crate) async fn complete(
    shared: &Arc<Shared>,
    params: &CompletionRequest,
    cancel: &CancellationToken,
) -> Result<Completion, ClientError> {
    require(shared, "completions")?;
    let build = |session: &Session, id: &Id| {
        session.context.completion_complete(id, params).map_err(|e| invalid_request("completion/complete", &e))
    };
    let timeout = shared.config.request_timeout;
    let (reply, _) = request(shared, "completion/complete", &build, &[], timeout, Some(cancel)).await?;
    Ok(parse_complete_result(&Value::Object(reply.result))?)
}
