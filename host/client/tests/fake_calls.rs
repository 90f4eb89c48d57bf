//! `tools/call` outcomes against a scripted fake server: the failure contract's split
//! (docs/ARCHITECTURE.md) between a tool error (`Ok`, `isError`) and a failed call
//! (`Err`), timeouts, cancellation and progress.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{connected, expect_notification, expect_request, text_args, text_result};
use serde_json::json;
use wasmgate_client::{CallOptions, ClientConfig, ClientError, FakeTransport, McpClient};
use wasmgate_core::CancellationToken;
use wasmgate_protocol::codes::INVALID_PARAMS;
use wasmgate_protocol::{ContentBlock, Id};

#[tokio::test]
async fn a_tool_that_returns_is_error_is_an_ok_outcome() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    let call = tokio::spawn(async move { client.call_tool("delete", text_args("x"), CancellationToken::new()).await });
    let (id, params) = expect_request(&mut server, "tools/call").await;
    assert_eq!(params["name"], "delete");
    assert_eq!(params["arguments"], json!({"text": "x"}));
    server.respond(&id, text_result("no such event", true)).await;
    let result = call.await.unwrap().expect("a tool error is not a client error");
    assert!(result.is_error);
    assert_eq!(result.content.first().and_then(ContentBlock::text), Some("no such event"));
}

#[tokio::test]
async fn unknown_tool_is_a_distinct_error_and_marks_the_tool_list_stale() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    let caller = client.clone();
    let call = tokio::spawn(async move { caller.call_tool("gone", text_args(""), CancellationToken::new()).await });
    let (id, _) = expect_request(&mut server, "tools/call").await;
    server.respond_error(&id, INVALID_PARAMS, "Unknown tool: gone").await;
    let error = call.await.unwrap().unwrap_err();
    assert_eq!(error, ClientError::UnknownTool { name: "gone".into(), message: "Unknown tool: gone".into() });
    assert!(client.tools_stale());
}

#[tokio::test]
async fn invalid_params_that_do_not_name_an_unknown_tool_stay_a_json_rpc_error() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    let call = tokio::spawn(async move { client.call_tool("echo", text_args(""), CancellationToken::new()).await });
    let (id, _) = expect_request(&mut server, "tools/call").await;
    server.respond_error(&id, INVALID_PARAMS, "Invalid arguments for tool echo").await;
    assert!(matches!(call.await.unwrap(), Err(ClientError::Rpc { code: INVALID_PARAMS, .. })));
}

#[tokio::test(start_paused = true)]
async fn a_call_without_an_answer_times_out_and_is_cancelled_upstream() {
    let config = ClientConfig { call_timeout: Duration::from_secs(30), ..ClientConfig::default() };
    let (client, mut server) = connected(config).await;
    let call = tokio::spawn(async move { client.call_tool("slow", text_args(""), CancellationToken::new()).await });
    let (id, _) = expect_request(&mut server, "tools/call").await;
    let error = call.await.unwrap().unwrap_err();
    assert_eq!(error, ClientError::Timeout { method: "tools/call".into(), after: Duration::from_secs(30) });
    let params = expect_notification(&mut server, "notifications/cancelled").await;
    assert_eq!(params["requestId"], id.to_value());
}

#[tokio::test]
async fn cancel_sends_notifications_cancelled_and_a_late_response_is_ignored() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    let cancel = CancellationToken::new();
    let caller = client.clone();
    let token = cancel.clone();
    let call = tokio::spawn(async move { caller.call_tool("slow", text_args(""), token).await });
    let (id, _) = expect_request(&mut server, "tools/call").await;
    cancel.cancel();
    assert_eq!(call.await.unwrap().unwrap_err(), ClientError::Cancelled);
    let params = expect_notification(&mut server, "notifications/cancelled").await;
    assert_eq!(params["requestId"], id.to_value());
    // The late answer is dropped; the connection keeps working for the next call.
    server.respond(&id, text_result("too late", false)).await;
    let next = tokio::spawn(async move { client.call_tool("echo", text_args("hi"), CancellationToken::new()).await });
    let (next_id, _) = expect_request(&mut server, "tools/call").await;
    assert_ne!(next_id, id);
    server.respond(&next_id, text_result("hi", false)).await;
    assert_eq!(next.await.unwrap().unwrap().content.first().and_then(ContentBlock::text), Some("hi"));
}

