//! `tools/list`: every page, within caps, cached until the server says it changed.
//!
//! The pages are fetched by the shared walk of the `paging` module, bounded by
//! `max_list_pages`, `max_tools` (over all pages) and `max_list_bytes`; a repeated cursor
//! or a name repeated on another page fails the listing (a call by name would be
//! ambiguous), and so does exceeding a cap: a silently partial tool list would look
//! complete to the policy layer.
//!
//! The cache is tagged with the tool generation it was fetched under; the generation
//! moves on `notifications/tools/list_changed` and on an unknown-tool error, which makes
//! the cache stale and the next listing fetch again. A change that arrives *during* a
//! fetch leaves the fresh cache stale as well, since the fetch may predate it. And the
//! cache is served only while something would tell us of a change: while the change
//! stream is down (see the `watch` module) every listing asks the server.

use std::sync::Arc;

use wasmgate_protocol::{ClientContext, ToolDefinition, parse_tools_list};

use super::Shared;
use super::config::ClientConfig;
use super::paging::{self, Listing};
use super::param_headers::header_params;
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
    let mut tools = paging::walk(shared, &listing(&shared.config)).await?;
    if shared.transport.mirrors_param_headers() {
        tools.retain(|tool| match header_params(&tool.input_schema) {
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

/// The `tools/list` walk: tools keyed by name.
fn listing(config: &ClientConfig) -> Listing<ToolDefinition> {
    Listing {
        method: "tools/list",
        items: "tools",
        item: "tool",
        max_items: config.max_tools,
        build: ClientContext::tools_list,
        parse: |result, max| {
            parse_tools_list(result, max).map(|page| {
                for rejected in &page.rejected {
                    tracing::warn!(%rejected, "a tool definition the server listed is not valid: that tool is withheld");
                }
                (page.tools, page.next_cursor)
            })
        },
        key: |tool| &tool.name,
    }
}
