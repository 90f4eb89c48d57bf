//! The handshake era on stdio, line by line: exact wire shapes of `initialize`, `ping`,
//! `tools/list` and `tools/call`, and the change notification after `initialize`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Fixture, Stdio, config, echo_tool, initialize, plain};
use serde_json::json;

#[tokio::test]
async fn initialize_answers_the_clients_version_with_capabilities_and_identity() {
    let mut server = Stdio::start(Fixture::new().backend, config());
    let answer = server.ask(initialize(1, "2025-06-18")).await;
    assert_eq!(
        answer,
        json!({"jsonrpc": "2.0", "id": 1, "result": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {"listChanged": true}},
            "serverInfo": {"name": "wasmgate", "version": env!("CARGO_PKG_VERSION")},
        }})
    );
}

#[tokio::test]
async fn initialize_with_an_unknown_version_is_answered_with_our_newest_handshake_version() {
    let mut server = Stdio::start(Fixture::new().backend, config());
    for (id, offered) in [(1, "2024-11-05"), (2, "2099-01-01"), (3, "2026-07-28")] {
        let answer = server.ask(initialize(id, offered)).await;
        assert_eq!(answer["result"]["protocolVersion"], "2025-11-25", "{offered}");
    }
}

#[tokio::test]
async fn ping_is_answered_before_and_after_initialize() {
    let mut server = Stdio::start(Fixture::new().backend, config());
    assert_eq!(server.ask(plain(1, "ping", json!({}))).await, json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    server.ask(initialize(2, "2025-11-25")).await;
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    let ping = json!({"jsonrpc": "2.0", "id": "p", "method": "ping"});
    assert_eq!(server.ask(ping).await, json!({"jsonrpc": "2.0", "id": "p", "result": {}}));
}

#[tokio::test]
async fn tools_list_and_call_have_the_handshake_shapes() {
    let mut server = Stdio::start(Fixture::new().backend, config());
    server.ask(initialize(1, "2025-11-25")).await;
    let list = server.ask(plain(2, "tools/list", json!({}))).await;
    let echo = &list["result"]["tools"][0];
    assert_eq!(
        echo,
        &json!({"name": "echo", "description": "Echoes its text",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}})
    );
    assert_eq!(list["result"].as_object().unwrap().len(), 1, "no cursor, no cache hints: {list}");
    let names: Vec<&str> =
        list["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["echo", "fail", "broken", "block"]);

    let call = server.ask(plain(3, "tools/call", json!({"name": "echo", "arguments": {"text": "hi"}}))).await;
    assert_eq!(
        call,
        json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "hi"}], "isError": false}})
    );
}

#[tokio::test]
async fn a_tool_failure_is_an_is_error_result_and_a_tool_error_shows_only_its_stable_text() {
    let mut server = Stdio::start(Fixture::new().backend, config());
    server.ask(initialize(1, "2025-11-25")).await;
    let fail = server.ask(plain(2, "tools/call", json!({"name": "fail"}))).await;
    assert_eq!(fail["result"], json!({"content": [{"type": "text", "text": "no such calendar"}], "isError": true}));
    let broken = server.ask(plain(3, "tools/call", json!({"name": "broken"}))).await;
    assert_eq!(
        broken["result"],
        json!({"content": [{"type": "text", "text": "tool execution failed"}], "isError": true})
    );
    assert!(!broken.to_string().contains("alice") && !broken.to_string().contains("137"));
}

#[tokio::test]
async fn an_unknown_tool_is_invalid_params_naming_it() {
    let mut server = Stdio::start(Fixture::new().backend, config());
    server.ask(initialize(1, "2025-11-25")).await;
    let answer = server.ask(plain(2, "tools/call", json!({"name": "nope"}))).await;
    assert_eq!(answer, json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32602, "message": "Unknown tool: nope"}}));
}

#[tokio::test]
async fn long_tool_lists_are_paged_with_an_opaque_cursor_and_a_bad_cursor_is_refused() {
    let fixture = Fixture::new();
    let mut server = Stdio::start(fixture.backend, wasmgate_server::ServerConfig { page_size: 3, ..config() });
    server.ask(initialize(1, "2025-11-25")).await;
    let first = server.ask(plain(2, "tools/list", json!({}))).await;
    assert_eq!(first["result"]["tools"].as_array().unwrap().len(), 3);
    let cursor = first["result"]["nextCursor"].as_str().expect("a next page").to_owned();
    let second = server.ask(plain(3, "tools/list", json!({"cursor": cursor}))).await;
    assert_eq!(second["result"]["tools"][0]["name"], "block");
    assert!(second["result"].get("nextCursor").is_none());
    let bad = server.ask(plain(4, "tools/list", json!({"cursor": "x"}))).await;
    assert_eq!(bad["error"]["code"], -32602);
}

#[tokio::test]
async fn a_tool_list_change_is_announced_after_initialize() {
    let fixture = Fixture::new();
    let backend = fixture.backend.clone();
    let mut server = Stdio::start(fixture.backend, config());
    server.ask(initialize(1, "2025-11-25")).await;
    backend.replace(vec![echo_tool("echo"), echo_tool("grown")]);
    assert_eq!(server.recv().await, json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
    let list = server.ask(plain(2, "tools/list", json!({}))).await;
    assert_eq!(list["result"]["tools"][1]["name"], "grown");
}

#[tokio::test]
async fn requests_after_initialize_without_a_stamp_are_served_and_unknown_methods_are_not_found() {
    let mut server = Stdio::start(Fixture::new().backend, config());
    server.ask(initialize(1, "2025-11-25")).await;
    let answer = server.ask(plain(2, "resources/list", json!({}))).await;
    assert_eq!(answer["error"]["code"], -32601);
    let answer = server.ask(plain(3, "server/discover", json!({}))).await;
    assert_eq!(answer["error"]["code"], -32601, "discover is stateless-only: {answer}");
}
