//! `resources/subscribe` against a scripted fake server: a 2026-07-28 server follows a
//! resource on a `subscriptions/listen` of its own, a handshake-era server by
//! `resources/subscribe`; updates move the subscription, the last one dropped ends it
//! upstream, and a server that does not offer subscriptions or will not honor the URI
//! is refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{GUARD, acknowledged, expect_notification, expect_request};
use serde_json::{Value, json};
use wasmgate_client::{ClientConfig, ClientError, FakeServer, FakeTransport, McpClient, ResourceSubscription};
use wasmgate_protocol::Id;

/// A connected client whose server speaks `version` and declares `resources`
/// (`subscribe` as given), and the server end.
async fn connected(version: &str, subscribe: bool) -> (McpClient, FakeServer) {
    let (transport, mut server) = FakeTransport::pair();
    let config = ClientConfig::default();
    let connecting = tokio::spawn(McpClient::connect("fake", transport, config));
    let capabilities = json!({"tools": {}, "resources": {"subscribe": subscribe}});
    if version == "2026-07-28" {
        let (id, _) = expect_request(&mut server, "server/discover").await;
        let result = json!({"supportedVersions": [version], "capabilities": capabilities,
                            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "1"}}});
        server.respond(&id, result).await;
    } else {
        let (id, _) = expect_request(&mut server, "server/discover").await;
        server.respond_error(&id, -32601, "Method not found").await;
        let (id, _) = expect_request(&mut server, "initialize").await;
        let result = json!({"protocolVersion": version, "capabilities": capabilities, "serverInfo": {"name": "old", "version": "1"}});
        server.respond(&id, result).await;
        expect_notification(&mut server, "notifications/initialized").await;
    }
    (connecting.await.unwrap().expect("connect"), server)
}

fn updated(uri: &str, subscription: Option<&Id>) -> Value {
    let mut params = json!({"uri": uri});
    if let Some(id) = subscription {
        params["_meta"] = json!({"io.modelcontextprotocol/subscriptionId": id.to_value()});
    }
    json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": params})
}

/// `client` subscribing to `uri` in a task of its own (the test plays the server).
fn subscribe_in_task(
    client: &McpClient,
    uri: &str,
) -> tokio::task::JoinHandle<Result<ResourceSubscription, wasmgate_client::ClientError>> {
    let (client, uri) = (client.clone(), uri.to_owned());
    tokio::spawn(async move { client.subscribe_resource(&uri).await })
}

async fn next_change(subscription: &mut ResourceSubscription) -> bool {
    tokio::time::timeout(GUARD, subscription.changed()).await.expect("a change in time")
}

#[tokio::test]
async fn a_2026_server_follows_a_resource_on_a_listen_of_its_own_until_the_last_subscription_is_dropped() {
    let (client, mut server) = connected("2026-07-28", true).await;
    let subscribing = subscribe_in_task(&client, "file:///notes.md");
    let (listen, params) = expect_request(&mut server, "subscriptions/listen").await;
    assert_eq!(params["notifications"], json!({"resourceSubscriptions": ["file:///notes.md"]}));
    server.send(acknowledged(&listen, json!({"resourceSubscriptions": ["file:///notes.md"]}))).await;
    let mut first = subscribing.await.unwrap().unwrap();
    let mut second = client.subscribe_resource("file:///notes.md").await.unwrap();
    assert_eq!(server.try_recv(), None, "one upstream subscription serves both");

    server.send(updated("file:///other.md", Some(&listen))).await;
    server.send(updated("file:///notes.md", Some(&listen))).await;
    assert!(next_change(&mut first).await && next_change(&mut second).await);

    drop(first);
    assert_eq!(server.try_recv(), None, "still followed by the second");
    drop(second);
    let cancelled = expect_notification(&mut server, "notifications/cancelled").await;
    assert_eq!(cancelled["requestId"], listen.to_value());
}

#[tokio::test]
async fn a_handshake_era_server_is_asked_to_subscribe_and_to_unsubscribe() {
    let (client, mut server) = connected("2025-11-25", true).await;
    let subscribing = subscribe_in_task(&client, "file:///notes.md");
    let (id, params) = expect_request(&mut server, "resources/subscribe").await;
    assert_eq!(Value::Object(params), json!({"uri": "file:///notes.md"}));
    server.respond(&id, json!({})).await;
    let mut subscription = subscribing.await.unwrap().unwrap();
    server.send(updated("file:///notes.md", None)).await;
    assert!(next_change(&mut subscription).await);
    drop(subscription);
    let (id, params) = expect_request(&mut server, "resources/unsubscribe").await;
    assert_eq!(Value::Object(params), json!({"uri": "file:///notes.md"}));
    server.respond(&id, json!({})).await;
}

#[tokio::test]
async fn a_server_without_subscriptions_is_not_asked_and_one_that_leaves_the_uri_out_is_refused() {
    let (client, mut server) = connected("2026-07-28", false).await;
    let outcome = client.subscribe_resource("file:///notes.md").await;
    assert!(matches!(outcome, Err(ClientError::Unsupported(_))), "{outcome:?}");
    assert_eq!(server.try_recv(), None, "nothing was sent");

    let (client, mut server) = connected("2026-07-28", true).await;
    let subscribing = subscribe_in_task(&client, "file:///secret.md");
    let (listen, _) = expect_request(&mut server, "subscriptions/listen").await;
    server.send(acknowledged(&listen, json!({}))).await;
    let outcome = subscribing.await.unwrap();
    assert!(
        matches!(&outcome, Err(ClientError::Unsupported(why)) if why.contains("will not send updates")),
        "{outcome:?}"
    );
    let cancelled = expect_notification(&mut server, "notifications/cancelled").await;
    assert_eq!(cancelled["requestId"], listen.to_value(), "the refused subscription is ended");

    let subscribing = subscribe_in_task(&client, "file:///gone.md");
    let (listen, _) = expect_request(&mut server, "subscriptions/listen").await;
    server.respond_error(&listen, -32602, "no such resource").await;
    let outcome = subscribing.await.unwrap();
    assert!(matches!(outcome, Err(ClientError::Rpc { code: -32602, .. })), "{outcome:?}");
}

#[tokio::test]
async fn a_connection_follows_at_most_max_followed_uris() {
    let (client, mut server) = connected("2025-11-25", true).await;
    let mut held = Vec::new();
    for n in 0..wasmgate_client::MAX_FOLLOWED {
        let subscribing = subscribe_in_task(&client, &format!("file:///n/{n}"));
        let (id, _) = expect_request(&mut server, "resources/subscribe").await;
        server.respond(&id, json!({})).await;
        held.push(subscribing.await.unwrap().unwrap());
    }
    let over = client.subscribe_resource("file:///one-more").await;
    assert!(matches!(over, Err(ClientError::LimitExceeded { limit: 256, .. })), "{over:?}");
    assert_eq!(server.try_recv(), None, "nothing was sent for it");
}
