//! Which conversation a call belongs to, as the guard's data-flow rules see it: one per
//! stdio connection, per handshake-era session, per 2026-07-28 caller (here, without
//! callers, the client's address), each narrowed by the name a client sends in
//! `_meta["wasmgate/context"]`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Http, Stdio, bounded, config, initialize, plain, stamped};
use serde_json::{Value, json};
use wasmgate_core::{CallContext, Tool, ToolResult, ToolSpec};
use wasmgate_server::{HttpConfig, ToolsBackend};

/// A tool that answers the conversation it was called in.
fn backend() -> ToolsBackend {
    let spec = ToolSpec {
        name: "where".into(),
        description: "Says which conversation it runs in.".into(),
        input_schema: json!({"type": "object"}),
    };
    ToolsBackend::new(vec![Tool::from_fn(spec, |_, _| async move {
        Ok(ToolResult::text(CallContext::conversation().as_deref().unwrap_or("none")))
    })])
}

fn call(id: i64, context: Option<&str>) -> Value {
    let mut params = json!({"name": "where", "arguments": {}});
    if let Some(context) = context {
        params["_meta"] = json!({"wasmgate/context": context});
    }
    plain(id, "tools/call", params)
}

fn text(answer: &Value) -> String {
    answer["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{answer}")).to_owned()
}

#[tokio::test]
async fn each_stdio_connection_is_a_conversation_that_a_meta_name_narrows() {
    let mut conversations = Vec::new();
    for _ in 0..2 {
        let mut stdio = Stdio::start(backend(), config());
        stdio.ask(initialize(1, "2025-11-25")).await;
        stdio.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        let plain_one = text(&stdio.ask(call(2, None)).await);
        assert_eq!(text(&stdio.ask(call(3, None)).await), plain_one, "one connection, one conversation");
        let named = text(&stdio.ask(call(4, Some("run-1"))).await);
        let other = text(&stdio.ask(call(5, Some("run-2"))).await);
        assert!(named.contains(plain_one.as_str()) && named.ends_with("/run-1"), "{named}");
        assert_ne!(named, other);
        conversations.push(plain_one);
    }
    assert_ne!(conversations[0], conversations[1], "connections do not share one");
}

#[tokio::test]
async fn over_http_a_session_is_a_conversation_and_a_stateless_caller_another() {
    let server = Http::start(backend(), config(), HttpConfig::default()).await;
    let client = reqwest::Client::new();
    let post = |body: Value, session: Option<String>| {
        let method = body["method"].as_str().unwrap_or_default().to_owned();
        let mut request = client
            .post(&server.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        request = match &session {
            Some(id) => request.header("mcp-session-id", id).header("mcp-protocol-version", "2025-11-25"),
            None if method == "initialize" => request,
            None => request.header("mcp-protocol-version", "2026-07-28").header("mcp-method", method.as_str()),
        };
        if let Some(name) = body["params"]["name"].as_str() {
            request = request.header("mcp-name", name);
        }
        let request = request.body(body.to_string());
        async move {
            let response = bounded("an HTTP answer", request.send()).await.unwrap();
            let session = response.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned());
            let body = response.text().await.unwrap();
            (session, serde_json::from_str::<Value>(&body).unwrap_or_else(|_| panic!("{body}")))
        }
    };
    let mut sessions = Vec::new();
    for _ in 0..2 {
        let (id, _) = post(initialize(1, "2025-11-25"), None).await;
        let id = id.expect("a session id");
        let (_, answer) = post(call(2, None), Some(id.clone())).await;
        assert_eq!(text(&answer), format!("session {id}"));
        sessions.push(id);
    }
    assert_ne!(sessions[0], sessions[1]);
    let mut stateless = stamped(3, "tools/call", json!({"name": "where", "arguments": {}}));
    let (_, answer) = post(stateless.clone(), None).await;
    assert!(text(&answer).starts_with("client 127.0.0.1"), "{answer}");
    stateless["params"]["_meta"]["wasmgate/context"] = json!("task-9");
    let (_, answer) = post(stateless, None).await;
    assert!(text(&answer).ends_with(":client 127.0.0.1/task-9"), "{answer}");
}
