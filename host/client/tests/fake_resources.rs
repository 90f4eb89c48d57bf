//! `resources/list` and `resources/read` against a scripted fake server: paging and its
//! caps, text and blob reads, cancellation, errors, and servers without resources.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{expect_notification, expect_request};
use serde_json::{Value, json};
use wasmgate_client::{ClientConfig, ClientError, FakeServer, FakeTransport, McpClient};
use wasmgate_core::{CancellationToken, Contents, Resource};
use wasmgate_protocol::ReadResourceResult;
use wasmgate_protocol::codes::INVALID_PARAMS;

/// A connected 2026-07-28 client whose server declares `resources` (and no tool changes,
/// so no subscription is opened), and the server end.
async fn connected(config: ClientConfig) -> (McpClient, FakeServer) {
    let (transport, mut server) = FakeTransport::pair();
    let connecting = tokio::spawn(McpClient::connect("fake", transport, config));
    let (id, _) = expect_request(&mut server, "server/discover").await;
    let result = json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}, "resources": {}},
                        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "1"}}});
    server.respond(&id, result).await;
    (connecting.await.unwrap().expect("connect"), server)
}

/// Answers the next `resources/list` with resources at `uris`; returns the cursor asked for.
async fn page(server: &mut FakeServer, uris: &[&str], next_cursor: Option<&str>) -> Value {
    let (id, params) = expect_request(server, "resources/list").await;
    let resources: Vec<Value> = uris.iter().map(|uri| json!({"uri": uri, "name": uri})).collect();
    let mut result = json!({"resultType": "complete", "resources": resources});
    if let Some(cursor) = next_cursor {
        result["nextCursor"] = json!(cursor);
    }
    server.respond(&id, result).await;
    params.get("cursor").cloned().unwrap_or(Value::Null)
}

fn list(client: &McpClient) -> tokio::task::JoinHandle<Result<Vec<Resource>, ClientError>> {
    let client = client.clone();
    tokio::spawn(async move { client.list_resources().await })
}

fn read(client: &McpClient, uri: &str, cancel: CancellationToken) -> tokio::task::JoinHandle<ReadOutcome> {
    let (client, uri) = (client.clone(), uri.to_owned());
    tokio::spawn(async move { client.read_resource(&uri, cancel).await })
}

type ReadOutcome = Result<ReadResourceResult, ClientError>;

fn uris(resources: &[Resource]) -> Vec<&str> {
    resources.iter().map(|r| r.uri.as_str()).collect()
}

#[tokio::test]
async fn both_pages_of_resources_are_fetched_in_order_following_the_cursor() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    let listing = list(&client);
    assert_eq!(page(&mut server, &["file:///a", "file:///b"], Some("c1")).await, Value::Null);
    assert_eq!(page(&mut server, &["file:///c"], None).await, json!("c1"));
    assert_eq!(uris(&listing.await.unwrap().unwrap()), ["file:///a", "file:///b", "file:///c"]);
}

#[tokio::test]
async fn a_repeated_resources_cursor_ends_the_listing_instead_of_looping() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    let listing = list(&client);
    page(&mut server, &["file:///a"], Some("again")).await;
    page(&mut server, &["file:///b"], Some("again")).await;
    match listing.await.unwrap() {
        Err(ClientError::MalformedMessage { detail }) => assert!(detail.contains("repeated the cursor"), "{detail}"),
        other => panic!("expected a malformed-message error, got {other:?}"),
    }
}

#[tokio::test]
async fn more_resources_than_the_cap_across_pages_is_refused() {
    let config = ClientConfig { max_resources: 3, ..ClientConfig::default() };
    let (client, mut server) = connected(config).await;
    let listing = list(&client);
    page(&mut server, &["file:///a", "file:///b"], Some("1")).await;
    page(&mut server, &["file:///c", "file:///d"], None).await;
    assert_eq!(listing.await.unwrap(), Err(ClientError::LimitExceeded { what: "resources".into(), limit: 3 }));
}

#[tokio::test]
async fn a_server_that_pages_resources_forever_is_cut_off_at_the_page_cap() {
    let config = ClientConfig { max_list_pages: 2, ..ClientConfig::default() };
    let (client, mut server) = connected(config).await;
    let listing = list(&client);
    page(&mut server, &["file:///a"], Some("1")).await;
    page(&mut server, &["file:///b"], Some("2")).await;
    let limit = Err(ClientError::LimitExceeded { what: "resources/list pages".into(), limit: 2 });
    assert_eq!(listing.await.unwrap(), limit);
}

