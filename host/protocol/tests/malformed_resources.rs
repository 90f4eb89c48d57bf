//! Malformed `resources/list` and `resources/read` results: every case names the exact
//! `ProtocolError` it must produce.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use wasmgate_protocol::{ProtocolError, parse_read_resource_result, parse_resources_list};

fn list(resources: Value) -> Result<usize, ProtocolError> {
    parse_resources_list(&json!({ "resources": resources }), 10).map(|page| page.resources.len())
}

fn read(contents: Value) -> Result<usize, ProtocolError> {
    parse_read_resource_result(&json!({ "contents": contents })).map(|result| result.contents.len())
}

fn wrong(at: &str, expected: &'static str) -> ProtocolError {
    ProtocolError::WrongType { at: at.into(), expected }
}

fn missing(at: &str) -> ProtocolError {
    ProtocolError::MissingField { at: at.into() }
}

fn invalid(at: &str, reason: &str) -> ProtocolError {
    ProtocolError::InvalidValue { at: at.into(), reason: reason.into() }
}

#[test]
fn malformed_resource_entries_are_rejected_with_their_path() {
    let cases = [
        (json!([{"name": "a"}]), missing("result.resources[0].uri")),
        (json!([{"uri": "file:///a"}]), missing("result.resources[0].name")),
        (json!([{"uri": 7, "name": "a"}]), wrong("result.resources[0].uri", "a string")),
        (json!([{"uri": "file:///a", "name": null}]), wrong("result.resources[0].name", "a string")),
        (json!([{"uri": "file:///a", "name": "a", "title": 1}]), wrong("result.resources[0].title", "a string")),
        (
            json!([{"uri": "file:///a", "name": "a", "description": []}]),
            wrong("result.resources[0].description", "a string"),
        ),
        (json!([{"uri": "file:///a", "name": "a", "mimeType": {}}]), wrong("result.resources[0].mimeType", "a string")),
        (
            json!([{"uri": "file:///a", "name": "a", "size": -1}]),
            wrong("result.resources[0].size", "a non-negative integer"),
        ),
        (
            json!([{"uri": "file:///a", "name": "a", "size": 1.5}]),
            wrong("result.resources[0].size", "a non-negative integer"),
        ),
        (
            json!([{"uri": "file:///a", "name": "a", "size": "10"}]),
            wrong("result.resources[0].size", "a non-negative integer"),
        ),
        (
            json!([{"uri": "file:///a", "name": "a", "annotations": "high"}]),
            wrong("result.resources[0].annotations", "an object"),
        ),
        (json!([{"uri": "file:///a", "name": "a", "_meta": 1}]), wrong("result.resources[0]._meta", "an object")),
        (json!(["file:///a"]), wrong("result.resources[0]", "an object")),
        (
            json!([{"uri": "file:///a", "name": "a"}, {"uri": "file:///a", "name": "b"}]),
            ProtocolError::DuplicateName { at: "result.resources".into(), name: "file:///a".into() },
        ),
        (json!({"uri": "file:///a"}), wrong("result.resources", "an array")),
    ];
    for (resources, expected) in cases {
        assert_eq!(list(resources.clone()), Err(expected), "{resources}");
    }
    assert_eq!(parse_resources_list(&json!({}), 10), Err(missing("result.resources")));
    assert_eq!(
        parse_resources_list(&json!({"resources": [], "nextCursor": 3}), 10),
        Err(wrong("result.nextCursor", "a string"))
    );
}

#[test]
fn resources_page_over_the_cap_is_rejected() {
    let resources: Vec<Value> = (0..11).map(|i| json!({"uri": format!("file:///{i}"), "name": "r"})).collect();
    assert_eq!(list(Value::Array(resources.clone())), Err(too_many(11, 10)));
    assert_eq!(parse_resources_list(&json!({ "resources": resources }), 11).map(|p| p.resources.len()), Ok(11));
}

fn too_many(count: usize, limit: usize) -> ProtocolError {
    ProtocolError::TooMany { at: "result.resources".into(), count, limit }
}

#[test]
fn resources_list_may_not_be_input_required() {
    let result = json!({"resultType": "input_required", "requestState": "s", "resources": []});
    assert_eq!(
        parse_resources_list(&result, 10),
        Err(invalid("result.resultType", "resources/list may not answer input_required"))
    );
}

#[test]
fn malformed_read_contents_are_rejected_with_their_path() {
    let cases = [
        (json!([{"text": "hi"}]), missing("result.contents[0].uri")),
        (json!([{"uri": "file:///a"}]), invalid("result.contents[0]", "has neither text nor blob")),
        (
            json!([{"uri": "file:///a", "text": "hi", "blob": "aGk="}]),
            invalid("result.contents[0]", "has both text and blob"),
        ),
        (json!([{"uri": "file:///a", "text": 5}]), wrong("result.contents[0].text", "a string")),
        (json!([{"uri": "file:///a", "blob": [104, 105]}]), wrong("result.contents[0].blob", "a string")),
        (json!([{"uri": "file:///a", "text": null}]), wrong("result.contents[0].text", "a string")),
        (json!([{"uri": 1, "text": "hi"}]), wrong("result.contents[0].uri", "a string")),
        (json!([{"uri": "file:///a", "mimeType": 1, "text": "hi"}]), wrong("result.contents[0].mimeType", "a string")),
        (json!([{"uri": "file:///a", "text": "hi", "_meta": []}]), wrong("result.contents[0]._meta", "an object")),
        (json!([{"uri": "file:///a", "text": "ok"}, "x"]), wrong("result.contents[1]", "an object")),
        (json!({"uri": "file:///a", "text": "hi"}), wrong("result.contents", "an array")),
    ];
    for (contents, expected) in cases {
        assert_eq!(read(contents.clone()), Err(expected), "{contents}");
    }
    assert_eq!(parse_read_resource_result(&json!({})), Err(missing("result.contents")));
    assert_eq!(parse_read_resource_result(&json!([])), Err(wrong("result", "an object")));
}

#[test]
fn read_results_with_bad_result_type_or_cache_hints_are_rejected() {
    let unknown = json!({"resultType": "task", "contents": []});
    assert_eq!(parse_read_resource_result(&unknown), Err(ProtocolError::UnknownResultType("task".into())));
    let empty_input = json!({"resultType": "input_required"});
    assert!(matches!(parse_read_resource_result(&empty_input), Err(ProtocolError::InvalidValue { .. })));
    let bad_ttl = json!({"contents": [], "ttlMs": -5});
    assert_eq!(parse_read_resource_result(&bad_ttl), Err(wrong("result.ttlMs", "a non-negative integer")));
}

#[test]
fn an_empty_read_and_an_empty_list_are_valid() {
    assert_eq!(read(json!([])), Ok(0));
    assert_eq!(list(json!([])), Ok(0));
}
