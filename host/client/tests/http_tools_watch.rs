//! Tool list changes over Streamable HTTP, against the scripted loopback endpoint: the
//! handshake era's standalone GET stream (opened with the session, 405 meaning none,
//! bounded like every SSE stream, re-opened when it ends, closed by `close`) and the
//! 2026-07-28 subscription, a POST whose SSE answer stays open until the client closes it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod http_script;

use std::time::Duration;

use common::{GUARD, tool, until};
use http_script::{Endpoint, closed_by_client, event};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use wasmgate_client::{ClientConfig, HttpConfig, HttpTransport, McpClient, ToolsWatch, ToolsWatchConfig};
use wasmgate_protocol::ProtocolVersion;

fn handshake_config(tools_watch: ToolsWatchConfig) -> ClientConfig {
    ClientConfig { versions: vec![ProtocolVersion::V2025_11_25], tools_watch, ..ClientConfig::default() }
}

fn quick_retries() -> ToolsWatchConfig {
    ToolsWatchConfig { initial_backoff: Duration::ZERO, max_backoff: Duration::from_millis(10), ..Default::default() }
}

/// A handshake-era client whose server declares `tools.listChanged` and session `s-1`.
async fn handshake(endpoint: &Endpoint, http: HttpConfig, config: ClientConfig) -> McpClient {
    let transport = HttpTransport::new(&http).unwrap();
    let connecting = tokio::spawn(McpClient::connect("scripted", transport, config));
    let init = json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {"listChanged": true}},
                      "serverInfo": {"name": "s", "version": "1"}});
    endpoint.expect("initialize").await.result(init, &[("mcp-session-id", "s-1")]).await;
    endpoint.expect("notifications/initialized").await.reply(202, &[], b"").await;
    connecting.await.unwrap().unwrap()
}

/// Lists the tools while the endpoint answers the `tools/list` with `names`.
async fn list(client: &McpClient, endpoint: &Endpoint, names: &[&str]) -> Vec<String> {
    let listing = tokio::spawn({
        let client = client.clone();
        async move { client.list_tools().await }
    });
    let tools: Vec<Value> = names.iter().map(|n| tool(n)).collect();
    endpoint.expect("tools/list").await.result(json!({"tools": tools}), &[]).await;
    listing.await.unwrap().unwrap().into_iter().map(|t| t.name).collect()
}

/// Waits (with the failure guard) until the tool list is made stale.
async fn stale_after(client: &McpClient, announce: impl Future<Output = ()>) {
    let mut changes = client.tool_list_changes();
    changes.borrow_and_update();
    announce.await;
    tokio::time::timeout(GUARD, changes.changed()).await.unwrap().unwrap();
    assert!(client.tools_stale());
}

fn list_changed() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
}

#[tokio::test]
async fn the_handshake_get_stream_carries_list_changed_and_the_next_listing_refreshes() {
    let endpoint = Endpoint::bind().await;
    let config = handshake_config(ToolsWatchConfig::default());
    let client = handshake(&endpoint, HttpConfig::new("scripted", &endpoint.url), config).await;
    let get = endpoint.expect_http("GET").await;
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    assert_eq!(get.header("mcp-session-id"), Some("s-1"));
    assert_eq!(get.header("mcp-protocol-version"), Some("2025-11-25"));
    let mut stream = get.sse().await;
    until(&client, ToolsWatch::Active).await;
    assert_eq!(list(&client, &endpoint, &["a"]).await, ["a"]);
    assert!(!client.tools_stale());

    stale_after(&client, event(&mut stream, &list_changed())).await;
    assert_eq!(list(&client, &endpoint, &["a", "b"]).await, ["a", "b"]);

    // A server request on the stream is answered with a POST of its own.
    event(&mut stream, &json!({"jsonrpc": "2.0", "id": "p1", "method": "ping"})).await;
    let answer = endpoint.next().await;
    assert_eq!(answer.body, json!({"jsonrpc": "2.0", "id": "p1", "result": {}}));
    answer.reply(202, &[], b"").await;
}

