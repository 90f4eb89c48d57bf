//! The shape every paginated list result shares (crate-private): an array of entries
//! under one key, capped, with no key repeated on the page, plus `nextCursor` and the
//! cache hints. A list result may not be `input_required`.

use serde_json::Value;

use crate::ProtocolError;
use crate::fields::{as_object, opt_str, req_array};
use crate::result::{CacheHints, parse_cache_hints, require_complete};

/// One parsed page: its entries, the cursor of the next page, and the cache hints.
pub(crate) struct Page<T> {
    pub(crate) entries: Vec<T>,
    pub(crate) next_cursor: Option<String>,
    pub(crate) cache: CacheHints,
}

/// Parses the page of `method` whose entries are under `field`, each by `entry` (given
/// its path), refusing more than `max` entries and two entries with the same `key`.
pub(crate) fn parse_page<T>(
    result: &Value,
    method: &str,
    field: &str,
    max: usize,
    entry: fn(&Value, &str) -> Result<T, ProtocolError>,
    key: fn(&T) -> &str,
) -> Result<Page<T>, ProtocolError> {
    require_complete(result, method)?;
    let obj = as_object(result, "result")?;
    let at = format!("result.{field}");
    let values = req_array(obj, "result", field)?;
    if values.len() > max {
        return Err(ProtocolError::TooMany { at, count: values.len(), limit: max });
    }
    let mut entries: Vec<T> = Vec::with_capacity(values.len());
    for (i, value) in values.iter().enumerate() {
        let parsed = entry(value, &format!("{at}[{i}]"))?;
        if !key(&parsed).is_empty() && entries.iter().any(|e| key(e) == key(&parsed)) {
            return Err(ProtocolError::DuplicateName { at, name: key(&parsed).to_owned() });
        }
        entries.push(parsed);
    }
    Ok(Page {
        entries,
        next_cursor: opt_str(obj, "result", "nextCursor")?.map(str::to_owned),
        cache: parse_cache_hints(obj, "result")?,
    })
}