#[tokio::test]
async fn a_request_whose_caller_stops_waiting_is_cancelled_upstream_and_forgotten() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    let caller = client.clone();
    // The caller's own timeout, or a select! that took another branch: the future is dropped.
    let call = tokio::spawn(async move { caller.list_tools().await });
    let (id, _) = expect_request(&mut server, "tools/list").await;
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    let params = expect_notification(&mut server, "notifications/cancelled").await;
    assert_eq!(params["requestId"], id.to_value());
    server.respond(&id, json!({"tools": []})).await;
    let next = tokio::spawn(async move { client.call_tool("echo", text_args("hi"), CancellationToken::new()).await });
    let (next_id, _) = expect_request(&mut server, "tools/call").await;
    server.respond(&next_id, text_result("hi", false)).await;
    assert_eq!(next.await.unwrap().unwrap().content.first().and_then(ContentBlock::text), Some("hi"));
}

#[tokio::test]
async fn a_dropped_request_over_a_stream_per_request_transport_releases_its_stream() {
    let (transport, mut server) = FakeTransport::pair();
    let transport = transport.emulating_http_cancel();
    let connecting = tokio::spawn(McpClient::connect("http", transport, ClientConfig::default()));
    let (id, _) = expect_request(&mut server, "server/discover").await;
    server.respond(&id, common::discover_result()).await;
    let client = connecting.await.unwrap().unwrap();
    common::subscribe(&mut server, &client).await;
    let call = tokio::spawn(async move { client.list_tools().await });
    let (id, _) = expect_request(&mut server, "tools/list").await;
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    assert!(server.released().contains(&id), "the request's stream is released");
}

#[tokio::test]
async fn cancel_over_stream_per_request_transports_closes_the_stream_instead_of_notifying() {
    let (transport, mut server) = FakeTransport::pair();
    let transport = transport.emulating_http_cancel();
    let connecting = tokio::spawn(McpClient::connect("http", transport, ClientConfig::default()));
    let (id, _) = expect_request(&mut server, "server/discover").await;
    server.respond(&id, common::discover_result()).await;
    let client = connecting.await.unwrap().unwrap();
    common::subscribe(&mut server, &client).await;
    let cancel = CancellationToken::new();
    let token = cancel.clone();
    let call = tokio::spawn(async move { client.call_tool("slow", text_args(""), token).await });
    let (id, _) = expect_request(&mut server, "tools/call").await;
    cancel.cancel();
    assert_eq!(call.await.unwrap().unwrap_err(), ClientError::Cancelled);
    assert!(server.released().contains(&id), "the request's stream is released");
    assert_eq!(server.try_recv(), None, "no notifications/cancelled in the stateless HTTP era");
}

#[tokio::test]
async fn progress_notifications_reach_the_callback_of_their_call() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let options = CallOptions {
        progress: Some(Arc::new(move |p: wasmgate_client::Progress| sink.lock().unwrap().push(p.progress))),
        ..CallOptions::default()
    };
    let call =
        tokio::spawn(
            async move { client.call_tool_with("work", text_args(""), CancellationToken::new(), options).await },
        );
    let (id, params) = expect_request(&mut server, "tools/call").await;
    let token = params["_meta"]["progressToken"].clone();
    assert!(Id::from_value(&token).is_ok(), "a progress token is requested: {params:?}");
    for progress in [1, 2] {
        server
            .send(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                         "params": {"progressToken": token, "progress": progress, "total": 2}}))
            .await;
    }
    server.respond(&id, text_result("done", false)).await;
    call.await.unwrap().unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![1.0, 2.0]);
}
