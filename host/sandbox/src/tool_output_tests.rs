//! Every rule of `tool_output`, on hand-made guest answers.

use super::{MAX_CONTENT_BLOCKS, MAX_DESCRIPTION_BYTES, MAX_SCHEMA_BYTES, MAX_TOOLS, check_definitions, check_outcome};
use crate::bindings::{CallOutcome as GuestOutcome, ToolDefinition as GuestDefinition};
use crate::error::SandboxError;

const CAP: usize = 1 << 20;

fn def(name: &str, schema: &str) -> GuestDefinition {
    GuestDefinition { name: name.into(), description: "does things".into(), input_schema: schema.into() }
}

fn invalid_definitions(list: Vec<GuestDefinition>) -> String {
    match check_definitions(list, CAP) {
        Err(SandboxError::InvalidOutput(why)) => why,
        other => panic!("expected InvalidOutput, got {other:?}"),
    }
}

fn outcome(content: &str, structured: Option<&str>) -> GuestOutcome {
    GuestOutcome { content: content.into(), structured_content: structured.map(str::to_owned), is_error: false }
}

fn invalid_outcome(content: &str, structured: Option<&str>) -> String {
    match check_outcome(outcome(content, structured), CAP) {
        Err(SandboxError::InvalidOutput(why)) => why,
        other => panic!("expected InvalidOutput, got {other:?}"),
    }
}

#[test]
fn well_formed_definitions_are_parsed() {
    let list = check_definitions(vec![def("calendar.query-v2_x", r#"{"type":"object"}"#)], CAP).unwrap();
    assert_eq!(list[0].name, "calendar.query-v2_x");
    assert_eq!(list[0].input_schema, serde_json::json!({"type": "object"}));
}

#[test]
fn malformed_names_are_refused_and_quoted_log_safe() {
    for name in ["", "has space", "semi;colon", "ünï", &"x".repeat(129)] {
        let why = invalid_definitions(vec![def(name, "{}")]);
        assert!(why.contains("a name must be 1 to 128"), "{name:?}: {why}");
    }
    let why = invalid_definitions(vec![def("evil\u{1b}[2J", "{}")]);
    assert!(!why.contains('\u{1b}'), "{why:?}");
}

#[test]
fn duplicate_names_are_refused() {
    let why = invalid_definitions(vec![def("a", "{}"), def("a", "{}")]);
    assert!(why.contains("listed twice"), "{why}");
}

#[test]
fn schemas_must_be_json_objects() {
    assert!(invalid_definitions(vec![def("a", "[]")]).contains("not a JSON object"));
    assert!(invalid_definitions(vec![def("a", "{")]).contains("not JSON"));
    assert!(invalid_definitions(vec![def("a", "\"object\"")]).contains("not a JSON object"));
}

#[test]
fn lists_descriptions_and_schemas_are_bounded() {
    let many = (0..=MAX_TOOLS).map(|i| def(&format!("t{i}"), "{}")).collect();
    assert!(invalid_definitions(many).contains("at most 256"));
    let long = GuestDefinition { description: "d".repeat(MAX_DESCRIPTION_BYTES + 1), ..def("a", "{}") };
    assert!(invalid_definitions(vec![long]).contains("description is over"));
    let schema = format!(r#"{{"description":"{}"}}"#, "s".repeat(MAX_SCHEMA_BYTES));
    assert!(invalid_definitions(vec![def("a", &schema)]).contains("input schema is over"));
    // 1 + 11 + 2 bytes: name, description, schema.
    let result = check_definitions(vec![def("a", "{}")], 13);
    assert!(matches!(result, Err(SandboxError::OutputTooLarge { size: 14, limit: 13 })), "{result:?}");
}

#[test]
fn a_well_formed_outcome_is_parsed() {
    let checked = check_outcome(outcome(r#"[{"type":"text","text":"hi"}]"#, Some(r#"{"events":[]}"#)), CAP).unwrap();
    assert_eq!(checked.content, serde_json::json!([{"type": "text", "text": "hi"}]));
    assert_eq!(checked.structured_content, Some(serde_json::json!({"events": []})));
    assert!(check_outcome(outcome("[]", None), CAP).unwrap().structured_content.is_none());
}

#[test]
fn content_must_be_an_array_of_typed_blocks() {
    assert!(invalid_outcome(r#"{"type":"text"}"#, None).contains("not a JSON array"));
    assert!(invalid_outcome("[", None).contains("not JSON"));
    assert!(invalid_outcome(r#"[{"text":"hi"}]"#, None).contains("block 0"));
    assert!(invalid_outcome(r#"[{"type":"text","text":"a"}, "b"]"#, None).contains("block 1"));
    assert!(invalid_outcome(r#"[{"type":7}]"#, None).contains("block 0"));
    let many = format!("[{}]", vec![r#"{"type":"text","text":""}"#; MAX_CONTENT_BLOCKS + 1].join(","));
    assert!(invalid_outcome(&many, None).contains("at most 1024"));
}

#[test]
fn structured_content_must_be_an_object() {
    assert!(invalid_outcome("[]", Some("[1]")).contains("structured content is not a JSON object"));
    assert!(invalid_outcome("[]", Some("{")).contains("structured content is not JSON"));
}

#[test]
fn an_outcome_over_the_output_cap_is_refused_before_parsing() {
    let result = check_outcome(outcome("[]", Some(&"x".repeat(100))), 50);
    assert!(matches!(result, Err(SandboxError::OutputTooLarge { size: 102, limit: 50 })), "{result:?}");
}
