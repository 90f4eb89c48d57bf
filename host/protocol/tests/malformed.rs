//! Malformed and hostile input: every case names the exact `ProtocolError` it must produce.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Map, Value, json};
use wasmgate_protocol::{
    ClientContext, ClientInfo, Id, InputRequired, Message, MessageLimits, ProtocolError, ProtocolVersion, decode,
    parse_call_tool_result, parse_discover_result, parse_initialize_result, parse_message, parse_tools_list,
};

fn bad_id(reason: &str) -> ProtocolError {
    ProtocolError::BadId(reason.into())
}

/// `(name, raw message, expected error)`; every row must be rejected with exactly that error.
fn envelope_cases() -> Vec<(&'static str, &'static str, ProtocolError)> {
    use ProtocolError::*;
    vec![
        ("batch", r#"[{"jsonrpc":"2.0","method":"a"}]"#, Batch),
        ("empty batch", "[]", Batch),
        ("string", r#""hello""#, NotAnObject { found: "a string" }),
        ("null", "null", NotAnObject { found: "null" }),
        ("number", "42", NotAnObject { found: "a number" }),
        ("jsonrpc 1.0", r#"{"jsonrpc":"1.0","id":1,"method":"a"}"#, BadVersion(r#"expected "2.0", got "1.0""#.into())),
        (
            "jsonrpc number",
            r#"{"jsonrpc":2.0,"id":1,"method":"a"}"#,
            BadVersion(r#"expected the string "2.0", got a number"#.into()),
        ),
        ("jsonrpc missing", r#"{"id":1,"method":"a"}"#, BadVersion("member is missing".into())),
        ("unknown member", r#"{"jsonrpc":"2.0","id":1,"method":"a","extra":true}"#, UnknownMember("extra".into())),
        ("id float", r#"{"jsonrpc":"2.0","id":1.5,"method":"a"}"#, bad_id("1.5 is not an integer")),
        ("id integral float", r#"{"jsonrpc":"2.0","id":1.0,"method":"a"}"#, bad_id("1.0 is not an integer")),
        ("id exponent", r#"{"jsonrpc":"2.0","id":1e2,"method":"a"}"#, bad_id("100.0 is not an integer")),
        ("id negative zero", r#"{"jsonrpc":"2.0","id":-0,"method":"a"}"#, bad_id("-0.0 is not an integer")),
        (
            "id bool",
            r#"{"jsonrpc":"2.0","id":true,"method":"a"}"#,
            bad_id("expected a string or an integer, got a boolean"),
        ),
        ("id null in request", r#"{"jsonrpc":"2.0","id":null,"method":"a"}"#, bad_id("null is not allowed here")),
        (
            "id object",
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"a"}"#,
            bad_id("expected a string or an integer, got an object"),
        ),
        (
            "id array",
            r#"{"jsonrpc":"2.0","id":[1],"result":{}}"#,
            bad_id("expected a string or an integer, got an array"),
        ),
        (
            "id beyond i64",
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"result":{}}"#,
            bad_id("integer 18446744073709551615 does not fit in a signed 64-bit id"),
        ),
        ("id null in result", r#"{"jsonrpc":"2.0","id":null,"result":{}}"#, bad_id("null is not allowed here")),
        (
            "result without id",
            r#"{"jsonrpc":"2.0","result":{}}"#,
            bad_id("a result response must carry the request's id"),
        ),
        (
            "method number",
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
            BadMethod("expected a string, got a number".into()),
        ),
        ("method empty", r#"{"jsonrpc":"2.0","method":""}"#, BadMethod("empty string".into())),
        ("no method result or error", r#"{"jsonrpc":"2.0"}"#, MissingMethod),
        (
            "params array",
            r#"{"jsonrpc":"2.0","id":1,"method":"a","params":[1,2]}"#,
            BadParams("MCP params are an object, got an array (by-position params)".into()),
        ),
        (
            "params null",
            r#"{"jsonrpc":"2.0","method":"a","params":null}"#,
            BadParams("expected an object, got null".into()),
        ),
        (
            "request with result",
            r#"{"jsonrpc":"2.0","id":1,"method":"a","result":{}}"#,
            MixedKinds(r#""method" together with "result" or "error""#.into()),
        ),
        (
            "params without method",
            r#"{"jsonrpc":"2.0","id":1,"params":{},"result":{}}"#,
            MixedKinds(r#""params" without "method""#.into()),
        ),
        (
            "both result and error",
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#,
            BothResultAndError,
        ),
        ("neither result nor error", r#"{"jsonrpc":"2.0","id":1}"#, NeitherResultNorError),
        (
            "result array",
            r#"{"jsonrpc":"2.0","id":1,"result":[]}"#,
            BadResult("expected an object, got an array".into()),
        ),
        (
            "error string",
            r#"{"jsonrpc":"2.0","id":1,"error":"boom"}"#,
            BadError("expected an object, got a string".into()),
        ),
        (
            "error code float",
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}"#,
            BadError("code 1.5 is not an integer".into()),
        ),
        (
            "error code string",
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":"1","message":"m"}}"#,
            BadError("code must be an integer, got a string".into()),
        ),
        (
            "error code missing",
            r#"{"jsonrpc":"2.0","id":1,"error":{"message":"m"}}"#,
            BadError("code is missing".into()),
        ),
        (
            "error message missing",
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1}}"#,
            BadError("message is missing".into()),
        ),
        (
            "error extra member",
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","stack":"..."}}"#,
            BadError(r#"unknown member "stack" (allowed: code, message, data)"#.into()),
        ),
        ("duplicate id", r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"a"}"#, DuplicateKey { key: "id".into() }),
        (
            "duplicate nested key",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe","name":"rm_rf"}}"#,
            DuplicateKey { key: "name".into() },
        ),
    ]
}

#[test]
fn every_malformed_envelope_is_rejected_with_its_exact_error() {
    for (name, text, expected) in envelope_cases() {
        assert_eq!(decode(text.as_bytes(), MessageLimits::DEFAULT), Err(expected), "case {name:?}: {text}");
    }
}

#[test]
fn invalid_json_texts_are_rejected_as_invalid_json() {
    let cases: [&[u8]; 12] = [
        b"",
        b"   ",
        b"{",
        br#"{"jsonrpc":"2.0","method":"a"} trailing"#,
        br#"{"jsonrpc":"2.0","method":"a"}{"jsonrpc":"2.0","method":"b"}"#,
        br#"{"jsonrpc":"2.0","id":NaN,"method":"a"}"#,
        br#"{"jsonrpc":"2.0","id":Infinity,"method":"a"}"#,
        br#"{"jsonrpc":"2.0","id":-Infinity,"method":"a"}"#,
        br#"{"jsonrpc":"2.0","id":1e400,"method":"a"}"#,
        br#"{"jsonrpc":"2.0","method":"a\ud800"}"#,
        b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"method\":\"a\"}",
        b"{'jsonrpc':'2.0'}",
    ];
    for text in cases {
        let got = decode(text, MessageLimits::DEFAULT);
        assert!(matches!(got, Err(ProtocolError::InvalidJson(_))), "{:?} gave {got:?}", String::from_utf8_lossy(text));
    }
}

#[test]
fn hundred_thousand_deep_nesting_is_rejected_by_the_depth_check_without_stack_overflow() {
    let arrays = "[".repeat(100_000);
    assert_eq!(parse_message(arrays.as_bytes(), MessageLimits::DEFAULT), Err(ProtocolError::TooDeep { limit: 64 }));
    let objects = r#"{"a":"#.repeat(100_000);
    assert_eq!(parse_message(objects.as_bytes(), MessageLimits::DEFAULT), Err(ProtocolError::TooDeep { limit: 64 }));
    let inside_params =
        format!(r#"{{"jsonrpc":"2.0","method":"a","params":{{"x":{}1{}}}}}"#, "[".repeat(70), "]".repeat(70));
    assert_eq!(decode(inside_params.as_bytes(), MessageLimits::DEFAULT), Err(ProtocolError::TooDeep { limit: 64 }));
}

#[test]
fn brackets_inside_strings_do_not_count_as_nesting() {
    let text =
        format!(r#"{{"jsonrpc":"2.0","method":"a","params":{{"s":"{}\"{}"}}}}"#, "[".repeat(1000), "{".repeat(1000));
    assert!(matches!(decode(text.as_bytes(), MessageLimits::DEFAULT), Ok(Message::Notification(_))));
}

#[test]
fn ten_megabyte_string_is_rejected_by_size_before_parsing() {
    let text = format!(r#"{{"jsonrpc":"2.0","method":"a","params":{{"s":"{}"}}}}"#, "x".repeat(10 * 1024 * 1024));
    let got = decode(text.as_bytes(), MessageLimits::DEFAULT);
    assert_eq!(got, Err(ProtocolError::TooLarge { size: text.len(), limit: 4 * 1024 * 1024 }));
}

#[test]
fn non_utf8_bytes_are_rejected_with_their_offset() {
    let mut text = br#"{"jsonrpc":"2.0","method":"a"#.to_vec();
    let offset = text.len();
    text.extend_from_slice(b"\xff\xfe\"}");
    assert_eq!(decode(&text, MessageLimits::DEFAULT), Err(ProtocolError::NotUtf8 { valid_up_to: offset }));
    assert_eq!(decode(b"\xc3\x28", MessageLimits::DEFAULT), Err(ProtocolError::NotUtf8 { valid_up_to: 0 }));
}

#[test]
fn duplicate_keys_are_rejected_not_resolved_last_wins() {
    // serde_json alone would keep the last value ("rm_rf"); other parsers keep the first.
    let raw: Value = serde_json::from_str(r#"{"name":"safe","name":"rm_rf"}"#).unwrap();
    assert_eq!(raw["name"], "rm_rf");
    let text = r#"{"jsonrpc":"2.0","method":"a","params":{"name":"safe","\u006eame":"rm_rf"}}"#;
    assert_eq!(
        decode(text.as_bytes(), MessageLimits::DEFAULT),
        Err(ProtocolError::DuplicateKey { key: "name".into() })
    );
}

#[test]
fn limits_are_configurable() {
    let tight = MessageLimits { max_message_bytes: 64, max_depth: 2 };
    assert!(decode(br#"{"jsonrpc":"2.0","method":"a","params":{}}"#, tight).is_ok());
    assert_eq!(
        decode(br#"{"jsonrpc":"2.0","method":"a","params":{"x":[]}}"#, tight),
        Err(ProtocolError::TooDeep { limit: 2 })
    );
    let long = format!(r#"{{"jsonrpc":"2.0","method":"{}"}}"#, "a".repeat(64));
    assert_eq!(decode(long.as_bytes(), tight), Err(ProtocolError::TooLarge { size: long.len(), limit: 64 }));
}

#[test]
fn valid_edge_cases_are_accepted() {
    let ok = |text: &str| decode(text.as_bytes(), MessageLimits::DEFAULT).unwrap_or_else(|e| panic!("{text}: {e}"));
    assert_eq!(ok(r#"{"jsonrpc":"2.0","id":-9223372036854775808,"method":"a"}"#).id(), Some(&Id::Int(i64::MIN)));
    assert_eq!(ok(r#"{"jsonrpc":"2.0","id":"","method":"a"}"#).id(), Some(&Id::String(String::new())));
    assert!(
        matches!(ok(r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}"#), Message::ErrorResponse(e) if e.id.is_none() && !e.id_was_null)
    );
    assert!(
        matches!(ok(r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":null}}"#), Message::ErrorResponse(e) if e.error.data == Some(Value::Null))
    );
}

#[test]
fn ids_of_different_types_are_different_and_display_as_json() {
    assert_ne!(Id::Int(1), Id::from("1"));
    assert_eq!(Id::Int(1).to_string(), "1");
    assert_eq!(Id::from("a\"b").to_string(), r#""a\"b""#);
}

fn tools_result(tools: Value) -> Value {
    json!({ "tools": tools })
}

#[test]
fn malformed_tool_definitions_are_rejected_with_their_path() {
    use ProtocolError::*;
    let schema = json!({"type": "object"});
    let cases = [
        (json!([{"inputSchema": schema}]), MissingField { at: "result.tools[0].name".into() }),
        (
            json!([{"name": "", "inputSchema": schema}]),
            InvalidValue { at: "result.tools[0].name".into(), reason: "is empty".into() },
        ),
        (
            json!([{"name": 5, "inputSchema": schema}]),
            WrongType { at: "result.tools[0].name".into(), expected: "a string" },
        ),
        (json!([{"name": "a"}]), MissingField { at: "result.tools[0].inputSchema".into() }),
        (
            json!([{"name": "a", "inputSchema": true}]),
            WrongType { at: "result.tools[0].inputSchema".into(), expected: "an object" },
        ),
        (json!([{"name": "a", "inputSchema": {}}]), MissingField { at: "result.tools[0].inputSchema.type".into() }),
        (
            json!([{"name": "a", "inputSchema": {"type": "array"}}]),
            InvalidValue {
                at: "result.tools[0].inputSchema.type".into(),
                reason: r#"must be "object", got "array""#.into(),
            },
        ),
        (
            json!([{"name": "a", "inputSchema": schema, "outputSchema": "x"}]),
            WrongType { at: "result.tools[0].outputSchema".into(), expected: "an object" },
        ),
        (
            json!([{"name": "a", "inputSchema": schema, "description": null}]),
            WrongType { at: "result.tools[0].description".into(), expected: "a string" },
        ),
    ];
    // A bad tool is left out alone, with what is wrong; the page stands.
    for (tools, expected) in cases {
        let page = parse_tools_list(&tools_result(tools.clone()), 10).unwrap();
        assert!(page.tools.is_empty(), "{tools}");
        assert_eq!(page.rejected, [expected], "{tools}");
    }
    let mixed = json!([{"name": "bad", "inputSchema": {"type": "array"}}, {"name": "good", "inputSchema": schema}]);
    let page = parse_tools_list(&tools_result(mixed), 10).unwrap();
    assert_eq!(page.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["good"]);
    assert_eq!(page.rejected.len(), 1);
    // What breaks the page itself still refuses it.
    let duplicate = json!([{"name": "a", "inputSchema": schema}, {"name": "a", "inputSchema": schema}]);
    assert_eq!(
        parse_tools_list(&tools_result(duplicate), 10),
        Err(DuplicateName { at: "result.tools".into(), name: "a".into() })
    );
    assert_eq!(
        parse_tools_list(&tools_result(json!({"name": "a"})), 10),
        Err(WrongType { at: "result.tools".into(), expected: "an array" })
    );
    assert_eq!(parse_tools_list(&json!({}), 10), Err(MissingField { at: "result.tools".into() }));
}

#[test]
fn tools_page_over_the_cap_is_rejected() {
    let tools: Vec<Value> =
        (0..11).map(|i| json!({"name": format!("t{i}"), "inputSchema": {"type": "object"}})).collect();
    let result = tools_result(Value::Array(tools));
    assert!(parse_tools_list(&result, 11).is_ok());
    assert_eq!(
        parse_tools_list(&result, 10),
        Err(ProtocolError::TooMany { at: "result.tools".into(), count: 11, limit: 10 })
    );
}

#[test]
fn list_results_may_not_be_input_required() {
    let result = json!({"resultType": "input_required", "requestState": "s", "tools": []});
    assert!(
        matches!(parse_tools_list(&result, 10), Err(ProtocolError::InvalidValue { at, .. }) if at == "result.resultType")
    );
}

#[test]
fn tool_names_outside_the_spec_guidance_are_parsed_but_flagged() {
    let result = tools_result(json!([
        {"name": "admin.tools.list_v2", "inputSchema": {"type": "object"}},
        {"name": "rm -rf /", "inputSchema": {"type": "object"}},
        {"name": "x".repeat(129), "inputSchema": {"type": "object"}},
    ]));
    let page = parse_tools_list(&result, 10).unwrap();
    let flags: Vec<bool> = page.tools.iter().map(|t| t.name_follows_guidance()).collect();
    assert_eq!(flags, [true, false, false]);
}

#[test]
fn malformed_tool_call_results_are_rejected_with_their_path() {
    use ProtocolError::*;
    let cases = [
        (json!({}), MissingField { at: "result.content".into() }),
        (json!({"content": {}}), WrongType { at: "result.content".into(), expected: "an array" }),
        (json!({"content": [{"text": "hi"}]}), MissingField { at: "result.content[0].type".into() }),
        (json!({"content": [{"type": "text"}]}), MissingField { at: "result.content[0].text".into() }),
        (
            json!({"content": [{"type": "image", "data": "AA=="}]}),
            MissingField { at: "result.content[0].mimeType".into() },
        ),
        (
            json!({"content": [{"type": "resource_link", "uri": "file:///a"}]}),
            MissingField { at: "result.content[0].name".into() },
        ),
        (
            json!({"content": [{"type": "resource", "resource": {"uri": "u", "text": "t", "blob": "AA=="}}]}),
            InvalidValue { at: "result.content[0].resource".into(), reason: "has both text and blob".into() },
        ),
        (
            json!({"content": [{"type": "resource", "resource": {"uri": "u"}}]}),
            InvalidValue { at: "result.content[0].resource".into(), reason: "has neither text nor blob".into() },
        ),
        (json!({"content": [], "isError": "yes"}), WrongType { at: "result.isError".into(), expected: "a boolean" }),
        (json!({"content": [], "resultType": "maybe"}), UnknownResultType("maybe".into())),
        (
            json!({"resultType": "input_required", "inputRequests": []}),
            WrongType { at: "result.inputRequests".into(), expected: "an object" },
        ),
        (
            json!({"resultType": "input_required", "requestState": {}}),
            WrongType { at: "result.requestState".into(), expected: "a string" },
        ),
        (json!("done"), WrongType { at: "result".into(), expected: "an object" }),
    ];
    for (result, expected) in cases {
        assert_eq!(parse_call_tool_result(&result), Err(expected), "{result}");
    }
}

#[test]
fn malformed_handshake_results_are_rejected() {
    use ProtocolError::*;
    assert_eq!(
        parse_discover_result(&json!({"supportedVersions": [], "capabilities": {}})),
        Err(InvalidValue { at: "result.supportedVersions".into(), reason: "is empty".into() })
    );
    assert_eq!(
        parse_discover_result(&json!({"supportedVersions": ["2026-07-28", 7], "capabilities": {}})),
        Err(WrongType { at: "result.supportedVersions[1]".into(), expected: "a string" })
    );
    assert_eq!(
        parse_discover_result(&json!({"supportedVersions": ["2026-07-28"]})),
        Err(MissingField { at: "result.capabilities".into() })
    );
    assert_eq!(
        parse_discover_result(&json!({"supportedVersions": ["2026-07-28"], "capabilities": {}, "ttlMs": -1})),
        Err(WrongType { at: "result.ttlMs".into(), expected: "a non-negative integer" })
    );
    assert_eq!(
        parse_initialize_result(
            &json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s"}})
        ),
        Err(MissingField { at: "result.serverInfo.version".into() })
    );
}

fn ctx(version: ProtocolVersion) -> ClientContext {
    ClientContext::new(version, ClientInfo::new("wasmgate", "0.1.0"), Map::new())
}

#[test]
fn era_specific_builders_refuse_the_other_era() {
    let modern = ctx(ProtocolVersion::V2026_07_28);
    let legacy = ctx(ProtocolVersion::V2025_11_25);
    let wrong = |what, version| Err(ProtocolError::WrongEra { what, version });
    assert_eq!(modern.initialize(&Id::Int(1)), wrong("initialize", "2026-07-28"));
    assert_eq!(modern.initialized(), wrong("notifications/initialized", "2026-07-28"));
    assert_eq!(legacy.discover(&Id::Int(1)), wrong("server/discover", "2025-11-25"));
}

#[test]
fn request_with_non_object_meta_is_refused() {
    let params = json!({"_meta": "v"}).as_object().cloned().unwrap();
    assert_eq!(
        ctx(ProtocolVersion::V2026_07_28).request(&Id::Int(1), "tools/call", params),
        Err(ProtocolError::WrongType { at: "params._meta".into(), expected: "an object" })
    );
}

#[test]
fn input_required_retry_is_refused_when_it_would_break_the_protocol() {
    let modern = ctx(ProtocolVersion::V2026_07_28);
    let original = modern.tools_call(&Id::Int(1), "t", None, None);
    let asked = InputRequired {
        input_requests: json!({"k": {"method": "roots/list"}}).as_object().cloned(),
        request_state: None,
    };
    let answer = |key: &str| json!({ key: {"roots": []} }).as_object().cloned();
    let invalid = |at: &str, reason: &str| Err(ProtocolError::InvalidValue { at: at.into(), reason: reason.into() });

    assert!(modern.retry_with_input(&original, &Id::Int(2), &asked, answer("k")).is_ok());
    assert_eq!(
        modern.retry_with_input(&original, &Id::Int(1), &asked, answer("k")),
        invalid("id", "a retry needs a new request id, 1 was the original's")
    );
    assert_eq!(
        modern.retry_with_input(&original, &Id::Int(2), &asked, answer("other")),
        invalid("inputResponses", r#"answers "other", which the server did not ask for"#)
    );
    assert_eq!(
        modern.retry_with_input(&original, &Id::Int(2), &asked, None),
        invalid("inputResponses", "the server asked for input; the retry must carry the answers")
    );
    let listing = modern.tools_list(&Id::Int(1), None);
    assert_eq!(
        modern.retry_with_input(&listing, &Id::Int(2), &asked, answer("k")),
        invalid("original.method", "tools/list cannot answer input_required")
    );
    assert_eq!(
        ctx(ProtocolVersion::V2025_11_25).retry_with_input(&original, &Id::Int(2), &asked, answer("k")),
        Err(ProtocolError::WrongEra { what: "input_required retry", version: "2025-11-25" })
    );
}

#[test]
fn retry_without_request_state_sends_none_and_drops_the_previous_rounds() {
    let modern = ctx(ProtocolVersion::V2026_07_28);
    let first = modern.tools_call(&Id::Int(1), "t", None, None);
    let round_one = InputRequired { input_requests: None, request_state: Some("s1".into()) };
    let second = modern.retry_with_input(&first, &Id::Int(2), &round_one, None).unwrap();
    assert_eq!(second["params"]["requestState"], "s1");
    let round_two = InputRequired { input_requests: None, request_state: None };
    let third = modern.retry_with_input(&second, &Id::Int(3), &round_two, None).unwrap();
    assert!(third["params"].get("requestState").is_none() && third["params"].get("inputResponses").is_none());
}

#[test]
fn protocol_errors_map_to_jsonrpc_codes() {
    use wasmgate_protocol::codes;
    assert_eq!(ProtocolError::TooDeep { limit: 1 }.jsonrpc_code(), codes::PARSE_ERROR);
    assert_eq!(ProtocolError::Batch.jsonrpc_code(), codes::INVALID_REQUEST);
    assert_eq!(ProtocolError::MissingField { at: "x".into() }.jsonrpc_code(), codes::INVALID_PARAMS);
    assert_eq!(ProtocolError::UnsupportedVersion("x".into()).jsonrpc_code(), codes::UNSUPPORTED_PROTOCOL_VERSION);
}

#[test]
fn legacy_request_keeps_an_empty_meta_it_was_given() {
    let params = json!({"_meta": {}, "uri": "file:///a"}).as_object().cloned().unwrap();
    let built = ctx(ProtocolVersion::V2025_11_25).request(&Id::Int(1), "resources/read", params).unwrap();
    assert_eq!(built["params"]["_meta"], json!({}));
}

/// Poor man's fuzzing until the cargo-fuzz target exists: every prefix of every golden
/// file, and every single-byte substitution with a structural character, must produce a
/// result (any result) without panicking, and so must the payload parsers on whatever
/// JSON survives.
#[test]
fn truncated_and_corrupted_golden_messages_never_panic() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut runs = 0usize;
    for era in std::fs::read_dir(dir).unwrap() {
        for file in std::fs::read_dir(era.unwrap().path()).unwrap() {
            let bytes = std::fs::read(file.unwrap().path()).unwrap();
            let mut variants: Vec<Vec<u8>> = (0..bytes.len()).map(|n| bytes[..n].to_vec()).collect();
            for i in 0..bytes.len() {
                for b in [b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', 0xff] {
                    let mut v = bytes.clone();
                    v[i] = b;
                    variants.push(v);
                }
            }
            for v in variants {
                runs += 1;
                let Ok(value) = parse_message(&v, MessageLimits::DEFAULT) else { continue };
                let _ = parse_tools_list(&value, 10);
                let _ = wasmgate_protocol::parse_resources_list(&value, 10);
                let _ = wasmgate_protocol::parse_read_resource_result(&value);
                let _ = parse_call_tool_result(&value);
                let _ = parse_discover_result(&value);
                let _ = parse_initialize_result(&value);
                if let Ok(message) = wasmgate_protocol::classify(value.clone()) {
                    assert_eq!(message.into_value(), value);
                }
            }
        }
    }
    assert!(runs > 10_000);
}
