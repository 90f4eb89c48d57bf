//! Hostile and concurrent input on stdio: malformed messages get their JSON-RPC error
//! and reading goes on; calls run concurrently and answer out of order; a cancel
//! reaches the call's token; the limits hold.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Fixture, Stdio, config, initialize, plain, stamped};
use serde_json::json;
use wasmgate_protocol::MessageLimits;
use wasmgate_server::ServerConfig;

#[tokio::test]
async fn malformed_json_is_a_parse_error_without_an_id_and_reading_goes_on() {
    let mut server = Stdio::start(Fixture::new().backend, config());
    for line in ["{\"jsonrpc\": \"2.0\", \"id\": 1,", "not json", "{\"a\":1,\"a\":2}"] {
        server.send_raw(line).await;
        let answer = server.recv().await;
        assert_eq!(answer["error"]["code"], -32700, "{line}: {answer}");
        assert!(answer.get("id").is_none(), "{answer}");
    }
    assert_eq!(server.ask(plain(1, "ping", json!({}))).await["result"], json!({}));
}

#[tokio::test]
async fn an_invalid_request_is_refused_with_its_id_when_readable() {
    let mut server = Stdio::start(Fixture::new().backend, config());
    server.send(json!({"jsonrpc": "1.0", "id": 5, "method": "ping"})).await;
    assert_eq!(server.recv().await["error"]["code"], -32600);
    server.send(json!({"jsonrpc": "2.0", "id": 6, "method": "ping", "extra": true})).await;
    let answer = server.recv().await;
    assert_eq!((&answer["id"], &answer["error"]["code"]), (&json!(6), &json!(-32600)));
    server.send(json!([{"jsonrpc": "2.0", "id": 7, "method": "ping"}])).await;
    assert_eq!(server.recv().await["error"]["code"], -32600, "batches are refused");
    let answer = server.ask(plain(8, "tools/call", json!({"arguments": {}}))).await;
    assert_eq!(answer["error"]["code"], -32602, "a call without a name: {answer}");
}

#[tokio::test]
async fn a_line_over_the_size_limit_is_refused_without_being_buffered_and_reading_goes_on() {
    let limits = MessageLimits { max_message_bytes: 1024, ..MessageLimits::DEFAULT };
    let mut server = Stdio::start(Fixture::new().backend, ServerConfig { limits, ..config() });
    let big = plain(1, "tools/call", json!({"name": "echo", "arguments": {"text": "x".repeat(2000)}}));
    server.send(big).await;
    let answer = server.recv().await;
    assert_eq!(answer["error"]["code"], -32700);
    assert!(answer["error"]["message"].as_str().unwrap().contains("over the limit of 1024 bytes"), "{answer}");
    assert_eq!(server.ask(plain(2, "ping", json!({}))).await["result"], json!({}));
}

#[tokio::test]
async fn nesting_past_the_depth_limit_is_a_parse_error() {
    let mut server = Stdio::start(Fixture::new().backend, config());
    let deep = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"a\":{}1{}}}}}",
        "[".repeat(100),
        "]".repeat(100)
    );
    server.send_raw(&deep).await;
    assert_eq!(server.recv().await["error"]["code"], -32700);
}

#[tokio::test]
async fn calls_run_concurrently_and_answer_in_the_order_they_finish() {
    let mut fixture = Fixture::new();
    let mut server = Stdio::start(fixture.backend.clone(), config());
    server.ask(initialize(1, "2025-11-25")).await;
    server.send(plain(2, "tools/call", json!({"name": "block", "arguments": {"text": "slow"}}))).await;
    assert_eq!(fixture.entered().await, "slow");
    let quick = server.ask(plain(3, "tools/call", json!({"name": "echo", "arguments": {"text": "quick"}}))).await;
    assert_eq!(quick["result"]["content"][0]["text"], "quick", "answered while the slow call runs");
    fixture.release.add_permits(1);
    let slow = server.recv().await;
    assert_eq!((&slow["id"], &slow["result"]["content"][0]["text"]), (&json!(2), &json!("released slow")));
}

#[tokio::test]
async fn a_cancel_reaches_the_calls_token_and_the_cancelled_call_gets_no_answer() {
    let mut fixture = Fixture::new();
    let mut server = Stdio::start(fixture.backend.clone(), config());
    server.send(stamped(1, "tools/call", json!({"name": "block", "arguments": {"text": "doomed"}}))).await;
    assert_eq!(fixture.entered().await, "doomed");
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "user"}})).await;
    assert_eq!(fixture.cancelled().await, "doomed");
    // Everything the server writes until it is done, the call's task included: no answer for 1.
    server.shutdown();
    let rest = server.rest().await;
    assert!(rest.iter().all(|m| m.get("id") != Some(&json!(1))), "{rest:?}");
}

#[tokio::test]
async fn calls_beyond_the_in_flight_limit_are_refused_at_once() {
    let mut fixture = Fixture::new();
    let mut server = Stdio::start(fixture.backend.clone(), ServerConfig { max_calls_in_flight: 1, ..config() });
    server.send(stamped(1, "tools/call", json!({"name": "block", "arguments": {"text": "a"}}))).await;
    fixture.entered().await;
    let refused = server.ask(stamped(2, "tools/call", json!({"name": "echo", "arguments": {"text": "b"}}))).await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("Too many requests in flight"));
    fixture.release.add_permits(1);
    assert_eq!(server.recv().await["id"], 1);
    let accepted = server.ask(stamped(3, "tools/call", json!({"name": "echo", "arguments": {"text": "c"}}))).await;
    assert_eq!(accepted["result"]["content"][0]["text"], "c");
}

#[tokio::test]
async fn a_request_id_already_in_flight_is_refused() {
    let mut fixture = Fixture::new();
    let mut server = Stdio::start(fixture.backend.clone(), config());
    server.send(stamped(1, "tools/call", json!({"name": "block", "arguments": {"text": "a"}}))).await;
    fixture.entered().await;
    let duplicate = server.ask(stamped(1, "tools/call", json!({"name": "echo", "arguments": {"text": "b"}}))).await;
    assert_eq!(duplicate["error"]["code"], -32600, "{duplicate}");
    fixture.release.add_permits(1);
    assert_eq!(server.recv().await["result"]["content"][0]["text"], "released a");
}

#[tokio::test]
async fn end_of_input_ends_serving() {
    let mut server = Stdio::start(Fixture::new().backend, config());
    server.ask(plain(1, "ping", json!({}))).await;
    server.close_input().await;
    server.finished().await.unwrap();
}

#[tokio::test]
async fn responses_from_the_client_are_ignored() {
    let mut server = Stdio::start(Fixture::new().backend, config());
    server.send(json!({"jsonrpc": "2.0", "id": 99, "result": {}})).await;
    server.send(json!({"jsonrpc": "2.0", "id": 98, "error": {"code": -1, "message": "no"}})).await;
    assert_eq!(server.ask(plain(1, "ping", json!({}))).await, json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
}
