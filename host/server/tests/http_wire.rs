//! Streamable HTTP on the wire: statuses and bodies of both eras, the 2026-07-28 header
//! checks, handshake-era sessions, and the event stream of `subscriptions/listen`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Fixture, Http, bounded, config, initialize, plain, stamped};
use reqwest::StatusCode;
use serde_json::{Value, json};
use wasmgate_server::HttpConfig;

/// POSTs `body` with exactly `headers`.
async fn post(url: &str, body: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = reqwest::Client::new().post(url).header("content-type", "application/json").body(body.to_owned());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    bounded("an HTTP answer", request.send()).await.unwrap()
}

async fn answer(response: reqwest::Response) -> (StatusCode, Value) {
    let status = response.status();
    (status, serde_json::from_str(&response.text().await.unwrap()).unwrap_or(Value::Null))
}

const MODERN: [(&str, &str); 2] = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call")];

async fn server() -> Http {
    Http::start(Fixture::new().backend, config(), HttpConfig::default()).await
}

#[tokio::test]
async fn a_stamped_call_with_matching_headers_is_answered_in_json() {
    let server = server().await;
    let call = stamped(1, "tools/call", json!({"name": "echo", "arguments": {"text": "hi"}}));
    let response = post(&server.url, &call.to_string(), &[MODERN[0], MODERN[1], ("mcp-name", "echo")]).await;
    assert_eq!(response.headers()["content-type"], "application/json");
    let (status, body) = answer(response).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body["result"],
        json!({"content": [{"type": "text", "text": "hi"}], "isError": false, "resultType": "complete"})
    );
}

/// A backend whose one tool, `region`, mirrors its `region` argument in `Mcp-Param-Region`.
fn regional() -> wasmgate_server::ToolsBackend {
    let schema = json!({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}});
    let spec = wasmgate_core::ToolSpec { name: "region".into(), description: "Echoes".into(), input_schema: schema };
    wasmgate_server::ToolsBackend::new(vec![wasmgate_core::Tool::from_fn(spec, |input: Value, _| async move {
        Ok(wasmgate_core::ToolResult::text(input["region"].as_str().unwrap_or("none")))
    })])
}

#[tokio::test]
async fn annotated_parameters_must_be_mirrored_in_param_headers() {
    let server = Http::start(regional(), config(), HttpConfig::default()).await;
    let with = stamped(1, "tools/call", json!({"name": "region", "arguments": {"region": "eu-west 1"}})).to_string();
    let without = stamped(2, "tools/call", json!({"name": "region", "arguments": {}})).to_string();
    let base = [MODERN[0], MODERN[1], ("mcp-name", "region")];
    type Header<'a> = Option<(&'a str, &'a str)>;
    let cases: [(&str, Header, StatusCode); 6] = [
        (&with, Some(("mcp-param-region", "eu-west 1")), StatusCode::OK),
        (&with, Some(("mcp-param-region", "=?base64?ZXUtd2VzdCAx?=")), StatusCode::OK),
        (&with, None, StatusCode::BAD_REQUEST),
        (&with, Some(("mcp-param-region", "us-east-1")), StatusCode::BAD_REQUEST),
        (&without, Some(("mcp-param-region", "eu-west 1")), StatusCode::BAD_REQUEST),
        (&without, None, StatusCode::OK),
    ];
    for (body, param, expected) in cases {
        let mut headers = base.to_vec();
        headers.extend(param);
        let (status, answer) = answer(post(&server.url, body, &headers).await).await;
        assert_eq!(status, expected, "{param:?}: {answer}");
        if expected == StatusCode::BAD_REQUEST {
            assert_eq!(answer["error"]["code"], -32020, "{answer}");
        }
    }
    // A stock client mirrors the parameter itself.
    let client =
        wasmgate_testing::http_client(&server.url, &[wasmgate_protocol::ProtocolVersion::V2026_07_28], None).await;
    let arguments = json!({"region": "ap-south"}).as_object().cloned().unwrap();
    let result = client.call_tool("region", arguments, wasmgate_core::CancellationToken::new()).await.unwrap();
    assert_eq!(result.content[0].text(), Some("ap-south"));
}

