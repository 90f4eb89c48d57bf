//! `tools/list`: every page, within caps, cached until the server says it changed.
//!
//! A hostile or broken server can page forever, repeat a cursor, or send a huge list.
//! So the walk is bounded by `max_list_pages`, `max_tools` (over all pages) and
//! `max_list_bytes` (the raw size of all pages), a cursor seen before is an error (it
//! would loop), and a name repeated on another page is an error (a call by name would
//! be ambiguous; the protocol crate already refuses repeats within one page). Exceeding
//! a cap fails the listing rather than truncating it: a silently partial tool list
//! would look complete to the policy layer.
//!
//! The cache is tagged with the tool generation it was fetched under; the generation
//! moves on `notifications/tools/list_changed` and on an unknown-tool error, which makes
//! the cache stale and the next listing fetch again. A change that arrives *during* a
//! fetch leaves the fresh cache stale as well, since the fetch may predate it. And the
//! cache is served only while something would tell us of a change: while the change
//! stream is down (see the `watch` module) every listing asks the server.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;
use wasmgate_protocol::{ToolDefinition, parse_tools_list};

use super::Shared;
use super::connect::request;
use super::param_headers::annotated;
use crate::error::ClientError;

/// A fetched tool list and the generation it was fetched under.
#[derive(Debug)]
pub(crate) struct Cache {
    generation: u64,
    tools: Vec<ToolDefinition>,
}

pub(crate) fn is_stale(shared: &Shared) -> bool {
    cached(shared).is_none()
}

/// A tool's cached definition, fresh or not (for headers derived from its schema).
pub(crate) fn cached_definition(shared: &Shared, name: &str) -> Option<ToolDefinition> {
    let cache = shared.tools_cache.lock().ok()?;
    cache.as_ref()?.tools.iter().find(|t| t.name == name).cloned()
}

/// The cached list, if it is current and something would tell us otherwise.
fn cached(shared: &Shared) -> Option<Vec<ToolDefinition>> {
    if !shared.tools_watch.borrow().trusts_cache() {
        return None;
    }
    let generation = *shared.tools_generation.borrow();
    let cache = shared.tools_cache.lock().ok()?;
    cache.as_ref().filter(|c| c.generation == generation).map(|c| c.tools.clone())
}

pub(crate) async fn list(shared: &Arc<Shared>) -> Result<Vec<ToolDefinition>, ClientError> {
    if let Some(tools) = cached(shared) {
        return Ok(tools);
    }
    let _one_refresh = shared.refresh.lock().await;
    if let Some(tools) = cached(shared) {
        return Ok(tools);
    }
    let generation = *shared.tools_generation.borrow();
    let mut tools = fetch_all(shared).await?;
    if shared.transport.mirrors_param_headers() {
        tools.retain(|tool| match annotated(&tool.input_schema) {
            Ok(_) => true,
            Err(why) => {
                tracing::warn!(server = %shared.server, tool = %tool.name, %why, "tool definition rejected");
                false
            }
        });
    }
    if let Ok(mut cache) = shared.tools_cache.lock() {
        *cache = Some(Cache { generation, tools: tools.clone() });
    }
    Ok(tools)
}

async fn fetch_all(shared: &Arc<Shared>) -> Result<Vec<ToolDefinition>, ClientError> {
    let config = &shared.config;
    let mut tools: Vec<ToolDefinition> = Vec::new();
    let mut names = HashSet::new();
    let mut cursors = HashSet::new();
    let (mut cursor, mut bytes, mut pages) = (None::<String>, 0usize, 0usize);
    loop {
        pages += 1;
        if pages > config.max_list_pages {
            return Err(ClientError::LimitExceeded { what: "tools/list pages".into(), limit: config.max_list_pages });
        }
        let page_cursor = cursor.clone();
        let build = move |session: &super::Session, id: &wasmgate_protocol::Id| {
            Ok(session.context.tools_list(id, page_cursor.as_deref()))
        };
        let (reply, _) = request(shared, "tools/list", &build, &[], config.request_timeout, None).await?;
        bytes += reply.bytes;
        if bytes > config.max_list_bytes {
            return Err(ClientError::LimitExceeded { what: "tools/list bytes".into(), limit: config.max_list_bytes });
        }
        let page = parse_tools_list(&Value::Object(reply.result), config.max_tools)?;
        for tool in page.tools {
            if tools.len() >= config.max_tools {
                return Err(ClientError::LimitExceeded { what: "tools".into(), limit: config.max_tools });
            }
            if !names.insert(tool.name.clone()) {
                return Err(ClientError::MalformedMessage {
                    detail: format!("tools/list names the tool {:?} on two pages", tool.name),
                });
            }
            tools.push(tool);
        }
        match page.next_cursor {
            None => return Ok(tools),
            Some(next) if !cursors.insert(next.clone()) => {
                return Err(ClientError::MalformedMessage {
                    detail: format!("tools/list repeated the cursor {next:?}; paging would never end"),
                });
            }
            Some(next) => cursor = Some(next),
        }
    }
}
