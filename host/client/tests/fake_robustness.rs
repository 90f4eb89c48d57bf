//! A misbehaving server against the fake transport: dropped transports, malformed,
//! oversized, unknown-id and duplicate messages, and server-to-client requests. None
//! may panic or hang the client; each pending call ends promptly and precisely.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod logs;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use common::{Clogged, GUARD, connected, expect_request, text_args, text_result};
use serde_json::json;
use wasmgate_client::{ClientConfig, ClientError, CloseReason, FakeTransport, Inbound, McpClient};
use wasmgate_core::CancellationToken;
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

#[tokio::test]
async fn a_flood_of_server_requests_whose_answers_cannot_be_sent_is_dropped_not_queued() {
    let (inner, mut server) = FakeTransport::pair();
    // Answers (messages without a method) wait until the test opens the transport.
    let transport = Clogged::new(inner, |message| message.get("method").is_none());
    let (open, waiting) = (Arc::clone(&transport.open), Arc::clone(&transport.waiting));
    let connecting = tokio::spawn(McpClient::connect("fake", transport, ClientConfig::default()));
    let (id, _) = expect_request(&mut server, "server/discover").await;
    server.respond(&id, json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}})).await;
    let client = connecting.await.unwrap().unwrap();

    for n in 0..1000 {
        server.send(json!({"jsonrpc": "2.0", "id": format!("p{n}"), "method": "ping"})).await;
    }
    // A call answered after the flood: once it returns, every ping has been routed.
    let call = echo_call(&client, "after the flood");
    let (id, _) = expect_request(&mut server, "tools/call").await;
    server.respond(&id, text_result("after the flood", false)).await;
    assert_eq!(call.await.unwrap().unwrap(), "after the flood");
    assert_eq!(waiting.load(Ordering::SeqCst), 64, "answers waiting on the transport are capped");

    open.add_permits(100_000);
    for _ in 0..64 {
        let answer = tokio::time::timeout(GUARD, server.recv()).await.unwrap().unwrap();
        assert!(answer["id"].as_str().unwrap().starts_with('p'), "{answer}");
    }
    server.send(json!({"jsonrpc": "2.0", "id": "again", "method": "ping"})).await;
    let answer = tokio::time::timeout(GUARD, server.recv()).await.unwrap().unwrap();
    assert_eq!(answer, json!({"jsonrpc": "2.0", "id": "again", "result": {}}), "later requests are answered again");
    assert!(server.try_recv().is_none(), "the dropped requests are never answered");
}

#[tokio::test]
async fn a_server_flooding_what_the_client_drops_cannot_flood_the_log() {
    let captured = logs::Captured::default();
    let _logging = tracing::subscriber::set_default(captured.subscriber());
    let (client, mut server) = connected(ClientConfig::default()).await;
    // 1,000 rounds of a stray response, a malformed line (never 32 in a row, which would
    // end the connection), an error without an id and a tool-list change.
    for n in 0..1000 {
        server.respond(&Id::Int(900_000 + n), text_result("stray", false)).await;
        server.send_raw(format!("noise {n}")).await;
        server.send(json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": "no"}})).await;
        server.send(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})).await;
    }
    let call = echo_call(&client, "still here");
    let (id, _) = expect_request(&mut server, "tools/call").await;
    server.respond(&id, text_result("still here", false)).await;
    assert_eq!(call.await.unwrap().unwrap(), "still here");
    let log = captured.text();
    for what in [
        "response with an unknown id dropped",
        "malformed message dropped",
        "error response without an id dropped",
        "tool list changed",
    ] {
        let lines: Vec<&str> = log.lines().filter(|line| line.contains(what)).collect();
        assert_eq!(lines.len(), 10, "{what}: logged at the 1st, 2nd, 4th... 512th of 1,000");
        assert!(lines[9].contains("count=512"), "{what}: {}", lines[9]);
    }
}
