//! Resources: what a server offers to be read (`resources/list`, and the parameterised
//! `resources/templates/list`) and what a read returns (`resources/read`).
//!
//! Resource text reaches the agent's model like tool output does, so the parsers are as
//! strict as the tool parsers, read each entry into `wasmgate-core`'s types (a read's
//! entries keep their own JSON), and keep each result's whole JSON beside them.
//!
//! * `resources/list`: each resource has a string `uri` and a string `name` (required by
//!   every version since 2024-11-05); `title`, `description` and `mimeType` are strings,
//!   `size` a non-negative integer, `annotations` and `_meta` objects, when present. A page
//!   is capped at a configurable number of resources, and two resources with the same URI
//!   on one page are rejected: the server would be describing one resource two ways.
//!   A list result may not be `input_required`.
//! * `resources/templates/list`: each template has a string `uriTemplate` (an RFC 6570
//!   URI template, not expanded or checked here) and a string `name`; `title`,
//!   `description` and `mimeType` are strings, `annotations` and `_meta` objects, when
//!   present. Pages are capped and keyed like `resources/list`, by `uriTemplate`, and may
//!   not be `input_required` either.
//! * `resources/read`: a complete result has a `contents` array; each entry has a string
//!   `uri`, an optional string `mimeType`, and exactly one of `text` (a string) or `blob`
//!   (a base64 string; its encoding is not decoded here). Since 2026-07-28 the result may
//!   instead be `input_required` (see [`ResultKind`]); its typed fields are then empty.
//!   `ttlMs` / `cacheScope` hints are read as for lists.

use serde_json::Value;
use wasmgate_core::{Contents, Resource, ResourceTemplate};

use crate::ProtocolError;
use crate::fields::{as_object, invalid, opt_object, opt_str, opt_u64, req_array, req_str};
use crate::page::parse_page;
use crate::result::{CacheHints, ResultKind, parse_cache_hints, parse_result_kind};

/// One page of a `resources/list` result.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourcesPage {
    /// The resources, in the server's order.
    pub resources: Vec<Resource>,
    /// Cursor for the next page, if there is one.
    pub next_cursor: Option<String>,
    /// `ttlMs` / `cacheScope`.
    pub cache: CacheHints,
    /// The whole result.
    pub raw: Value,
}

/// Parses a `resources/list` result, refusing pages of more than `max_resources` entries.
///
/// # Errors
///
/// [`TooMany`](ProtocolError::TooMany), [`DuplicateName`](ProtocolError::DuplicateName)
/// (a URI listed twice), an `input_required` result, or the field errors of the first
/// malformed resource (`at` = `result.resources[i]...`).
pub fn parse_resources_list(result: &Value, max_resources: usize) -> Result<ResourcesPage, ProtocolError> {
    let page = parse_page(result, "resources/list", "resources", max_resources, parse_resource, |r| &r.uri)?;
    Ok(ResourcesPage { resources: page.entries, next_cursor: page.next_cursor, cache: page.cache, raw: result.clone() })
}

fn parse_resource(value: &Value, at: &str) -> Result<Resource, ProtocolError> {
    let obj = as_object(value, at)?;
    let uri = req_str(obj, at, "uri")?;
    let name = req_str(obj, at, "name")?;
    // Annotations are hints nothing here trusts: checked for shape, kept only in the
    // page's whole JSON.
    opt_object(obj, at, "annotations")?;
    opt_object(obj, at, "_meta")?;
    Ok(Resource {
        uri: uri.to_owned(),
        name: name.to_owned(),
        title: opt_str(obj, at, "title")?.map(str::to_owned),
        description: opt_str(obj, at, "description")?.map(str::to_owned),
        mime_type: opt_str(obj, at, "mimeType")?.map(str::to_owned),
        size: opt_u64(obj, at, "size")?,
    })
}

/// One page of a `resources/templates/list` result.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceTemplatesPage {
    /// The templates, in the server's order.
    pub resource_templates: Vec<ResourceTemplate>,
    /// Cursor for the next page, if there is one.
    pub next_cursor: Option<String>,
    /// `ttlMs` / `cacheScope`.
    pub cache: CacheHints,
    /// The whole result.
    pub raw: Value,
}