#[tokio::test]
async fn a_405_to_the_get_stream_means_the_server_offers_none_and_the_cache_is_trusted() {
    let endpoint = Endpoint::bind().await;
    let client =
        handshake(&endpoint, HttpConfig::new("scripted", &endpoint.url), handshake_config(quick_retries())).await;
    endpoint.expect_http("GET").await.reply(405, &[("allow", "POST, DELETE")], b"").await;
    until(&client, ToolsWatch::Off).await;
    assert_eq!(list(&client, &endpoint, &["a"]).await, ["a"], "no second GET: the next request is the listing");
    assert!(!client.tools_stale());
}

#[tokio::test]
async fn a_get_stream_that_ends_is_opened_again_and_the_list_is_stale_meanwhile() {
    let endpoint = Endpoint::bind().await;
    let client =
        handshake(&endpoint, HttpConfig::new("scripted", &endpoint.url), handshake_config(quick_retries())).await;
    let stream = endpoint.expect_http("GET").await.sse().await;
    until(&client, ToolsWatch::Active).await;
    drop(stream);
    until(&client, ToolsWatch::Connecting).await;
    assert!(client.tools_stale(), "nothing would announce a change while the stream is down");
    let again = endpoint.expect_http("GET").await;
    assert_eq!(again.header("mcp-session-id"), Some("s-1"));
    let _stream = again.sse().await;
    until(&client, ToolsWatch::Active).await;
}

#[tokio::test]
async fn an_event_over_the_message_cap_breaks_the_get_stream_which_is_then_opened_again() {
    let endpoint = Endpoint::bind().await;
    let mut http = HttpConfig::new("scripted", &endpoint.url);
    http.max_message_bytes = 1024;
    let client = handshake(&endpoint, http, handshake_config(quick_retries())).await;
    let mut stream = endpoint.expect_http("GET").await.sse().await;
    until(&client, ToolsWatch::Active).await;
    let huge = format!("data: {}\n\n", "x".repeat(4096));
    stream.write_all(huge.as_bytes()).await.unwrap();
    assert!(closed_by_client(&mut stream, GUARD).await, "the client drops a stream over the cap");
    let _stream = endpoint.expect_http("GET").await.sse().await;
    until(&client, ToolsWatch::Active).await;
}

#[tokio::test]
async fn close_ends_the_get_stream_and_then_the_session() {
    let endpoint = Endpoint::bind().await;
    let config = handshake_config(ToolsWatchConfig::default());
    let client = handshake(&endpoint, HttpConfig::new("scripted", &endpoint.url), config).await;
    let mut stream = endpoint.expect_http("GET").await.sse().await;
    until(&client, ToolsWatch::Active).await;
    let closing = tokio::spawn(async move { client.close().await });
    let delete = endpoint.expect_http("DELETE").await;
    assert_eq!(delete.header("mcp-session-id"), Some("s-1"));
    delete.reply(200, &[], b"").await;
    closing.await.unwrap();
    assert!(closed_by_client(&mut stream, GUARD).await, "the GET stream is closed");
}

#[tokio::test]
async fn a_2026_subscription_is_a_post_answered_with_a_lasting_sse_stream_that_close_drops() {
    let endpoint = Endpoint::bind().await;
    let transport = HttpTransport::new(&HttpConfig::new("scripted", &endpoint.url)).unwrap();
    let connecting = tokio::spawn(McpClient::connect("scripted", transport, ClientConfig::default()));
    let discover = json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {"listChanged": true}}});
    endpoint.expect("server/discover").await.result(discover, &[]).await;
    let client = connecting.await.unwrap().unwrap();

    let listen = endpoint.expect("subscriptions/listen").await;
    assert_eq!(listen.header("mcp-method"), Some("subscriptions/listen"));
    assert_eq!(listen.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(listen.body["params"]["notifications"], json!({"toolsListChanged": true}));
    let id = listen.id();
    let mut stream = listen.sse().await;
    let stamp = json!({"io.modelcontextprotocol/subscriptionId": id});
    let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                     "params": {"_meta": stamp, "notifications": {"toolsListChanged": true}}});
    stream.write_all(b": keep-alive\n\n").await.unwrap();
    event(&mut stream, &ack).await;
    until(&client, ToolsWatch::Active).await;
    assert_eq!(list(&client, &endpoint, &["a"]).await, ["a"]);
    assert!(!client.tools_stale());

    let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": stamp}});
    stale_after(&client, event(&mut stream, &changed)).await;
    client.close().await;
    assert!(closed_by_client(&mut stream, GUARD).await, "closing the stream is how HTTP unsubscribes");
}