#[tokio::test]
async fn headers_that_disagree_with_the_body_are_a_header_mismatch() {
    let server = server().await;
    let call = stamped(1, "tools/call", json!({"name": "echo"})).to_string();
    for headers in [
        vec![MODERN[0], MODERN[1], ("mcp-name", "broken")],
        vec![MODERN[0], MODERN[1]],
        vec![MODERN[0], ("mcp-name", "echo")],
        vec![("mcp-protocol-version", "2025-11-25"), MODERN[1], ("mcp-name", "echo")],
    ] {
        let (status, body) = answer(post(&server.url, &call, &headers).await).await;
        assert_eq!((status, &body["error"]["code"]), (StatusCode::BAD_REQUEST, &json!(-32020)), "{headers:?}: {body}");
    }
}

#[tokio::test]
async fn a_header_sent_twice_is_refused_even_when_its_first_value_matches_the_body() {
    let server = server().await;
    let call = stamped(1, "tools/call", json!({"name": "echo", "arguments": {"text": "hi"}})).to_string();
    // An intermediary reading the last value would see a call of `rm`, not `echo`.
    for repeated in [("mcp-name", "rm"), ("mcp-method", "tools/list"), ("mcp-protocol-version", "2025-11-25")] {
        let headers = [MODERN[0], MODERN[1], ("mcp-name", "echo"), repeated];
        let (status, body) = answer(post(&server.url, &call, &headers).await).await;
        assert_eq!((status, &body["error"]["code"]), (StatusCode::BAD_REQUEST, &json!(-32020)), "{repeated:?}: {body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("more than once"), "{body}");
    }
    // A session named twice, or a session's version sent twice, is refused as well.
    let init = post(&server.url, &initialize(1, "2025-11-25").to_string(), &[]).await;
    let session = init.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let list = plain(2, "tools/list", json!({})).to_string();
    for headers in [
        vec![("mcp-session-id", session.as_str()), ("mcp-session-id", "0000")],
        vec![
            ("mcp-session-id", session.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
            ("mcp-protocol-version", "2025-06-18"),
        ],
    ] {
        let (status, body) = answer(post(&server.url, &list, &headers).await).await;
        assert_eq!((status, &body["error"]["code"]), (StatusCode::BAD_REQUEST, &json!(-32600)), "{headers:?}: {body}");
    }
    let (status, _) = answer(post(&server.url, &list, &[("mcp-session-id", session.as_str())]).await).await;
    assert_eq!(status, StatusCode::OK, "the session itself still works");
}

#[tokio::test]
async fn a_request_without_the_stamp_or_a_session_is_a_bad_request_with_invalid_params() {
    let server = server().await;
    let (status, body) = answer(post(&server.url, &plain(1, "tools/list", json!({})).to_string(), &[]).await).await;
    assert_eq!((status, &body["error"]["code"], &body["id"]), (StatusCode::BAD_REQUEST, &json!(-32602), &json!(1)));
}

#[tokio::test]
async fn an_unsupported_version_is_a_bad_request_naming_the_supported_ones() {
    let server = server().await;
    let mut request = stamped(1, "tools/list", json!({}));
    request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("1900-01-01");
    let headers = [("mcp-protocol-version", "1900-01-01"), ("mcp-method", "tools/list")];
    let (status, body) = answer(post(&server.url, &request.to_string(), &headers).await).await;
    assert_eq!((status, &body["error"]["code"]), (StatusCode::BAD_REQUEST, &json!(-32022)));
    assert_eq!(body["error"]["data"]["requested"], "1900-01-01");
    assert_eq!(body["error"]["data"]["supported"][0], "2026-07-28");
}

#[tokio::test]
async fn malformed_json_is_a_bad_request_with_a_parse_error() {
    let server = server().await;
    let (status, body) = answer(post(&server.url, "{\"jsonrpc\":", &[]).await).await;
    assert_eq!((status, &body["error"]["code"]), (StatusCode::BAD_REQUEST, &json!(-32700)));
    assert!(body.get("id").is_none());
}

#[tokio::test]
async fn an_unknown_stateless_method_is_not_found_and_an_unknown_tool_is_an_error_in_a_200() {
    let server = server().await;
    let list = stamped(1, "prompts/list", json!({})).to_string();
    let (status, body) = answer(post(&server.url, &list, &[MODERN[0], ("mcp-method", "prompts/list")]).await).await;
    assert_eq!((status, &body["error"]["code"]), (StatusCode::NOT_FOUND, &json!(-32601)));
    // 2026-07-28 has no `initialize`: a stamped one is an unknown method too, no session.
    let init = stamped(3, "initialize", json!({})).to_string();
    let response = post(&server.url, &init, &[MODERN[0], ("mcp-method", "initialize")]).await;
    assert!(response.headers().get("mcp-session-id").is_none());
    let (status, body) = answer(response).await;
    assert_eq!((status, &body["error"]["code"]), (StatusCode::NOT_FOUND, &json!(-32601)));
    let call = stamped(2, "tools/call", json!({"name": "nope"})).to_string();
    let (status, body) = answer(post(&server.url, &call, &[MODERN[0], MODERN[1], ("mcp-name", "nope")]).await).await;
    assert_eq!((status, &body["error"]), (StatusCode::OK, &json!({"code": -32602, "message": "Unknown tool: nope"})));
}

#[tokio::test]
async fn notifications_are_accepted_without_a_body() {
    let server = server().await;
    let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}});
    let response = post(&server.url, &note.to_string(), &[]).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    assert!(response.text().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_session_is_issued_by_initialize_required_by_name_and_ended_by_delete() {
    let server = server().await;
    let response = post(&server.url, &initialize(1, "2025-11-25").to_string(), &[]).await;
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    assert_eq!(answer(response).await.1["result"]["protocolVersion"], "2025-11-25");
    let in_session = [("mcp-session-id", session.as_str()), ("mcp-protocol-version", "2025-11-25")];
    let (status, body) =
        answer(post(&server.url, &plain(2, "tools/list", json!({})).to_string(), &in_session).await).await;
    assert_eq!((status, body["result"]["tools"].as_array().unwrap().len()), (StatusCode::OK, 4));
    // Another version a session may speak is allowed (the session's version governs);
    // one no session here speaks is refused.
    let other_version = [("mcp-session-id", session.as_str()), ("mcp-protocol-version", "2025-06-18")];
    let (status, _) = answer(post(&server.url, &plain(3, "ping", json!({})).to_string(), &other_version).await).await;
    assert_eq!(status, StatusCode::OK);
    for unspoken in ["1900-01-01", "2026-07-28"] {
        let wrong_version = [("mcp-session-id", session.as_str()), ("mcp-protocol-version", unspoken)];
        let ping = plain(3, "ping", json!({})).to_string();
        let (status, _) = answer(post(&server.url, &ping, &wrong_version).await).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{unspoken:?}");
    }
    let unknown = [("mcp-session-id", "0123456789abcdef0123456789abcdef")];
    assert_eq!(
        post(&server.url, &plain(4, "ping", json!({})).to_string(), &unknown).await.status(),
        StatusCode::NOT_FOUND
    );

    let client = reqwest::Client::new();
    let ended = client.delete(&server.url).header("mcp-session-id", &session).send().await.unwrap();
    assert_eq!(ended.status(), StatusCode::NO_CONTENT);
    let after = post(&server.url, &plain(5, "ping", json!({})).to_string(), &in_session).await;
    assert_eq!(after.status(), StatusCode::NOT_FOUND, "an ended session is gone");
}

#[tokio::test]
async fn get_and_delete_without_a_session_are_not_allowed() {
    let server = server().await;
    let client = reqwest::Client::new();
    assert_eq!(client.get(&server.url).send().await.unwrap().status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(client.delete(&server.url).send().await.unwrap().status(), StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn a_subscription_answers_with_an_event_stream_that_starts_with_the_acknowledgment() {
    let server = server().await;
    let listen = stamped(5, "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}));
    let mut response = post(
        &server.url,
        &listen.to_string(),
        &[("mcp-protocol-version", "2026-07-28"), ("mcp-method", "subscriptions/listen")],
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let mut text = String::new();
    while !text.contains("\n\n") {
        let chunk = bounded("an SSE event", response.chunk()).await.unwrap().expect("stream open");
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let data = text.lines().find_map(|l| l.strip_prefix("data: ")).expect("a data line");
    let event: Value = serde_json::from_str(data).unwrap();
    assert_eq!(event["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(event["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 5);
}

/// Lets in `good` (alice) and refuses every other token, `narrow` for want of a scope.
struct Tokens;

impl wasmgate_server::Authenticator for Tokens {
    fn authenticate<'a>(
        &'a self,
        token: Option<&'a str>,
    ) -> wasmgate_core::BoxFuture<'a, Result<wasmgate_core::Caller, wasmgate_server::AuthFailure>> {
        use wasmgate_server::AuthFailure;
        let outcome = match token {
            None => Err(AuthFailure::Missing),
            Some("good") => Ok(wasmgate_core::Caller { subject: "alice".into(), claims: serde_json::Map::new() }),
            Some("bobs") => Ok(wasmgate_core::Caller { subject: "bob".into(), claims: serde_json::Map::new() }),
            Some("narrow") => Err(AuthFailure::InsufficientScope { scope: "mcp:tools".into() }),
            Some(_) => Err(AuthFailure::Invalid("unknown token".into())),
        };
        Box::pin(std::future::ready(outcome))
    }

    fn metadata(&self) -> Value {
        json!({"resource": "https://gw.example/mcp", "authorization_servers": ["https://as.example"]})
    }

    fn metadata_url(&self) -> String {
        "https://gw.example/.well-known/oauth-protected-resource/mcp".into()
    }
}

#[tokio::test]
async fn as_a_resource_server_it_lets_in_valid_tokens_and_tells_the_others_where_to_get_one() {
    let http = HttpConfig { authenticator: Some(std::sync::Arc::new(Tokens)), ..HttpConfig::default() };
    let server = Http::start(Fixture::new().backend, config(), http).await;
    let list = stamped(1, "tools/list", json!({})).to_string();
    let headers = [MODERN[0], ("mcp-method", "tools/list")];
    let challenge = |response: &reqwest::Response| {
        response.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
    };
    let metadata = "resource_metadata=\"https://gw.example/.well-known/oauth-protected-resource/mcp\"";

    let none = post(&server.url, &list, &headers).await;
    assert_eq!((none.status(), challenge(&none)), (StatusCode::UNAUTHORIZED, format!("Bearer {metadata}")));
    for (token, status, error) in [
        ("Bearer forged", StatusCode::UNAUTHORIZED, "error=\"invalid_token\""),
        ("Bearer narrow", StatusCode::FORBIDDEN, "error=\"insufficient_scope\", scope=\"mcp:tools\""),
    ] {
        let mut with = headers.to_vec();
        with.push(("authorization", token));
        let refused = post(&server.url, &list, &with).await;
        assert_eq!(refused.status(), status, "{token}");
        let said = challenge(&refused);
        assert!(said.contains(metadata) && said.contains(error), "{token}: {said}");
    }
    let mut with = headers.to_vec();
    with.push(("authorization", "Bearer good"));
    let (status, body) = answer(post(&server.url, &list, &with).await).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["result"]["tools"].as_array().is_some_and(|tools| !tools.is_empty()), "{body}");

    // The metadata, without a token, at both places a client looks.
    let base = server.url.trim_end_matches("/mcp");
    for path in ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"] {
        let response = reqwest::get(format!("{base}{path}")).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let document: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
        assert_eq!(document["authorization_servers"], json!(["https://as.example"]), "{path}");
    }
}

#[tokio::test]
async fn a_session_is_found_only_by_the_caller_that_opened_it() {
    let http = HttpConfig { authenticator: Some(std::sync::Arc::new(Tokens)), ..HttpConfig::default() };
    let server = Http::start(Fixture::new().backend, config(), http).await;
    let alice = [("authorization", "Bearer good")];
    let init = post(&server.url, &initialize(1, "2025-11-25").to_string(), &alice).await;
    assert_eq!(init.status(), StatusCode::OK);
    let session = init.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let list = plain(2, "tools/list", json!({})).to_string();
    let as_bob = [("authorization", "Bearer bobs"), ("mcp-session-id", session.as_str())];
    let (status, body) = answer(post(&server.url, &list, &as_bob).await).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "another caller's session is none of bob's: {body}");
    // Nor can bob answer or cancel in it, read its stream, or end it.
    let reply = json!({"jsonrpc": "2.0", "id": "wasmgate-0", "result": {"action": "accept"}}).to_string();
    assert_eq!(post(&server.url, &reply, &as_bob).await.status(), StatusCode::ACCEPTED);
    let client = reqwest::Client::new();
    let stream = client.get(&server.url).header("authorization", "Bearer bobs").header("mcp-session-id", &session);
    assert_eq!(stream.send().await.unwrap().status(), StatusCode::NOT_FOUND);
    let end = client.delete(&server.url).header("authorization", "Bearer bobs").header("mcp-session-id", &session);
    assert_eq!(end.send().await.unwrap().status(), StatusCode::NOT_FOUND);
    let as_alice = [("authorization", "Bearer good"), ("mcp-session-id", session.as_str())];
    let (status, body) = answer(post(&server.url, &list, &as_alice).await).await;
    assert_eq!(status, StatusCode::OK, "alice's session is still hers: {body}");
    let end = client.delete(&server.url).header("authorization", "Bearer good").header("mcp-session-id", &session);
    assert_eq!(end.send().await.unwrap().status(), StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn the_caller_a_token_names_rides_in_the_call_context() {
    let spec = wasmgate_core::ToolSpec {
        name: "whoami".into(),
        description: "Says who called".into(),
        input_schema: json!({"type": "object"}),
    };
    let tool = wasmgate_core::Tool::from_fn(spec, |_, _| async {
        let caller = wasmgate_core::CallContext::current().caller;
        Ok(wasmgate_core::ToolResult::text(caller.map_or_else(|| "nobody".to_owned(), |c| c.subject.clone())))
    });
    let http = HttpConfig { authenticator: Some(std::sync::Arc::new(Tokens)), ..HttpConfig::default() };
    let server = Http::start(wasmgate_server::ToolsBackend::new(vec![tool]), config(), http).await;
    let call = stamped(1, "tools/call", json!({"name": "whoami", "arguments": {}})).to_string();
    let headers = [MODERN[0], MODERN[1], ("mcp-name", "whoami"), ("authorization", "Bearer good")];
    let (status, body) = answer(post(&server.url, &call, &headers).await).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["content"][0]["text"], "alice", "{body}");
}

#[tokio::test]
async fn a_request_state_is_redeemed_by_the_caller_it_was_issued_to_and_by_nobody_else() {
    // `guarded` asks first, and says what it heard.
    let spec = wasmgate_core::ToolSpec {
        name: "guarded".into(),
        description: "Asks first".into(),
        input_schema: json!({"type": "object"}),
    };
    let tool = wasmgate_core::Tool::from_fn(spec, |_, _| async {
        let Some(ask) = wasmgate_core::CallContext::current().ask else {
            return Ok(wasmgate_core::ToolResult::text("nobody to ask"));
        };
        Ok(wasmgate_core::ToolResult::text(format!("{:?}", ask.confirm("Allow this call?".into(), true).await)))
    });
    let http = HttpConfig { authenticator: Some(std::sync::Arc::new(Tokens)), ..HttpConfig::default() };
    let server = Http::start(wasmgate_server::ToolsBackend::new(vec![tool]), config(), http).await;
    let call = |id: i64, extra: Value| {
        let mut call = stamped(id, "tools/call", json!({"name": "guarded", "arguments": {"n": 1}}));
        call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {}});
        for (key, value) in extra.as_object().unwrap() {
            call["params"][key] = value.clone();
        }
        call.to_string()
    };
    let as_caller = |token: &'static str| [MODERN[0], MODERN[1], ("mcp-name", "guarded"), ("authorization", token)];

    let (status, asked) = answer(post(&server.url, &call(1, json!({})), &as_caller("Bearer bobs")).await).await;
    assert_eq!((status, &asked["result"]["resultType"]), (StatusCode::OK, &json!("input_required")), "{asked}");
    let state = asked["result"]["requestState"].as_str().unwrap().to_owned();
    let yes = json!({"approval": {"action": "accept", "content": {"approve": true}}});
    let retry = json!({"inputResponses": yes, "requestState": state});

    // Alice answers bob's question with her own yes: refused, and bob's state unspent.
    let (_, refused) = answer(post(&server.url, &call(2, retry.clone()), &as_caller("Bearer good")).await).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("not issued for this call"), "{refused}");
    let (_, done) = answer(post(&server.url, &call(3, retry.clone()), &as_caller("Bearer bobs")).await).await;
    assert_eq!(done["result"]["content"][0]["text"], "Yes", "bob's retry still works: {done}");
    let (_, again) = answer(post(&server.url, &call(4, retry), &as_caller("Bearer bobs")).await).await;
    assert!(again["error"]["message"].as_str().unwrap().contains("used already"), "{again}");
}

#[tokio::test]
async fn two_authorization_headers_are_refused_whichever_comes_first() {
    let http = HttpConfig { authenticator: Some(std::sync::Arc::new(Tokens)), ..HttpConfig::default() };
    let server = Http::start(Fixture::new().backend, config(), http).await;
    let list = stamped(1, "tools/list", json!({})).to_string();
    for pair in [["Bearer good", "Bearer forged"], ["Bearer forged", "Bearer good"], ["Bearer good", "Bearer good"]] {
        let headers = [MODERN[0], ("mcp-method", "tools/list"), ("authorization", pair[0]), ("authorization", pair[1])];
        let (status, body) = answer(post(&server.url, &list, &headers).await).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{pair:?}: {body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("more than once"), "{body}");
    }
}

/// A backend with no tools that is never ready.
struct Unready(tokio::sync::watch::Sender<u64>);

impl wasmgate_server::Backend for Unready {
    fn tools(&self) -> wasmgate_core::BoxFuture<'_, Vec<wasmgate_core::ToolSpec>> {
        Box::pin(std::future::ready(Vec::new()))
    }

    fn call(
        &self,
        name: String,
        _: serde_json::Map<String, Value>,
        _: wasmgate_core::CancellationToken,
    ) -> wasmgate_core::BoxFuture<'_, Result<wasmgate_core::ToolResult, wasmgate_server::CallFailure>> {
        Box::pin(std::future::ready(Err(wasmgate_server::CallFailure::UnknownTool(name))))
    }

    fn tool_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.0.subscribe()
    }

    fn unready(&self) -> Vec<String> {
        vec!["the audit log cannot be written".into()]
    }
}

#[tokio::test]
async fn healthz_says_it_lives_and_readyz_whether_the_backend_is_ready_without_a_token() {
    let http = || HttpConfig { authenticator: Some(std::sync::Arc::new(Tokens)), ..HttpConfig::default() };
    let ready = Http::start(Fixture::new().backend, config(), http()).await;
    let unready = Http::start(Unready(tokio::sync::watch::Sender::new(0)), config(), http()).await;
    let get = |url: &str, path: &str| {
        let url = format!("{}{path}", url.trim_end_matches("/mcp"));
        async move { reqwest::get(url).await.unwrap().status() }
    };
    assert_eq!(get(&ready.url, "/healthz").await, StatusCode::OK);
    assert_eq!(get(&ready.url, "/readyz").await, StatusCode::OK);
    assert_eq!(get(&unready.url, "/healthz").await, StatusCode::OK, "alive, though not ready");
    assert_eq!(get(&unready.url, "/readyz").await, StatusCode::SERVICE_UNAVAILABLE);
}
