//! The 2026-07-28 era on stdio, line by line: `server/discover`, the `_meta` stamp and
//! its refusals, `resultType`, and `subscriptions/listen`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Fixture, Stdio, config, echo_tool, plain, stamped};
use serde_json::json;
use wasmgate_server::ServerConfig;

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

#[tokio::test]
async fn discover_lists_every_version_newest_first_with_capabilities_identity_and_cache_hints() {
    let mut server = Stdio::start(Fixture::new().backend, config());
    let answer = server.ask(stamped(1, "server/discover", json!({}))).await;
    assert_eq!(
        answer,
        json!({"jsonrpc": "2.0", "id": 1, "result": {
            "supportedVersions": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"],
            "capabilities": {"tools": {"listChanged": true}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "wasmgate", "version": env!("CARGO_PKG_VERSION")}},
            "ttlMs": 0,
            "cacheScope": "private",
            "resultType": "complete",
        }})
    );
}

#[tokio::test]
async fn stateless_results_carry_result_type_and_lists_their_cache_hints() {
    let mut server = Stdio::start(Fixture::new().backend, config());
    let list = server.ask(stamped(1, "tools/list", json!({}))).await;
    let result = list["result"].as_object().unwrap();
    assert_eq!(
        (&result["resultType"], &result["ttlMs"], &result["cacheScope"]),
        (&json!("complete"), &json!(0), &json!("private"))
    );
    assert_eq!(result["tools"].as_array().unwrap().len(), 4);
    let call = server.ask(stamped(2, "tools/call", json!({"name": "echo", "arguments": {"text": "hi"}}))).await;
    assert_eq!(
        call["result"],
        json!({"content": [{"type": "text", "text": "hi"}], "isError": false, "resultType": "complete"})
    );
}

#[tokio::test]
async fn a_request_without_the_stamp_is_invalid_params() {
    let mut server = Stdio::start(Fixture::new().backend, config());
    let answer = server.ask(plain(1, "tools/list", json!({}))).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("io.modelcontextprotocol/protocolVersion"));
    let mut no_capabilities = stamped(2, "tools/list", json!({}));
    no_capabilities["params"]["_meta"].as_object_mut().unwrap().remove("io.modelcontextprotocol/clientCapabilities");
    let answer = server.ask(no_capabilities).await;
    assert_eq!(answer["error"]["code"], -32602);
    assert!(answer["error"]["message"].as_str().unwrap().contains("clientCapabilities"));
}

#[tokio::test]
async fn an_unsupported_version_is_refused_with_both_sides_named() {
    let mut server = Stdio::start(Fixture::new().backend, config());
    for requested in ["1900-01-01", "2025-11-25"] {
        let mut request = stamped(1, "tools/list", json!({}));
        request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(requested);
        let answer = server.ask(request).await;
        assert_eq!(answer["error"]["code"], -32022, "{answer}");
        assert_eq!(
            answer["error"]["data"],
            json!({"supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"], "requested": requested})
        );
    }
}

#[tokio::test]
async fn handshake_only_methods_do_not_exist_in_the_stateless_era() {
    let mut server = Stdio::start(Fixture::new().backend, config());
    let answer = server.ask(stamped(1, "ping", json!({}))).await;
    assert_eq!(answer["error"]["code"], -32601);
    let answer = server.ask(stamped(2, "resources/list", json!({}))).await;
    assert_eq!(
        answer,
        json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32601, "message": "Method not found: resources/list"}})
    );
}

#[tokio::test]
async fn a_subscription_is_acknowledged_then_hears_each_change_until_the_client_cancels_it() {
    let fixture = Fixture::new();
    let backend = fixture.backend.clone();
    let mut server = Stdio::start(fixture.backend, config());
    server
        .send(stamped(
            7,
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true}}),
        ))
        .await;
    assert_eq!(
        server.recv().await,
        json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
               "params": {"_meta": {SUBSCRIPTION_ID: 7}, "notifications": {"toolsListChanged": true}}})
    );
    backend.replace(vec![echo_tool("grown")]);
    assert_eq!(
        server.recv().await,
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": {SUBSCRIPTION_ID: 7}}})
    );
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}})).await;
    // Once the next request is answered, the cancel was read: a later change must not be sent.
    server.ask(stamped(8, "server/discover", json!({}))).await;
    backend.replace(vec![echo_tool("again")]);
    server.send(stamped(9, "tools/list", json!({}))).await;
    let next = server.recv().await;
    assert_eq!(next["result"]["tools"][0]["name"], "again", "nothing for the cancelled subscription came first");
}

#[tokio::test]
async fn a_subscription_ends_with_its_closing_result_when_the_server_shuts_down() {
    let mut server = Stdio::start(Fixture::new().backend, config());
    server.send(stamped(3, "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}))).await;
    assert_eq!(server.recv().await["method"], "notifications/subscriptions/acknowledged");
    server.shutdown();
    assert_eq!(
        server.recv().await,
        json!({"jsonrpc": "2.0", "id": 3, "result": {"_meta": {SUBSCRIPTION_ID: 3}, "resultType": "complete"}})
    );
    server.finished().await.unwrap();
}

#[tokio::test]
async fn subscriptions_count_against_the_in_flight_limit() {
    let mut server = Stdio::start(Fixture::new().backend, ServerConfig { max_calls_in_flight: 2, ..config() });
    for id in [1, 2] {
        server.send(stamped(id, "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}))).await;
        assert_eq!(server.recv().await["method"], "notifications/subscriptions/acknowledged");
    }
    let refused =
        server.ask(stamped(3, "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}))).await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("Too many requests in flight"));
    // Cancelling one makes room again.
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})).await;
    server.ask(stamped(4, "server/discover", json!({}))).await;
    server.send(stamped(5, "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}))).await;
    assert_eq!(server.recv().await["method"], "notifications/subscriptions/acknowledged");
}
