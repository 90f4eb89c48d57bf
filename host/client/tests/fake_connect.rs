//! Opening a connection against a scripted fake server: era detection, fallback,
//! version negotiation, and connect failures that name the server and every attempt.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Clogged, discover_result, expect_notification, expect_request, initialize_result};
use serde_json::json;
use wasmgate_client::{ClientConfig, ClientError, CloseReason, FakeTransport, McpClient};
use wasmgate_protocol::ProtocolVersion;
use wasmgate_protocol::codes::{METHOD_NOT_FOUND, UNSUPPORTED_PROTOCOL_VERSION};

#[tokio::test]
async fn a_modern_server_answers_discover_and_the_client_stays_stateless() {
    let (transport, mut server) = FakeTransport::pair();
    let connecting = tokio::spawn(McpClient::connect("cal", transport, ClientConfig::default()));
    let (id, params) = expect_request(&mut server, "server/discover").await;
    assert_eq!(params["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
    server.respond(&id, discover_result()).await;
    let client = connecting.await.unwrap().unwrap();
    assert_eq!(client.protocol_version(), Some(ProtocolVersion::V2026_07_28));
    assert_eq!(client.server_info().map(|i| i.name), Some("fake".to_owned()));
}

#[tokio::test]
async fn discover_method_not_found_falls_back_to_initialize() {
    let (transport, mut server) = FakeTransport::pair();
    let connecting = tokio::spawn(McpClient::connect("old", transport, ClientConfig::default()));
    let (id, _) = expect_request(&mut server, "server/discover").await;
    server.respond_error(&id, METHOD_NOT_FOUND, "Method not found").await;
    let (id, params) = expect_request(&mut server, "initialize").await;
    assert_eq!(params["protocolVersion"], "2025-11-25");
    assert!(params.get("_meta").is_none(), "handshake requests carry no _meta stamp");
    server.respond(&id, initialize_result("2025-06-18")).await;
    expect_notification(&mut server, "notifications/initialized").await;
    let client = connecting.await.unwrap().unwrap();
    assert_eq!(client.protocol_version(), Some(ProtocolVersion::V2025_06_18));
}

#[tokio::test(start_paused = true)]
async fn a_probe_that_is_never_answered_falls_back_to_initialize() {
    let (transport, mut server) = FakeTransport::pair();
    let config = ClientConfig { probe_timeout: Duration::from_secs(5), ..ClientConfig::default() };
    let connecting = tokio::spawn(McpClient::connect("silent", transport, config));
    expect_request(&mut server, "server/discover").await;
    let (id, _) = expect_request(&mut server, "initialize").await;
    server.respond(&id, initialize_result("2025-11-25")).await;
    expect_notification(&mut server, "notifications/initialized").await;
    assert!(connecting.await.unwrap().is_ok());
}

#[tokio::test]
async fn unsupported_version_with_a_handshake_version_in_common_goes_to_initialize() {
    let (transport, mut server) = FakeTransport::pair();
    let connecting = tokio::spawn(McpClient::connect("dual", transport, ClientConfig::default()));
    let (id, _) = expect_request(&mut server, "server/discover").await;
    let error = json!({"jsonrpc": "2.0", "id": id.to_value(), "error": {"code": UNSUPPORTED_PROTOCOL_VERSION,
        "message": "Unsupported protocol version", "data": {"supported": ["2025-06-18"], "requested": "2026-07-28"}}});
    server.send(error).await;
    let (id, params) = expect_request(&mut server, "initialize").await;
    assert_eq!(params["protocolVersion"], "2025-06-18");
    server.respond(&id, initialize_result("2025-06-18")).await;
    expect_notification(&mut server, "notifications/initialized").await;
    assert_eq!(connecting.await.unwrap().unwrap().protocol_version(), Some(ProtocolVersion::V2025_06_18));
}

#[tokio::test]
async fn a_server_with_no_version_in_common_is_an_unsupported_version_error() {
    let (transport, mut server) = FakeTransport::pair();
    let connecting = tokio::spawn(McpClient::connect("future", transport, ClientConfig::default()));
    let (id, _) = expect_request(&mut server, "server/discover").await;
    let error = json!({"jsonrpc": "2.0", "id": id.to_value(), "error": {"code": UNSUPPORTED_PROTOCOL_VERSION,
        "message": "no", "data": {"supported": ["2099-01-01"], "requested": "2026-07-28"}}});
    server.send(error).await;
    let error = connecting.await.unwrap().unwrap_err();
    assert_eq!(error, ClientError::UnsupportedVersion { offered: vec!["2099-01-01".into()] });
}

#[tokio::test]
async fn connect_failure_names_the_server_and_both_attempts() {
    let (transport, mut server) = FakeTransport::pair();
    let connecting = tokio::spawn(McpClient::connect("calendar", transport, ClientConfig::default()));
    let (id, _) = expect_request(&mut server, "server/discover").await;
    server.respond_error(&id, METHOD_NOT_FOUND, "Method not found").await;
    let (id, _) = expect_request(&mut server, "initialize").await;
    server.respond_error(&id, -32603, "database is down").await;
    match connecting.await.unwrap().unwrap_err() {
        ClientError::ConnectFailed { server, tried } => {
            assert_eq!(server, "calendar");
            assert_eq!(tried.len(), 2, "{tried:?}");
            assert!(tried[0].starts_with("server/discover (2026-07-28)") && tried[0].contains("-32601"), "{tried:?}");
            assert!(tried[1].starts_with("initialize (2025-11-25)") && tried[1].contains("database is down"));
        }
        other => panic!("expected ConnectFailed, got {other:?}"),
    }
    assert_eq!(server.recv().await, None, "a failed connect closes the transport");
}

#[tokio::test]
async fn a_transport_that_closes_during_the_probe_fails_without_trying_initialize() {
    let (transport, mut server) = FakeTransport::pair();
    let connecting = tokio::spawn(McpClient::connect("crashy", transport, ClientConfig::default()));
    expect_request(&mut server, "server/discover").await;
    server.close(CloseReason::Exited { code: Some(127), signal: None }).await;
    match connecting.await.unwrap().unwrap_err() {
        ClientError::ConnectFailed { server, tried } => {
            assert_eq!(server, "crashy");
            assert_eq!(tried.len(), 1);
            assert!(tried[0].contains("status 127"), "{tried:?}");
        }
        other => panic!("expected ConnectFailed, got {other:?}"),
    }
}

#[tokio::test]
async fn a_client_limited_to_handshake_versions_skips_the_probe() {
    let (transport, mut server) = FakeTransport::pair();
    let config = ClientConfig { versions: vec![ProtocolVersion::V2025_11_25], ..ClientConfig::default() };
    let connecting = tokio::spawn(McpClient::connect("old", transport, config));
    let (id, _) = expect_request(&mut server, "initialize").await;
    server.respond(&id, initialize_result("2025-11-25")).await;
    expect_notification(&mut server, "notifications/initialized").await;
    assert_eq!(connecting.await.unwrap().unwrap().protocol_version(), Some(ProtocolVersion::V2025_11_25));
}

#[tokio::test]
async fn an_initialize_answer_with_a_version_we_do_not_speak_is_refused() {
    let (transport, mut server) = FakeTransport::pair();
    let config = ClientConfig { versions: vec![ProtocolVersion::V2025_11_25], ..ClientConfig::default() };
    let connecting = tokio::spawn(McpClient::connect("odd", transport, config));
    let (id, _) = expect_request(&mut server, "initialize").await;
    server.respond(&id, initialize_result("2024-11-05")).await;
    assert_eq!(
        connecting.await.unwrap().unwrap_err(),
        ClientError::UnsupportedVersion { offered: vec!["2024-11-05".into()] }
    );
}

#[tokio::test(start_paused = true)]
async fn an_initialized_notification_that_cannot_be_sent_times_out_the_connect() {
    let (transport, mut server) = FakeTransport::pair();
    let config = ClientConfig { request_timeout: Duration::from_secs(7), ..ClientConfig::default() };
    // Never opened: the notification is never written, as to a server that stopped
    // reading its input.
    let deaf = Clogged::new(transport, |message| message["method"] == "notifications/initialized");
    let connecting = tokio::spawn(McpClient::connect("deaf", deaf, config));
    let (id, _) = expect_request(&mut server, "server/discover").await;
    server.respond_error(&id, METHOD_NOT_FOUND, "Method not found").await;
    let (id, _) = expect_request(&mut server, "initialize").await;
    server.respond(&id, initialize_result("2025-11-25")).await;
    let ended = tokio::time::timeout(Duration::from_secs(60), connecting).await;
    let error = ended.expect("connect ends").unwrap().unwrap_err();
    assert!(error.to_string().contains("notifications/initialized timed out after 7s"), "{error}");
}
