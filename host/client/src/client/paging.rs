//! The paging walk shared by `tools/list`, `resources/list`, `resources/templates/list`
//! and `prompts/list`.
//!
//! A hostile or broken server can page forever, repeat a cursor, or send a huge list.
//! So a walk is bounded by `max_list_pages`, a per-list item cap (over all pages) and
//! `max_list_bytes` (the raw size of all pages); a cursor seen before is an error (it
//! would loop), and a key (tool name, resource URI, URI template, prompt name) repeated
//! on another page is an error (the protocol crate already refuses repeats within one
//! page). Exceeding a cap fails the listing rather than truncating it: a silently
//! partial list would look complete to the policy layer.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;
use wasmgate_protocol::{ClientContext, Id, ProtocolError};

use super::connect::request;
use super::{Session, Shared};
use crate::error::ClientError;

/// One page as the walk needs it: the items and the cursor of the next page.
pub(crate) type Page<T> = (Vec<T>, Option<String>);

/// What differs between two paginated list methods.
pub(crate) struct Listing<T> {
    /// The method, e.g. `tools/list`; also names the page and byte caps in errors.
    pub(crate) method: &'static str,
    /// The items, plural (`tools`): names the item cap in errors.
    pub(crate) items: &'static str,
    /// What the key of an item is, for the repeated-key error (`tool`, `resource`, ...).
    pub(crate) item: &'static str,
    /// Most items over all pages (and on one page).
    pub(crate) max_items: usize,
    /// Builds the request for one page.
    pub(crate) build: fn(&ClientContext, &Id, Option<&str>) -> Value,
    /// Parses one page's result, refusing more than the given number of items.
    pub(crate) parse: fn(&Value, usize) -> Result<Page<T>, ProtocolError>,
    /// The key that must be unique over all pages.
    pub(crate) key: fn(&T) -> &str,
}

/// Fetches every page of `listing`, within the caps of the module docs.
pub(crate) async fn walk<T>(shared: &Arc<Shared>, listing: &Listing<T>) -> Result<Vec<T>, ClientError> {
    let config = &shared.config;
    let method = listing.method;
    let mut all: Vec<T> = Vec::new();
    let mut keys = HashSet::new();
    let mut cursors = HashSet::new();
    let (mut cursor, mut bytes, mut pages) = (None::<String>, 0usize, 0usize);
    loop {
        pages += 1;
        if pages > config.max_list_pages {
            return Err(ClientError::LimitExceeded { what: format!("{method} pages"), limit: config.max_list_pages });
        }
        let page_cursor = cursor.clone();
        let build = listing.build;
        let build = move |session: &Session, id: &Id| Ok(build(&session.context, id, page_cursor.as_deref()));
        let (reply, _) = request(shared, method, &build, &[], config.request_timeout, None).await?;
        bytes += reply.bytes;
        if bytes > config.max_list_bytes {
            return Err(ClientError::LimitExceeded { what: format!("{method} bytes"), limit: config.max_list_bytes });
        }
        let (items, next_cursor) = (listing.parse)(&Value::Object(reply.result), listing.max_items)?;
        for item in items {
            if all.len() >= listing.max_items {
                return Err(ClientError::LimitExceeded { what: listing.items.into(), limit: listing.max_items });
            }
            let key = (listing.key)(&item);
            if !keys.insert(key.to_owned()) {
                return Err(ClientError::MalformedMessage {
                    detail: format!("{method} names the {} {key:?} on two pages", listing.item),
                });
            }
            all.push(item);
        }
        match next_cursor {
            None => return Ok(all),
            Some(next) if !cursors.insert(next.clone()) => {
                return Err(ClientError::MalformedMessage {
                    detail: format!("{method} repeated the cursor {next:?}; paging would never end"),
                });
            }
            Some(next) => cursor = Some(next),
        }
    }
}
