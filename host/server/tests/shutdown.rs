//! Graceful shutdown on both transports: a call that finishes within the grace period
//! is answered normally; one that hangs has its token cancelled when the grace period
//! is over and is answered with the cancelled result; serving then ends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Fixture, Http, Stdio, bounded, stamped};
use serde_json::{Value, json};
use wasmgate_server::HttpConfig;

fn block(id: i64, text: &str) -> Value {
    stamped(id, "tools/call", json!({"name": "block", "arguments": {"text": text}}))
}

/// The grace period of these tests: long enough that the released call finishes
/// within it on a loaded machine, short enough that the hanging one is soon cancelled.
fn config() -> wasmgate_server::ServerConfig {
    wasmgate_server::ServerConfig { shutdown_grace: std::time::Duration::from_secs(2), ..common::config() }
}

/// Of two answers, one released and one cancelled, in either order.
fn one_finished_one_cancelled(texts: &[String]) {
    let mut texts = texts.to_vec();
    texts.sort();
    assert!(texts[0].starts_with("released "), "{texts:?}");
    assert_eq!(texts[1], "tool call cancelled", "{texts:?}");
}

#[tokio::test]
async fn stdio_shutdown_finishes_a_quick_call_and_cancels_a_hanging_one_after_the_grace_period() {
    let mut fixture = Fixture::new();
    let mut server = Stdio::start(fixture.backend.clone(), config());
    server.send(block(1, "a")).await;
    server.send(block(2, "b")).await;
    fixture.entered().await;
    fixture.entered().await;
    server.shutdown();
    fixture.release.add_permits(1);
    let hanging = fixture.cancelled().await;
    let rest = server.rest().await;
    let texts: Vec<String> =
        rest.iter().map(|m| m["result"]["content"][0]["text"].as_str().unwrap().to_owned()).collect();
    assert_eq!(texts.len(), 2, "{rest:?}");
    one_finished_one_cancelled(&texts);
    let cancelled = rest.iter().find(|m| m["result"]["isError"] == true).unwrap();
    assert_eq!(cancelled["id"], if hanging == "a" { 1 } else { 2 });
    server.finished().await.unwrap();
}

#[tokio::test]
async fn http_shutdown_finishes_a_quick_call_and_cancels_a_hanging_one_after_the_grace_period() {
    let mut fixture = Fixture::new();
    let mut server = Http::start(fixture.backend.clone(), config(), HttpConfig::default()).await;
    let mut calls = Vec::new();
    for (id, text) in [(1, "a"), (2, "b")] {
        let request = reqwest::Client::new()
            .post(&server.url)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "block")
            .body(block(id, text).to_string());
        calls.push(tokio::spawn(async move { request.send().await.unwrap().text().await.unwrap() }));
        fixture.entered().await;
    }
    server.shutdown();
    fixture.release.add_permits(1);
    fixture.cancelled().await;
    let mut texts = Vec::new();
    for call in calls {
        let body: Value = serde_json::from_str(&bounded("an answer", call).await.unwrap()).unwrap();
        texts.push(body["result"]["content"][0]["text"].as_str().unwrap().to_owned());
    }
    one_finished_one_cancelled(&texts);
    let addr = server.addr;
    server.finished().await.unwrap();
    assert!(tokio::net::TcpStream::connect(addr).await.is_err(), "the listener is closed");
}

#[tokio::test]
async fn http_shutdown_ends_open_subscriptions_and_idle_connections() {
    let fixture = Fixture::new();
    let long = wasmgate_server::ServerConfig { shutdown_grace: std::time::Duration::from_secs(5), ..config() };
    let mut server = Http::start(fixture.backend.clone(), long.clone(), HttpConfig::default()).await;
    let client = wasmgate_testing::http_client(&server.url, &wasmgate_protocol::SUPPORTED, None).await;
    let mut watch = client.tools_watch();
    bounded("the subscription", watch.wait_for(|s| *s == wasmgate_client::ToolsWatch::Active)).await.unwrap();
    server.shutdown();
    // Nothing is in flight but a subscription and pooled connections: well within the grace period.
    let started = std::time::Instant::now();
    server.finished().await.unwrap();
    assert!(started.elapsed() < long.shutdown_grace, "waited for the grace period: {:?}", started.elapsed());
    client.close().await;
}
