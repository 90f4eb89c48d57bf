//! Golden messages: the builders must reproduce the files under `tests/golden/` exactly
//! (as JSON values), and every file must decode, parse, and re-serialise unchanged.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use wasmgate_core::Contents;
use wasmgate_protocol::{
    ACKNOWLEDGED, CacheScope, ClientContext, ClientInfo, ContentBlock, Id, Message, MessageLimits, ProtocolVersion,
    ResultKind, SUPPORTED, SubscriptionFilter, check_initialize_version, codes, decode, parse_acknowledged,
    parse_call_tool_result, parse_discover_result, parse_initialize_result, parse_message, parse_read_resource_result,
    parse_resources_list, parse_result_kind, parse_tools_list, parse_unsupported_version, subscription_id,
};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn golden(rel: &str) -> Value {
    let bytes = std::fs::read(golden_dir().join(rel)).expect(rel);
    parse_message(&bytes, MessageLimits::DEFAULT).expect(rel)
}

fn message(rel: &str) -> Message {
    let bytes = std::fs::read(golden_dir().join(rel)).expect(rel);
    decode(&bytes, MessageLimits::DEFAULT).expect(rel)
}

fn result_of(rel: &str) -> Value {
    match message(rel) {
        Message::Response(r) => Value::Object(r.result),
        other => panic!("{rel} is not a result response: {other:?}"),
    }
}

fn obj(value: Value) -> Map<String, Value> {
    value.as_object().cloned().expect("an object")
}

fn ctx(version: ProtocolVersion) -> ClientContext {
    let caps = if version.is_stateless() || version == ProtocolVersion::V2025_11_25 {
        obj(json!({"elicitation": {"form": {}}}))
    } else {
        Map::new()
    };
    ClientContext::new(version, ClientInfo::new("wasmgate", "0.1.0"), caps)
}

#[test]
fn every_golden_file_decodes_and_reserialises_exactly() {
    let mut seen = 0;
    for era in std::fs::read_dir(golden_dir()).unwrap() {
        for file in std::fs::read_dir(era.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            let value = parse_message(&bytes, MessageLimits::DEFAULT).unwrap();
            let message = decode(&bytes, MessageLimits::DEFAULT).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(message.into_value(), value, "{}", path.display());
            seen += 1;
        }
    }
    assert!(seen >= 20, "only {seen} golden files found");
}

#[test]
fn builders_reproduce_the_2026_07_28_requests_exactly() {
    let c = ctx(ProtocolVersion::V2026_07_28);
    let location = obj(json!({"location": "New York"}));
    let cases = [
        ("discover_request.json", c.discover(&Id::from("discover-1")).unwrap()),
        ("tools_list_request.json", c.tools_list(&Id::Int(2), Some("eyJwYWdlIjogMn0="))),
        (
            "tools_call_request.json",
            c.tools_call(&Id::Int(3), "get_weather", Some(location), Some(&"progress-3".into())),
        ),
        ("resources_list_request.json", c.resources_list(&"res-1".into(), None)),
        ("resources_read_request.json", c.resources_read(&"res-2".into(), "file:///project/src/main.rs")),
        ("prompts_list_request.json", c.prompts_list(&"prompts-1".into(), Some("p2"))),
        ("cancelled_notification.json", c.cancelled(&Id::Int(3), Some("User requested cancellation"))),
        ("subscriptions_listen_request.json", c.subscriptions_listen(&"listen-1".into(), &listen_filter()).unwrap()),
    ];
    for (file, built) in cases {
        assert_eq!(built, golden(&format!("2026-07-28/{file}")), "{file}");
    }
}

#[test]
fn builders_reproduce_the_2025_11_25_handshake_and_requests_exactly() {
    let c = ctx(ProtocolVersion::V2025_11_25);
    let location = obj(json!({"location": "New York"}));
    assert_eq!(c.initialize(&Id::Int(1)).unwrap(), golden("2025-11-25/initialize_request.json"));
    assert_eq!(c.initialized().unwrap(), golden("2025-11-25/initialized_notification.json"));
    assert_eq!(c.tools_list(&Id::Int(2), None), golden("2025-11-25/tools_list_request.json"));
    assert_eq!(
        c.tools_call(&Id::Int(3), "get_weather", Some(location), Some(&Id::Int(17))),
        golden("2025-11-25/tools_call_request.json")
    );
}