#[tokio::test]
async fn the_same_uri_on_two_pages_is_refused() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    let listing = list(&client);
    page(&mut server, &["file:///a"], Some("1")).await;
    page(&mut server, &["file:///a"], None).await;
    match listing.await.unwrap() {
        Err(ClientError::MalformedMessage { detail }) => assert!(detail.contains("on two pages"), "{detail}"),
        other => panic!("expected a malformed-message error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_server_without_the_resources_capability_is_not_asked() {
    let (client, mut server) = common::connected(ClientConfig::default()).await;
    assert_eq!(client.list_resources().await, Ok(Vec::new()));
    let error = client.read_resource("file:///a", CancellationToken::new()).await.unwrap_err();
    assert!(matches!(&error, ClientError::Unsupported(why) if why.contains("resources capability")), "{error}");
    assert_eq!(server.try_recv(), None, "neither call sent a request");
}

#[tokio::test]
async fn reading_returns_text_and_blob_contents_for_the_uri_asked() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    let reading = read(&client, "file:///dir", CancellationToken::new());
    let (id, params) = expect_request(&mut server, "resources/read").await;
    assert_eq!(params["uri"], "file:///dir");
    let contents = json!([{"uri": "file:///dir/a.txt", "mimeType": "text/plain", "text": "hello"},
                          {"uri": "file:///dir/b.png", "blob": "iVBORw0KGgo="}]);
    server.respond(&id, json!({"resultType": "complete", "contents": contents})).await;
    let result = reading.await.unwrap().unwrap();
    match &result.contents[..] {
        [Contents::Text { text, mime_type, .. }, Contents::Blob { blob, .. }] => {
            assert_eq!((text.as_str(), mime_type.as_deref()), ("hello", Some("text/plain")));
            assert_eq!(blob, "iVBORw0KGgo=");
        }
        other => panic!("expected text then blob, got {other:?}"),
    }
    assert_eq!(result.raw["contents"], contents);
}

#[tokio::test]
async fn a_cancelled_read_sends_notifications_cancelled() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    let cancel = CancellationToken::new();
    let reading = read(&client, "file:///slow", cancel.clone());
    let (id, _) = expect_request(&mut server, "resources/read").await;
    cancel.cancel();
    assert_eq!(reading.await.unwrap().unwrap_err(), ClientError::Cancelled);
    let params = expect_notification(&mut server, "notifications/cancelled").await;
    assert_eq!(params["requestId"], id.to_value());
}

#[tokio::test(start_paused = true)]
async fn a_read_without_an_answer_times_out_after_the_request_timeout() {
    let config = ClientConfig { request_timeout: Duration::from_secs(5), ..ClientConfig::default() };
    let (client, mut server) = connected(config).await;
    let reading = read(&client, "file:///slow", CancellationToken::new());
    let (id, _) = expect_request(&mut server, "resources/read").await;
    let timeout = ClientError::Timeout { method: "resources/read".into(), after: Duration::from_secs(5) };
    assert_eq!(reading.await.unwrap().unwrap_err(), timeout);
    let params = expect_notification(&mut server, "notifications/cancelled").await;
    assert_eq!(params["requestId"], id.to_value());
}

#[tokio::test]
async fn a_jsonrpc_error_on_read_surfaces_as_rpc() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    let reading = read(&client, "file:///missing", CancellationToken::new());
    let (id, _) = expect_request(&mut server, "resources/read").await;
    server.respond_error(&id, INVALID_PARAMS, "Resource not found").await;
    match reading.await.unwrap() {
        Err(ClientError::Rpc { code, message, .. }) => {
            assert_eq!((code, message.as_str()), (-32602, "Resource not found"))
        }
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_read_that_asks_for_input_is_unsupported() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    let reading = read(&client, "file:///guarded", CancellationToken::new());
    let (id, _) = expect_request(&mut server, "resources/read").await;
    server.respond(&id, json!({"resultType": "input_required", "requestState": "s"})).await;
    assert!(matches!(reading.await.unwrap(), Err(ClientError::Unsupported(_))));
}

#[tokio::test]
async fn read_contents_with_both_text_and_blob_are_a_malformed_message() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    let reading = read(&client, "file:///a", CancellationToken::new());
    let (id, _) = expect_request(&mut server, "resources/read").await;
    server.respond(&id, json!({"contents": [{"uri": "file:///a", "text": "x", "blob": "eA=="}]})).await;
    assert!(matches!(reading.await.unwrap(), Err(ClientError::MalformedMessage { .. })));
}
