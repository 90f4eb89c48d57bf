//! A misbehaving server against the fake transport: dropped transports, malformed,
//! oversized, unknown-id and duplicate messages, and server-to-client requests. None
//! may panic or hang the client; each pending call ends promptly and precisely.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{connected, expect_request, text_args, text_result};
use serde_json::json;
use wasmgate_gate::{CancellationToken, ClientConfig, ClientError, CloseReason, Inbound, McpClient};
use wasmgate_protocol::codes::METHOD_NOT_FOUND;
use wasmgate_protocol::{ContentBlock, Id};

fn echo_call(client: &McpClient, text: &str) -> tokio::task::JoinHandle<Result<String, ClientError>> {
    let client = client.clone();
    let args = text_args(text);
    tokio::spawn(async move {
        let result = client.call_tool("echo", args, CancellationToken::new()).await?;
        Ok(result.content.first().and_then(ContentBlock::text).unwrap_or_default().to_owned())
    })
}

#[tokio::test]
async fn transport_drop_mid_call_fails_the_pending_call() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    let call = echo_call(&client, "x");
    expect_request(&mut server, "tools/call").await;
    drop(server);
    let error = call.await.unwrap().unwrap_err();
    assert_eq!(error, ClientError::TransportClosed { reason: CloseReason::StreamEnded });
    let after = client.call_tool("echo", text_args(""), CancellationToken::new()).await;
    assert!(matches!(after, Err(ClientError::TransportClosed { .. })), "later calls fail at once: {after:?}");
}

#[tokio::test]
async fn process_exit_mid_call_reports_the_exit_status() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    let call = echo_call(&client, "x");
    expect_request(&mut server, "tools/call").await;
    let reason = CloseReason::Exited { code: Some(3), signal: None };
    server.close(reason.clone()).await;
    assert_eq!(call.await.unwrap().unwrap_err(), ClientError::TransportClosed { reason });
}

#[tokio::test]
async fn a_malformed_line_is_dropped_and_the_connection_survives() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    let call = echo_call(&client, "ok");
    let (id, _) = expect_request(&mut server, "tools/call").await;
    server.send_raw("this is not json").await;
    server.send_raw(r#"{"jsonrpc":"2.0","method":"x","surprise":1}"#).await;
    server.respond(&id, text_result("ok", false)).await;
    assert_eq!(call.await.unwrap().unwrap(), "ok");
}

#[tokio::test]
async fn a_malformed_response_fails_the_call_it_answers() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    let call = echo_call(&client, "ok");
    let (id, _) = expect_request(&mut server, "tools/call").await;
    server.send(json!({"jsonrpc": "2.0", "id": id.to_value(), "result": {"content": []}, "extra": true})).await;
    assert!(matches!(call.await.unwrap(), Err(ClientError::MalformedMessage { .. })));
}

#[tokio::test]
async fn an_oversized_response_fails_its_call_without_waiting_for_the_timeout() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    let call = echo_call(&client, "big");
    let (id, _) = expect_request(&mut server, "tools/call").await;
    let prefix = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"xxxx"#);
    server.send_inbound(Inbound::Oversized { prefix: prefix.into(), len: 50_000_000 }).await;
    match call.await.unwrap() {
        Err(ClientError::MalformedMessage { detail }) => assert!(detail.contains("50000000"), "{detail}"),
        other => panic!("expected MalformedMessage, got {other:?}"),
    }
}

#[tokio::test]
async fn responses_with_unknown_ids_and_duplicates_are_dropped() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    let first = echo_call(&client, "one");
    let (id, _) = expect_request(&mut server, "tools/call").await;
    server.respond(&Id::Int(999_999), text_result("stranger", false)).await;
    server.respond(&id, text_result("one", false)).await;
    server.respond(&id, text_result("one again", false)).await;
    assert_eq!(first.await.unwrap().unwrap(), "one");
    let second = echo_call(&client, "two");
    let (id2, _) = expect_request(&mut server, "tools/call").await;
    server.respond(&id2, text_result("two", false)).await;
    assert_eq!(second.await.unwrap().unwrap(), "two", "neither the stranger nor the duplicate leaked into it");
}

#[tokio::test]
async fn a_stream_of_garbage_is_a_framing_failure_that_closes_the_connection() {
    let config = ClientConfig { max_consecutive_malformed: 3, ..ClientConfig::default() };
    let (client, mut server) = connected(config).await;
    let call = echo_call(&client, "x");
    expect_request(&mut server, "tools/call").await;
    for line in ["starting up...", "listening", "ready", "still logging to stdout"] {
        server.send_raw(line).await;
    }
    match call.await.unwrap() {
        Err(ClientError::TransportClosed { reason: CloseReason::Framing(detail) }) => {
            assert!(detail.contains("4 malformed"), "{detail}");
        }
        other => panic!("expected a framing failure, got {other:?}"),
    }
}

#[tokio::test]
async fn server_ping_is_answered_and_unknown_server_requests_get_method_not_found() {
    let (_client, mut server) = connected(ClientConfig::default()).await;
    server.send(json!({"jsonrpc": "2.0", "id": "p1", "method": "ping"})).await;
    let answer = server.recv().await.unwrap();
    assert_eq!(answer, json!({"jsonrpc": "2.0", "id": "p1", "result": {}}));
    for method in ["roots/list", "elicitation/create", "sampling/createMessage", "x/custom"] {
        server.send(json!({"jsonrpc": "2.0", "id": method, "method": method, "params": {}})).await;
        let answer = server.recv().await.unwrap();
        assert_eq!(answer["id"], method);
        assert_eq!(answer["error"]["code"], METHOD_NOT_FOUND, "{answer}");
    }
}
