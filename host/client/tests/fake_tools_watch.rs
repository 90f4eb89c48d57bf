//! The 2026-07-28 tool change subscription (`subscriptions/listen`) against a scripted
//! fake server, which behaves like stdio (one channel, cancellation by notification):
//! when the client subscribes, what the acknowledgment and the stream's notifications do
//! to the cached tool list, how an ended or refused subscription is retried and within
//! which bounds, and how `close` ends it. Synchronisation is on messages and on the
//! client's watch state, with timeouts only as failure guards.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{
    GUARD, acknowledged, discover_result, expect_notification, expect_request, subscribe, tool, tools_changed_on, until,
};
use serde_json::{Value, json};
use wasmgate_client::{ClientConfig, FakeServer, FakeTransport, McpClient, ToolsWatch, ToolsWatchConfig};
use wasmgate_protocol::Id;
use wasmgate_protocol::codes::{INTERNAL_ERROR, METHOD_NOT_FOUND};

/// Retries at once (the floor of 10 ms), at most `attempts` in a row.
fn quick_retries(attempts: u32) -> ClientConfig {
    let tools_watch = ToolsWatchConfig {
        max_attempts: attempts,
        initial_backoff: Duration::ZERO,
        max_backoff: Duration::from_millis(10),
        ..ToolsWatchConfig::default()
    };
    ClientConfig { tools_watch, ..ClientConfig::default() }
}

/// Never retries within a test's lifetime.
fn slow_retries() -> ClientConfig {
    let hour = Duration::from_secs(3600);
    let tools_watch = ToolsWatchConfig { initial_backoff: hour, max_backoff: hour, ..ToolsWatchConfig::default() };
    ClientConfig { tools_watch, ..ClientConfig::default() }
}

async fn connect_to(discover: Value, config: ClientConfig) -> (McpClient, FakeServer) {
    let (transport, mut server) = FakeTransport::pair();
    let connecting = tokio::spawn(McpClient::connect("fake", transport, config));
    let (id, _) = expect_request(&mut server, "server/discover").await;
    server.respond(&id, discover).await;
    (connecting.await.unwrap().unwrap(), server)
}

/// Lists the tools while the fake server answers the `tools/list` with `names`.
async fn list(client: &McpClient, server: &mut FakeServer, names: &[&str]) -> Vec<String> {
    let listing = tokio::spawn({
        let client = client.clone();
        async move { client.list_tools().await }
    });
    let (id, _) = expect_request(server, "tools/list").await;
    server.respond(&id, json!({"tools": names.iter().map(|n| tool(n)).collect::<Vec<_>>()})).await;
    listing.await.unwrap().unwrap().into_iter().map(|t| t.name).collect()
}

/// Everything the server sent so far has been routed: a ping's answer comes after it.
async fn routed(server: &mut FakeServer) {
    server.send(json!({"jsonrpc": "2.0", "id": "sync", "method": "ping"})).await;
    assert_eq!(server.recv().await.unwrap()["id"], "sync");
}

#[tokio::test]
async fn a_change_on_the_subscription_makes_the_cached_list_stale_and_the_next_listing_refreshes() {
    let (client, mut server) = connect_to(discover_result(), ClientConfig::default()).await;
    assert_eq!(*client.tools_watch().borrow(), ToolsWatch::Connecting, "listChanged is declared: subscribing");
    let subscription = subscribe(&mut server, &client).await;
    assert_eq!(list(&client, &mut server, &["a"]).await, ["a"]);
    assert!(!client.tools_stale(), "the subscription is open: the cache is trusted");

    let mut changes = client.tool_list_changes();
    changes.borrow_and_update();
    server.send(tools_changed_on(&subscription)).await;
    tokio::time::timeout(GUARD, changes.changed()).await.unwrap().unwrap();
    assert!(client.tools_stale());
    assert_eq!(list(&client, &mut server, &["a", "b"]).await, ["a", "b"]);
    assert!(!client.tools_stale());
}

#[tokio::test]
async fn a_server_that_does_not_declare_list_changed_gets_no_subscription_and_its_list_stays_cached() {
    let discover = json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}});
    let (client, mut server) = connect_to(discover, ClientConfig::default()).await;
    assert_eq!(*client.tools_watch().borrow(), ToolsWatch::Off);
    assert_eq!(list(&client, &mut server, &["a"]).await, ["a"], "the first request is the listing");
    assert_eq!(client.list_tools().await.unwrap().len(), 1);
    assert_eq!(server.try_recv(), None, "served from the cache");
}

#[tokio::test]
async fn watching_turned_off_in_the_config_sends_no_subscription() {
    let config = ClientConfig {
        tools_watch: ToolsWatchConfig { enabled: false, ..ToolsWatchConfig::default() },
        ..ClientConfig::default()
    };
    let (client, mut server) = connect_to(discover_result(), config).await;
    assert_eq!(*client.tools_watch().borrow(), ToolsWatch::Off);
    assert_eq!(list(&client, &mut server, &["a"]).await, ["a"], "the first request is the listing");
    assert!(!client.tools_stale());
}

#[tokio::test]
async fn until_the_subscription_is_acknowledged_the_list_is_fetched_on_every_use() {
    let (client, mut server) = connect_to(discover_result(), ClientConfig::default()).await;
    let (subscription, _) = expect_request(&mut server, "subscriptions/listen").await;
    assert_eq!(list(&client, &mut server, &["a"]).await, ["a"]);
    assert!(client.tools_stale(), "nothing would announce a change yet");
    assert_eq!(list(&client, &mut server, &["a"]).await, ["a"], "so the second use asks again");

    server.send(acknowledged(&Id::Int(999), json!({"toolsListChanged": true}))).await;
    routed(&mut server).await;
    assert_eq!(*client.tools_watch().borrow(), ToolsWatch::Connecting, "another subscription's ack is ignored");

    server.send(acknowledged(&subscription, json!({"toolsListChanged": true}))).await;
    until(&client, ToolsWatch::Active).await;
    assert!(client.tools_stale(), "a list fetched before the ack may predate an unannounced change");
    assert_eq!(list(&client, &mut server, &["a", "b"]).await, ["a", "b"]);
    assert!(!client.tools_stale());
}