#[test]
fn builder_reproduces_the_2024_11_05_initialize_exactly() {
    let c = ctx(ProtocolVersion::V2024_11_05);
    assert_eq!(c.initialize(&Id::Int(0)).unwrap(), golden("2024-11-05/initialize_request.json"));
}

#[test]
fn stateless_meta_is_merged_into_existing_meta_and_reserved_keys_are_ours() {
    let c = ctx(ProtocolVersion::V2026_07_28);
    let params = obj(json!({
        "_meta": {"traceparent": "00-abc-01", "io.modelcontextprotocol/protocolVersion": "1999-01-01"},
        "name": "x"
    }));
    let built = c.request(&Id::Int(9), "prompts/get", params).unwrap();
    let meta = &built["params"]["_meta"];
    assert_eq!(meta["traceparent"], "00-abc-01");
    assert_eq!(meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
    assert_eq!(meta["io.modelcontextprotocol/clientInfo"], json!({"name": "wasmgate", "version": "0.1.0"}));
    assert_eq!(built["params"]["name"], "x");
}

#[test]
fn discover_result_is_parsed_and_negotiated_to_the_highest_common_version() {
    let discover = parse_discover_result(&result_of("2026-07-28/discover_result.json")).unwrap();
    assert_eq!(discover.supported_versions, ["2026-07-28", "2025-11-25", "2027-01-01"]);
    assert_eq!(discover.negotiate(&SUPPORTED), Some(ProtocolVersion::V2026_07_28));
    assert_eq!(discover.negotiate(&[ProtocolVersion::V2025_06_18]), None);
    assert_eq!(discover.cache.ttl_ms, Some(3_600_000));
    assert_eq!(discover.cache.cache_scope, Some(CacheScope::Public));
    assert_eq!(discover.server_info.as_ref().map(|s| s.name.as_str()), Some("ExampleServer"));
    assert_eq!(discover.instructions.as_deref(), Some("This server provides weather utilities."));
    assert!(discover.capabilities.contains_key("tools"));
}

#[test]
fn input_required_answer_and_retry_reproduce_the_golden_retry() {
    let c = ctx(ProtocolVersion::V2026_07_28);
    let original = golden("2026-07-28/tools_call_request.json");
    let answer = parse_call_tool_result(&result_of("2026-07-28/tools_call_input_required.json")).unwrap();
    let ResultKind::InputRequired(required) = &answer.kind else { panic!("expected input_required: {answer:?}") };
    assert_eq!(required.request_state.as_deref(), Some("eyJsb2NhdGlvbiI6Ik5ldyBZb3JrIn0..."));
    assert!(required.input_requests.as_ref().unwrap().contains_key("github_login"));
    assert!(answer.content.is_empty() && !answer.is_error);

    let responses = obj(json!({"github_login": {"action": "accept", "content": {"name": "octocat"}}}));
    let retry = c.retry_with_input(&original, &Id::Int(4), required, Some(responses)).unwrap();
    assert_eq!(retry, golden("2026-07-28/tools_call_retry_request.json"));
}

#[test]
fn tools_list_2026_page_is_parsed_with_schemas_and_cache_hints() {
    let page = parse_tools_list(&result_of("2026-07-28/tools_list_result.json"), 10).unwrap();
    assert_eq!(page.tools.len(), 2);
    let weather = &page.tools[0];
    assert_eq!(weather.name, "get_weather");
    assert_eq!(weather.title.as_deref(), Some("Weather Information Provider"));
    assert_eq!(weather.input_schema["required"], json!(["location"]));
    assert_eq!(weather.annotations.as_ref().unwrap()["readOnlyHint"], true);
    assert!(weather.raw.get("icons").is_some(), "raw keeps fields the view does not type");
    assert_eq!(page.tools[1].output_schema.as_ref().unwrap()["type"], "array");
    assert_eq!(page.next_cursor.as_deref(), Some("next-page-cursor"));
    assert_eq!(page.cache.cache_scope, Some(CacheScope::Private));
}

#[test]
fn tools_list_2025_page_without_cache_hints_is_parsed() {
    let page = parse_tools_list(&result_of("2025-11-25/tools_list_result.json"), 10).unwrap();
    assert_eq!(page.tools[0].name, "get_weather");
    assert_eq!(page.tools[0].raw["execution"]["taskSupport"], "optional");
    assert_eq!((page.next_cursor, page.cache.ttl_ms, page.cache.cache_scope), (None, None, None));
}

#[test]
fn resources_list_2026_page_is_parsed_with_optional_fields_and_cache_hints() {
    let page = parse_resources_list(&result_of("2026-07-28/resources_list_result.json"), 10).unwrap();
    let main = &page.resources[0];
    assert_eq!((main.uri.as_str(), main.name.as_str()), ("file:///project/src/main.rs", "main.rs"));
    assert_eq!(main.title.as_deref(), Some("Rust Software Application Main File"));
    assert_eq!(main.mime_type.as_deref(), Some("text/x-rust"));
    assert_eq!(main.size, Some(1024));
    let entry = &page.raw["resources"][0];
    assert_eq!(entry["annotations"]["priority"], 0.8, "the page's JSON keeps what the entries do not type");
    assert!(entry.get("icons").is_some());
    let logo = &page.resources[1];
    assert_eq!((logo.title.as_ref(), logo.description.as_ref(), logo.size), (None, None, None));
    assert_eq!(page.next_cursor.as_deref(), Some("eyJwYWdlIjogM30="));
    assert_eq!((page.cache.ttl_ms, page.cache.cache_scope), (Some(60_000), Some(CacheScope::Private)));
}

#[test]
fn resources_2025_list_and_read_without_result_type_are_parsed() {
    let page = parse_resources_list(&result_of("2025-11-25/resources_list_result.json"), 10).unwrap();
    assert_eq!(page.resources[0].uri, "file:///project/README.md");
    assert_eq!((page.next_cursor, page.cache.ttl_ms), (None, None));
    let read = parse_read_resource_result(&result_of("2025-11-25/resources_read_result.json")).unwrap();
    assert_eq!(read.kind, ResultKind::Complete);
    assert!(matches!(&read.contents[..], [Contents::Text { text, mime_type: None, .. }] if text == "# project\n"));
}

#[test]
fn read_resource_result_keeps_text_and_blob_entries_and_their_raw_json() {
    let result = result_of("2026-07-28/resources_read_result.json");
    let read = parse_read_resource_result(&result).unwrap();
    assert_eq!(read.kind, ResultKind::Complete);
    match &read.contents[..] {
        [Contents::Text { text, .. }, Contents::Blob { blob, raw, .. }] => {
            assert!(text.starts_with("fn main()"));
            assert_eq!(blob, "iVBORw0KGgo=");
            assert_eq!(raw["_meta"]["com.example/origin"], "assets");
        }
        other => panic!("expected text then blob, got {other:?}"),
    }
    assert_eq!(read.contents[1].mime_type(), Some("image/png"));
    assert_eq!(read.contents[0].uri(), "file:///project/src/main.rs");
    assert_eq!(read.cache.cache_scope, Some(CacheScope::Private));
    assert_eq!(read.raw, result);
}

#[test]
fn read_resource_may_answer_input_required_with_no_contents() {
    let read = parse_read_resource_result(&result_of("2026-07-28/resources_read_input_required.json")).unwrap();
    let ResultKind::InputRequired(required) = read.kind else { panic!("expected input_required") };
    assert_eq!(required.request_state.as_deref(), Some("cmVhZC1tYWluLnJz"));
    assert!(read.contents.is_empty());
}

#[test]
fn call_tool_result_content_blocks_are_typed_and_unknown_types_are_kept() {
    let result = parse_call_tool_result(&result_of("2026-07-28/tools_call_result.json")).unwrap();
    assert_eq!(result.kind, ResultKind::Complete);
    assert!(!result.is_error);
    assert_eq!(result.structured_content, Some(json!({"temperature": 72})));
    let kinds: Vec<&str> = result.content.iter().map(ContentBlock::kind).collect();
    assert_eq!(kinds, ["text", "image", "audio", "resource_link", "resource", "hologram"]);
    assert!(matches!(result.content[0], ContentBlock::Text(_)));
    assert_eq!(result.content[0].text(), Some("Current weather in New York: 72°F, partly cloudy"));
    assert_eq!(result.content[1].mime_type(), Some("image/png"));
    assert!(matches!(result.content[2], ContentBlock::Audio(_)));
    assert_eq!(result.content[3].uri(), Some("file:///forecast.md"));
    assert_eq!(result.content[4].text(), Some("bring an umbrella"));
    assert!(matches!(&result.content[5], ContentBlock::Unknown(v) if v["frames"] == 3));
}

#[test]
fn legacy_call_tool_result_without_result_type_is_complete() {
    let result = parse_call_tool_result(&result_of("2025-11-25/tools_call_result.json")).unwrap();
    assert_eq!(result.kind, ResultKind::Complete);
    assert_eq!(result.content[0].text(), Some("72°F"));
}

#[test]
fn tool_failure_is_a_result_with_is_error_true() {
    let result = parse_call_tool_result(&result_of("2026-07-28/tools_call_error_result.json")).unwrap();
    assert!(result.is_error);
    assert_eq!(result.content.len(), 1);
}

#[test]
fn unknown_tool_is_a_jsonrpc_invalid_params_error() {
    let Message::ErrorResponse(e) = message("2026-07-28/unknown_tool_error.json") else { panic!() };
    assert_eq!((e.id, e.error.code), (Some(Id::Int(6)), codes::INVALID_PARAMS));
}

#[test]
fn unsupported_version_error_names_the_version_to_retry_with() {
    let Message::ErrorResponse(e) = message("2026-07-28/unsupported_version_error.json") else { panic!() };
    assert!(codes::is_modern_error(e.error.code));
    let data = parse_unsupported_version(&e.error).unwrap();
    assert_eq!(data.requested, "2026-07-28");
    assert_eq!(data.retry_with(&SUPPORTED), Some(ProtocolVersion::V2025_11_25));
}

#[test]
fn initialize_result_is_parsed_and_its_version_checked() {
    let init = parse_initialize_result(&result_of("2025-11-25/initialize_result.json")).unwrap();
    assert_eq!(check_initialize_version(&SUPPORTED, &init.protocol_version), Ok(ProtocolVersion::V2025_11_25));
    assert_eq!(init.server_info.name, "ExampleServer");
    assert_eq!(init.server_info.title.as_deref(), Some("Example Server Display Name"));
    assert_eq!(init.server_info.raw["websiteUrl"], "https://example.com/server");
    assert_eq!(init.instructions.as_deref(), Some("Optional instructions for the client"));
    assert!(init.capabilities.contains_key("logging"));
}

fn listen_filter() -> SubscriptionFilter {
    SubscriptionFilter {
        resource_subscriptions: vec!["file:///project/config.json".into()],
        ..SubscriptionFilter::tools()
    }
}

#[test]
fn a_subscription_is_acknowledged_stamped_and_closed_under_its_listen_request_id() {
    let Message::Notification(ack) = message("2026-07-28/subscriptions_acknowledged.json") else { panic!() };
    assert_eq!(ack.method, ACKNOWLEDGED);
    let ack = parse_acknowledged(&ack.params.unwrap()).unwrap();
    assert_eq!((ack.subscription_id, ack.notifications), ("listen-1".into(), listen_filter()));

    let Message::Notification(changed) = message("2026-07-28/tools_list_changed_notification.json") else { panic!() };
    assert_eq!(subscription_id(&changed.params.unwrap()), Ok(Some("listen-1".into())));

    let closed = result_of("2026-07-28/subscriptions_listen_closed.json");
    assert_eq!(parse_result_kind(&closed).unwrap(), ResultKind::Complete);
    assert_eq!(subscription_id(closed.as_object().unwrap()), Ok(Some("listen-1".into())));
    assert!(ctx(ProtocolVersion::V2025_11_25).subscriptions_listen(&Id::Int(1), &listen_filter()).is_err());
}

#[test]
fn error_response_with_null_id_round_trips_as_null() {
    let Message::ErrorResponse(e) = message("2024-11-05/parse_error_null_id.json") else { panic!() };
    assert_eq!((e.id.as_ref(), e.id_was_null, e.error.code), (None, true, codes::PARSE_ERROR));
}