/// Parses a `resources/templates/list` result, refusing pages of more than
/// `max_templates` entries.
///
/// # Errors
///
/// [`TooMany`](ProtocolError::TooMany), [`DuplicateName`](ProtocolError::DuplicateName)
/// (a `uriTemplate` listed twice), an `input_required` result, or the field errors of the
/// first malformed template (`at` = `result.resourceTemplates[i]...`).
pub fn parse_resource_templates_list(
    result: &Value,
    max_templates: usize,
) -> Result<ResourceTemplatesPage, ProtocolError> {
    let page = parse_page(
        result,
        "resources/templates/list",
        "resourceTemplates",
        max_templates,
        parse_resource_template,
        |t| &t.uri_template,
    )?;
    Ok(ResourceTemplatesPage {
        resource_templates: page.entries,
        next_cursor: page.next_cursor,
        cache: page.cache,
        raw: result.clone(),
    })
}

fn parse_resource_template(value: &Value, at: &str) -> Result<ResourceTemplate, ProtocolError> {
    let obj = as_object(value, at)?;
    let uri_template = req_str(obj, at, "uriTemplate")?;
    let name = req_str(obj, at, "name")?;
    opt_object(obj, at, "annotations")?;
    opt_object(obj, at, "_meta")?;
    Ok(ResourceTemplate {
        uri_template: uri_template.to_owned(),
        name: name.to_owned(),
        title: opt_str(obj, at, "title")?.map(str::to_owned),
        description: opt_str(obj, at, "description")?.map(str::to_owned),
        mime_type: opt_str(obj, at, "mimeType")?.map(str::to_owned),
    })
}

/// The result of `resources/read`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadResourceResult {
    /// Complete, or asking for input (then `contents` is empty).
    pub kind: ResultKind,
    /// The contents: one entry, or several for a resource with sub-resources.
    pub contents: Vec<Contents>,
    /// `ttlMs` / `cacheScope`.
    pub cache: CacheHints,
    /// The whole result.
    pub raw: Value,
}

/// Parses a `resources/read` result.
///
/// # Errors
///
/// The [`parse_result_kind`] errors; for a complete result, a missing `contents`, or an
/// entry that is malformed or has both or neither of `text` and `blob`
/// (`at` = `result.contents[i]...`).
pub fn parse_read_resource_result(result: &Value) -> Result<ReadResourceResult, ProtocolError> {
    let kind = parse_result_kind(result)?;
    let obj = as_object(result, "result")?;
    let contents = match kind {
        ResultKind::InputRequired(_) => Vec::new(),
        ResultKind::Complete => req_array(obj, "result", "contents")?
            .iter()
            .enumerate()
            .map(|(i, entry)| parse_contents(entry, &format!("result.contents[{i}]")))
            .collect::<Result<Vec<_>, _>>()?,
    };
    Ok(ReadResourceResult { kind, contents, cache: parse_cache_hints(obj, "result")?, raw: result.clone() })
}