#[tokio::test]
async fn an_ended_subscription_leaves_the_list_stale_on_every_use_while_it_is_down() {
    let (client, mut server) = connect_to(discover_result(), slow_retries()).await;
    let subscription = subscribe(&mut server, &client).await;
    assert_eq!(list(&client, &mut server, &["a"]).await, ["a"]);
    let closing =
        json!({"resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": subscription.to_value()}});
    server.respond(&subscription, closing).await;
    until(&client, ToolsWatch::Connecting).await;
    assert!(client.tools_stale());
    assert_eq!(list(&client, &mut server, &["a"]).await, ["a"]);
    assert_eq!(list(&client, &mut server, &["a"]).await, ["a"], "every use asks while the stream is down");
}

#[tokio::test]
async fn a_subscription_the_server_ends_is_listened_for_again_under_a_new_id() {
    let (client, mut server) = connect_to(discover_result(), quick_retries(5)).await;
    let first = subscribe(&mut server, &client).await;
    server.respond(&first, json!({"resultType": "complete"})).await;
    let second = subscribe(&mut server, &client).await;
    assert_ne!(second, first);
    // On stdio a server may also end a subscription with notifications/cancelled.
    let cancelled =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": second.to_value()}});
    server.send(cancelled).await;
    let third = subscribe(&mut server, &client).await;
    assert_ne!(third, second);

    let mut changes = client.tool_list_changes();
    changes.borrow_and_update();
    server.send(tools_changed_on(&third)).await;
    tokio::time::timeout(GUARD, changes.changed()).await.unwrap().unwrap();
    assert!(client.tools_stale());
}

#[tokio::test]
async fn failed_subscription_attempts_are_bounded_and_then_the_list_is_stale_for_good() {
    let (client, mut server) = connect_to(discover_result(), quick_retries(3)).await;
    for _ in 0..3 {
        let (id, _) = expect_request(&mut server, "subscriptions/listen").await;
        server.respond_error(&id, INTERNAL_ERROR, "Subscription limit reached").await;
    }
    until(&client, ToolsWatch::Failed).await;
    assert_eq!(list(&client, &mut server, &["a"]).await, ["a"], "no fourth attempt: the next request is a listing");
    assert!(client.tools_stale(), "with no stream, the list is never trusted");
}

#[tokio::test]
async fn a_server_without_subscriptions_listen_is_not_asked_again() {
    let (client, mut server) = connect_to(discover_result(), quick_retries(5)).await;
    let (id, _) = expect_request(&mut server, "subscriptions/listen").await;
    server.respond_error(&id, METHOD_NOT_FOUND, "Method not found").await;
    until(&client, ToolsWatch::Failed).await;
    assert_eq!(list(&client, &mut server, &["a"]).await, ["a"], "no retry: the next request is a listing");
}

#[tokio::test]
async fn an_acknowledgment_without_tool_changes_ends_the_subscription() {
    let (client, mut server) = connect_to(discover_result(), quick_retries(5)).await;
    let (id, _) = expect_request(&mut server, "subscriptions/listen").await;
    server.send(acknowledged(&id, json!({}))).await;
    let params = expect_notification(&mut server, "notifications/cancelled").await;
    assert_eq!(params["requestId"], id.to_value());
    assert_eq!(*client.tools_watch().borrow(), ToolsWatch::Failed);
    assert_eq!(list(&client, &mut server, &["a"]).await, ["a"], "no retry: the next request is a listing");
}

#[tokio::test(start_paused = true)]
async fn an_unacknowledged_subscription_is_cancelled_and_tried_again() {
    let config = ClientConfig { request_timeout: Duration::from_secs(5), ..quick_retries(5) };
    let (client, mut server) = connect_to(discover_result(), config).await;
    let (silent, _) = expect_request(&mut server, "subscriptions/listen").await;
    let params = expect_notification(&mut server, "notifications/cancelled").await;
    assert_eq!(params["requestId"], silent.to_value());
    let retried = subscribe(&mut server, &client).await;
    assert_ne!(retried, silent);
}

#[tokio::test]
async fn close_cancels_the_subscription_with_a_notification_on_a_shared_channel() {
    let (client, mut server) = connect_to(discover_result(), ClientConfig::default()).await;
    let subscription = subscribe(&mut server, &client).await;
    client.close().await;
    let params = expect_notification(&mut server, "notifications/cancelled").await;
    assert_eq!(params["requestId"], subscription.to_value());
}

#[tokio::test]
async fn close_over_stream_per_request_transports_releases_the_subscription_stream_instead() {
    let (transport, mut server) = FakeTransport::pair();
    let connecting =
        tokio::spawn(McpClient::connect("http", transport.emulating_http_cancel(), ClientConfig::default()));
    let (id, _) = expect_request(&mut server, "server/discover").await;
    server.respond(&id, discover_result()).await;
    let client = connecting.await.unwrap().unwrap();
    let subscription = subscribe(&mut server, &client).await;
    client.close().await;
    assert!(server.released().contains(&subscription), "closing the stream is the cancellation");
    assert_eq!(server.try_recv(), None, "no notifications/cancelled in the stateless HTTP era");
}
