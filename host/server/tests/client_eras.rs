//! This repository's own `McpClient` against the server: over the in-memory stdio pipe
//! and over HTTP on loopback, in the 2026-07-28 era (found by `server/discover`) and in
//! the handshake era (the client limited to 2025-11-25 or 2025-03-26). Each lists
//! tools, calls one that works, one that fails and one that breaks, names an unknown
//! tool, cancels a call, and hears a change to the tool list.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Fixture, GUARD, Http, bounded, config, echo_tool, stdio_client};
use serde_json::{Map, Value, json};
use wasmgate_client::{ClientError, McpClient, ToolsWatch};
use wasmgate_core::CancellationToken;
use wasmgate_protocol::{ContentBlock, ProtocolVersion};
use wasmgate_server::HttpConfig;

const MODERN: &[ProtocolVersion] = &wasmgate_protocol::SUPPORTED;
const HANDSHAKE: &[ProtocolVersion] = &[ProtocolVersion::V2025_11_25];

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

async fn text_of(client: &McpClient, tool: &str, arguments: Value) -> (String, bool) {
    let result = bounded(tool, client.call_tool(tool, args(arguments), CancellationToken::new())).await.unwrap();
    (result.content.iter().find_map(ContentBlock::text).unwrap_or_default().to_owned(), result.is_error)
}

/// What every transport and era must show.
async fn check(client: &McpClient, fixture: &mut Fixture) {
    let tools = bounded("tools/list", client.list_tools()).await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo", "fail", "broken", "block"]);
    assert_eq!(text_of(client, "echo", json!({"text": "hello"})).await, ("hello".into(), false));
    assert_eq!(text_of(client, "fail", json!({})).await, ("no such calendar".into(), true));
    assert_eq!(text_of(client, "broken", json!({})).await, ("tool execution failed".into(), true));
    let unknown = client.call_tool("nope", Map::new(), CancellationToken::new()).await.unwrap_err();
    assert!(matches!(&unknown, ClientError::UnknownTool { name, .. } if name == "nope"), "{unknown:?}");

    let cancel = CancellationToken::new();
    let call = client.call_tool("block", args(json!({"text": "doomed"})), cancel.clone());
    let (outcome, ()) = tokio::join!(call, async {
        assert_eq!(fixture.entered().await, "doomed");
        cancel.cancel();
        assert_eq!(fixture.cancelled().await, "doomed", "the cancel reached the backend's token");
    });
    assert!(matches!(outcome, Err(ClientError::Cancelled)), "{outcome:?}");
}

/// A tool added on the backend reaches the client's next listing, announced on the
/// stream the era and transport use (`watch`: the state the client's watch settles in).
async fn check_change(client: &McpClient, fixture: &Fixture, watch: ToolsWatch) {
    let mut state = client.tools_watch();
    let settled = tokio::time::timeout(GUARD, state.wait_for(|s| *s == watch)).await;
    assert!(settled.is_ok_and(|r| r.is_ok()), "the watch never became {watch:?}: {:?}", *state.borrow());
    bounded("tools/list", client.list_tools()).await.unwrap();
    let mut changes = client.tool_list_changes();
    changes.borrow_and_update();
    fixture.backend.replace(vec![echo_tool("echo"), echo_tool("grown")]);
    bounded("the change to reach the client", changes.changed()).await.unwrap();
    let after = bounded("tools/list", client.list_tools()).await.unwrap();
    assert!(after.iter().any(|t| t.name == "grown"), "{after:?}");
}

#[tokio::test]
async fn our_client_over_stdio_finds_the_2026_era_by_discovery() {
    let mut fixture = Fixture::new();
    let (client, _bridge) = stdio_client(fixture.backend.clone(), MODERN).await;
    assert_eq!(client.protocol_version(), Some(ProtocolVersion::V2026_07_28));
    assert_eq!(client.server_info().map(|i| i.name), Some("wasmgate".into()));
    check(&client, &mut fixture).await;
    check_change(&client, &fixture, ToolsWatch::Active).await;
    client.close().await;
}

#[tokio::test]
async fn our_client_over_stdio_in_the_handshake_era() {
    let mut fixture = Fixture::new();
    let (client, _bridge) = stdio_client(fixture.backend.clone(), HANDSHAKE).await;
    assert_eq!(client.protocol_version(), Some(ProtocolVersion::V2025_11_25));
    check(&client, &mut fixture).await;
    check_change(&client, &fixture, ToolsWatch::Off).await;
    client.close().await;
}

#[tokio::test]
async fn our_client_over_http_in_the_2026_era() {
    let mut fixture = Fixture::new();
    let server = Http::start(fixture.backend.clone(), config(), HttpConfig::default()).await;
    let client = wasmgate_testing::http_client(&server.url, MODERN, None).await;
    assert_eq!(client.protocol_version(), Some(ProtocolVersion::V2026_07_28));
    check(&client, &mut fixture).await;
    check_change(&client, &fixture, ToolsWatch::Active).await;
    client.close().await;
}

#[tokio::test]
async fn our_client_over_http_in_the_handshake_era_with_a_session() {
    let mut fixture = Fixture::new();
    let server = Http::start(fixture.backend.clone(), config(), HttpConfig::default()).await;
    let client = wasmgate_testing::http_client(&server.url, HANDSHAKE, None).await;
    assert_eq!(client.protocol_version(), Some(ProtocolVersion::V2025_11_25));
    check(&client, &mut fixture).await;
    check_change(&client, &fixture, ToolsWatch::Active).await;
    client.close().await;
}

#[tokio::test]
async fn our_client_over_http_with_the_oldest_streamable_http_version() {
    let mut fixture = Fixture::new();
    let server = Http::start(fixture.backend.clone(), config(), HttpConfig::default()).await;
    let client = wasmgate_testing::http_client(&server.url, &[ProtocolVersion::V2025_03_26], None).await;
    assert_eq!(client.protocol_version(), Some(ProtocolVersion::V2025_03_26));
    check(&client, &mut fixture).await;
    client.close().await;
}
