//! `tools/list` against a scripted fake server: paging, the caps on tools, bytes and
//! pages, a looping cursor, and the cache that `list_changed` makes stale.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{connected, expect_request, tool};
use serde_json::{Value, json};
use wasmgate_client::{ClientConfig, ClientError, FakeServer, McpClient};

fn names(tools: &[wasmgate_protocol::ToolDefinition]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

/// Answers the next `tools/list` with `tools` and `next_cursor`; returns the cursor asked for.
async fn page(server: &mut FakeServer, tools: &[&str], next_cursor: Option<&str>) -> Value {
    let (id, params) = expect_request(server, "tools/list").await;
    let mut result = json!({"tools": tools.iter().map(|n| tool(n)).collect::<Vec<_>>()});
    if let Some(cursor) = next_cursor {
        result["nextCursor"] = json!(cursor);
    }
    server.respond(&id, result).await;
    params.get("cursor").cloned().unwrap_or(Value::Null)
}

fn list(client: &McpClient) -> tokio::task::JoinHandle<Result<Vec<wasmgate_protocol::ToolDefinition>, ClientError>> {
    let client = client.clone();
    tokio::spawn(async move { client.list_tools().await })
}

#[tokio::test]
async fn all_pages_are_fetched_in_order_following_the_cursor() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    let listing = list(&client);
    assert_eq!(page(&mut server, &["a", "b"], Some("c1")).await, Value::Null);
    assert_eq!(page(&mut server, &["c"], Some("c2")).await, json!("c1"));
    assert_eq!(page(&mut server, &["d"], None).await, json!("c2"));
    assert_eq!(names(&listing.await.unwrap().unwrap()), ["a", "b", "c", "d"]);
    assert!(!client.tools_stale());
}

#[tokio::test]
async fn a_repeated_cursor_ends_the_listing_instead_of_looping() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    let listing = list(&client);
    page(&mut server, &["a"], Some("again")).await;
    page(&mut server, &["b"], Some("again")).await;
    match listing.await.unwrap() {
        Err(ClientError::MalformedMessage { detail }) => assert!(detail.contains("repeated the cursor")),
        other => panic!("expected a malformed-message error, got {other:?}"),
    }
}

#[tokio::test]
async fn more_tools_than_the_cap_across_pages_is_refused() {
    let config = ClientConfig { max_tools: 3, ..ClientConfig::default() };
    let (client, mut server) = connected(config).await;
    let listing = list(&client);
    page(&mut server, &["a", "b"], Some("1")).await;
    page(&mut server, &["c", "d"], None).await;
    assert_eq!(listing.await.unwrap(), Err(ClientError::LimitExceeded { what: "tools".into(), limit: 3 }));
}

#[tokio::test]
async fn more_bytes_than_the_cap_across_pages_is_refused() {
    let config = ClientConfig { max_list_bytes: 200, ..ClientConfig::default() };
    let (client, mut server) = connected(config).await;
    let listing = list(&client);
    page(&mut server, &["a"], Some("1")).await;
    page(&mut server, &["b"], Some("2")).await;
    assert_eq!(listing.await.unwrap(), Err(ClientError::LimitExceeded { what: "tools/list bytes".into(), limit: 200 }));
}

#[tokio::test]
async fn a_server_that_pages_forever_is_cut_off_at_the_page_cap() {
    let config = ClientConfig { max_list_pages: 3, ..ClientConfig::default() };
    let (client, mut server) = connected(config).await;
    let listing = list(&client);
    for n in 0..3 {
        page(&mut server, &[&format!("t{n}")], Some(&format!("c{n}"))).await;
    }
    assert_eq!(listing.await.unwrap(), Err(ClientError::LimitExceeded { what: "tools/list pages".into(), limit: 3 }));
}

#[tokio::test]
async fn the_same_name_on_two_pages_is_refused() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    let listing = list(&client);
    page(&mut server, &["delete"], Some("1")).await;
    page(&mut server, &["delete"], None).await;
    assert!(matches!(listing.await.unwrap(), Err(ClientError::MalformedMessage { .. })));
}

#[tokio::test]
async fn list_changed_marks_the_cache_stale_and_the_next_listing_refreshes() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    assert!(client.tools_stale(), "nothing fetched yet");
    let listing = list(&client);
    page(&mut server, &["a"], None).await;
    assert_eq!(names(&listing.await.unwrap().unwrap()), ["a"]);
    assert!(!client.tools_stale());
    assert_eq!(names(&client.list_tools().await.unwrap()), ["a"], "served from the cache");
    assert_eq!(server.try_recv(), None, "the cached listing sent nothing");

    server.send(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})).await;
    // The notification is routed before this ping's answer, which proves it was seen.
    server.send(json!({"jsonrpc": "2.0", "id": "sync", "method": "ping"})).await;
    assert_eq!(server.recv().await.unwrap()["id"], "sync");
    assert!(client.tools_stale());
    let listing = list(&client);
    page(&mut server, &["a", "b"], None).await;
    assert_eq!(names(&listing.await.unwrap().unwrap()), ["a", "b"]);
    assert!(!client.tools_stale());
}
