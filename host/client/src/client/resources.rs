//! `resources/list`, `resources/templates/list` and `resources/read`.
//!
//! * Only a server whose capabilities hold a `resources` object is asked. Without one,
//!   listing answers an empty list without a request (the server has nothing to
//!   offer), and reading is [`ClientError::Unsupported`] (there is nothing to read).
//! * Listing walks every page with the shared walk of the `paging` module, bounded by
//!   `max_list_pages`, `max_resources` and `max_list_bytes`; a repeated cursor or a URI
//!   listed on two pages fails the listing. Nothing is cached: a resource list is asked
//!   for rarely, and `notifications/resources/list_changed` is not followed (yet).
//!   Templates (`resources/templates/list`) are listed the same way, keyed by
//!   `uriTemplate` and capped by `max_resources` as well: they belong to the same
//!   capability, and a template stands for many resources.
//! * A read is one request under `request_timeout`, cancelled like `tools/call` (a
//!   `notifications/cancelled`, or on 2026-07-28 HTTP the request's stream closed). Its
//!   size is already capped by the transport. A 2026-07-28 server may answer
//!   `input_required`: its rounds are answered as a tool call's are (the `call`
//!   module), with the same [`CallOptions`].

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wasmgate_core::{Resource, ResourceTemplate};
use wasmgate_protocol::{
    ClientContext, Id, ReadResourceResult, ResultKind, parse_read_resource_result, parse_resource_templates_list,
    parse_resources_list,
};

use super::call::{Asking, Rounded};
use super::config::{CallOptions, ClientConfig};
use super::paging::{self, Listing};
use super::router::Reply;
use super::{Session, Shared};
use crate::error::ClientError;

/// Whether the server declared the `resources` capability (an object, as the schema says).
fn declared(shared: &Shared) -> Result<bool, ClientError> {
    Ok(shared.session()?.capabilities.get("resources").is_some_and(Value::is_object))
}

pub(crate) async fn list(shared: &Arc<Shared>) -> Result<Vec<Resource>, ClientError> {
    if !declared(shared)? {
        return Ok(Vec::new());
    }
    paging::walk(shared, &listing(&shared.config)).await
}

/// The `resources/list` walk: resources keyed by URI.
fn listing(config: &ClientConfig) -> Listing<Resource> {
    Listing {
        method: "resources/list",
        items: "resources",
        item: "resource",
        max_items: config.max_resources,
        build: ClientContext::resources_list,
        parse: |result, max| parse_resources_list(result, max).map(|page| (page.resources, page.next_cursor)),
        key: |resource| &resource.uri,
    }
}

pub(crate) async fn list_templates(shared: &Arc<Shared>) -> Result<Vec<ResourceTemplate>, ClientError> {
    if !declared(shared)? {
        return Ok(Vec::new());
    }
    paging::walk(shared, &template_listing(&shared.config)).await
}

/// The `resources/templates/list` walk: templates keyed by URI template.
fn template_listing(config: &ClientConfig) -> Listing<ResourceTemplate> {
    Listing {
        method: "resources/templates/list",
        items: "resource templates",
        item: "resource template",
        max_items: config.max_resources,
        build: ClientContext::resources_templates_list,
        parse: |result, max| {
            parse_resource_templates_list(result, max).map(|page| (page.resource_templates, page.next_cursor))
        },
        key: |template| &template.uri_template,
    }
}

impl Rounded for ReadResourceResult {
    fn parse(reply: Reply) -> Result<Self, ClientError> {
        Ok(parse_read_resource_result(&Value::Object(reply.result))?)
    }

    fn kind(&mut self) -> &mut ResultKind {
        &mut self.kind
    }
}

pub(crate) async fn read(
    shared: &Arc<Shared>,
    uri: &str,
    cancel: &CancellationToken,
    options: CallOptions,
) -> Result<ReadResourceResult, ClientError> {
    if !declared(shared)? {
        return Err(ClientError::Unsupported(format!(
            "the server {:?} did not declare the resources capability",
            shared.server
        )));
    }
    let build = |session: &Session, id: &Id| Ok(session.context.resources_read(id, uri));
    let timeout = options.timeout.unwrap_or(shared.config.request_timeout);
    let asking = Asking::new(shared, "resources/read", format!("reading {uri:?}"), cancel, timeout, options);
    asking.through(shared, &build).await
}