fn parse_contents(value: &Value, at: &str) -> Result<Contents, ProtocolError> {
    let obj = as_object(value, at)?;
    let uri = req_str(obj, at, "uri")?.to_owned();
    let mime_type = opt_str(obj, at, "mimeType")?.map(str::to_owned);
    opt_object(obj, at, "_meta")?;
    let raw = value.clone();
    match (opt_str(obj, at, "text")?, opt_str(obj, at, "blob")?) {
        (Some(text), None) => Ok(Contents::Text { uri, mime_type, text: text.to_owned(), raw }),
        (None, Some(blob)) => Ok(Contents::Blob { uri, mime_type, blob: blob.to_owned(), raw }),
        (Some(_), Some(_)) => Err(invalid(at.to_owned(), "has both text and blob")),
        (None, None) => Err(invalid(at.to_owned(), "has neither text nor blob")),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    fn templates(entries: Value) -> Result<ResourceTemplatesPage, ProtocolError> {
        parse_resource_templates_list(&json!({ "resourceTemplates": entries }), 3)
    }

    #[test]
    fn a_template_page_keeps_its_fields_cursor_and_raw_entries() {
        let entry = json!({"uriTemplate": "file:///{path}", "name": "files", "title": "Files",
                           "description": "Any file", "mimeType": "text/plain",
                           "annotations": {"priority": 0.5}, "icons": [], "_meta": {"k": 1}});
        let result = json!({"resourceTemplates": [entry], "nextCursor": "n", "ttlMs": 10});
        let page = parse_resource_templates_list(&result, 3).unwrap();
        let [template] = &page.resource_templates[..] else { panic!("one template expected") };
        assert_eq!(template.uri_template, "file:///{path}");
        assert_eq!(template.name, "files");
        assert_eq!(template.title.as_deref(), Some("Files"));
        assert_eq!(template.description.as_deref(), Some("Any file"));
        assert_eq!(template.mime_type.as_deref(), Some("text/plain"));
        assert_eq!(page.raw["resourceTemplates"][0], entry, "the page's JSON keeps each entry whole");
        assert_eq!(page.next_cursor.as_deref(), Some("n"));
        assert_eq!(page.cache.ttl_ms, Some(10));
        assert_eq!(page.raw, result);
        assert_eq!(templates(json!([])).map(|p| p.resource_templates.len()), Ok(0));
    }

    #[test]
    fn malformed_templates_are_rejected_with_their_path() {
        let wrong = |at: &str, expected| ProtocolError::WrongType { at: at.into(), expected };
        let missing = |at: &str| ProtocolError::MissingField { at: at.into() };
        let cases = [
            (json!([{"name": "a"}]), missing("result.resourceTemplates[0].uriTemplate")),
            (json!([{"uriTemplate": "x:{a}"}]), missing("result.resourceTemplates[0].name")),
            (json!([{"uriTemplate": 1, "name": "a"}]), wrong("result.resourceTemplates[0].uriTemplate", "a string")),
            (
                json!([{"uriTemplate": "x:{a}", "name": "a", "mimeType": null}]),
                wrong("result.resourceTemplates[0].mimeType", "a string"),
            ),
            (
                json!([{"uriTemplate": "x:{a}", "name": "a", "annotations": []}]),
                wrong("result.resourceTemplates[0].annotations", "an object"),
            ),
            (
                json!([{"uriTemplate": "x:{a}", "name": "a", "_meta": "m"}]),
                wrong("result.resourceTemplates[0]._meta", "an object"),
            ),
            (json!(["x:{a}"]), wrong("result.resourceTemplates[0]", "an object")),
            (json!({}), wrong("result.resourceTemplates", "an array")),
            (
                json!([{"uriTemplate": "x:{a}", "name": "a"}, {"uriTemplate": "x:{a}", "name": "b"}]),
                ProtocolError::DuplicateName { at: "result.resourceTemplates".into(), name: "x:{a}".into() },
            ),
            (
                json!([{"uriTemplate": "a:{x}", "name": "a"}, {"uriTemplate": "b:{x}", "name": "b"},
                       {"uriTemplate": "c:{x}", "name": "c"}, {"uriTemplate": "d:{x}", "name": "d"}]),
                ProtocolError::TooMany { at: "result.resourceTemplates".into(), count: 4, limit: 3 },
            ),
        ];
        for (entries, expected) in cases {
            assert_eq!(templates(entries.clone()), Err(expected), "{entries}");
        }
        assert_eq!(parse_resource_templates_list(&json!({}), 3), Err(missing("result.resourceTemplates")));
    }

    #[test]
    fn a_template_list_may_not_be_input_required() {
        let result = json!({"resultType": "input_required", "requestState": "s", "resourceTemplates": []});
        assert!(matches!(
            parse_resource_templates_list(&result, 3),
            Err(ProtocolError::InvalidValue { at, .. }) if at == "result.resultType"
        ));
    }
}
