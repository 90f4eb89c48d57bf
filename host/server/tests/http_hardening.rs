//! The HTTP face's hardening, one limit per test: bearer token (401), `Origin` (403),
//! body size (413), header size (431), per-client concurrency (429), session cap (503)
//! and its per-client share (429), body read time (408), and reads over the per-client
//! limit (429).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Fixture, Http, bounded, config, stamped};
use reqwest::StatusCode;
use serde_json::{Value, json};
use wasmgate_client::{ClientConfig, HttpTransport, McpClient};
use wasmgate_oauth::SecretSource;
use wasmgate_server::HttpConfig;

/// POSTs a stamped 2026-07-28 request with its mirrored headers (and `extra`).
async fn post(url: &str, body: &Value, extra: &[(&str, &str)]) -> (StatusCode, Value) {
    let method = body["method"].as_str().unwrap_or_default();
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .body(body.to_string());
    if let Some(name) = body["params"]["name"].as_str() {
        request = request.header("mcp-name", name);
    }
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    let response = bounded("an HTTP answer", request.send()).await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn discover() -> Value {
    stamped(1, "server/discover", json!({}))
}

#[tokio::test]
async fn open_metrics_answer_only_a_request_that_names_the_loopback_host() {
    let render: std::sync::Arc<dyn Fn() -> String + Send + Sync> = std::sync::Arc::new(|| "up 1\n".into());
    let http = HttpConfig { metrics: Some(render), ..HttpConfig::default() };
    let server = Http::start(Fixture::new().backend, config(), http).await;
    let metrics = server.url.replace("/mcp", "/metrics");
    let port = metrics.split(':').nth(2).and_then(|rest| rest.split('/').next()).unwrap().to_owned();
    let client = reqwest::Client::new();
    for host in [format!("127.0.0.1:{port}"), format!("localhost:{port}"), "LOCALHOST".into(), "[::1]:9".into()] {
        let response = client.get(&metrics).header("host", &host).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{host}");
    }
    // A page whose name was rebound to 127.0.0.1 sends that name.
    for host in ["evil.example", "evil.example:80", "127.0.0.1.evil.example"] {
        let response = client.get(&metrics).header("host", host).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{host}");
    }
}

#[tokio::test]
async fn a_bearer_token_when_set_is_required_and_compared_exactly() {
    let http = HttpConfig { bearer_token: Some("s3cret".into()), ..HttpConfig::default() };
    let server = Http::start(Fixture::new().backend, config(), http).await;
    let (status, body) = post(&server.url, &discover(), &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(body.get("id").is_none() && body["error"].is_object(), "{body}");
    assert_eq!(post(&server.url, &discover(), &[("authorization", "Bearer s3cre")]).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(post(&server.url, &discover(), &[("authorization", "Bearer s3cret")]).await.0, StatusCode::OK);

    let mut target = wasmgate_client::HttpConfig::new("wasmgate", &server.url);
    target.bearer = Some(SecretSource::Value("s3cret".into()));
    let client = McpClient::connect("wasmgate", HttpTransport::new(&target).unwrap(), ClientConfig::default());
    let client = bounded("the client to connect", client).await.unwrap();
    assert_eq!(bounded("tools/list", client.list_tools()).await.unwrap().len(), 4);
    client.close().await;
}

#[tokio::test]
async fn a_foreign_origin_is_forbidden_while_loopback_and_listed_origins_pass() {
    let http = HttpConfig { allowed_origins: vec!["https://app.example.com".into()], ..HttpConfig::default() };
    let server = Http::start(Fixture::new().backend, config(), http).await;
    for (origin, expected) in [
        ("http://evil.example", StatusCode::FORBIDDEN),
        ("http://localhost.evil.example:8080", StatusCode::FORBIDDEN),
        ("null", StatusCode::FORBIDDEN),
        ("http://localhost:6274", StatusCode::OK),
        ("http://127.0.0.1", StatusCode::OK),
        ("http://[::1]:3000", StatusCode::OK),
        ("https://app.example.com", StatusCode::OK),
    ] {
        assert_eq!(post(&server.url, &discover(), &[("origin", origin)]).await.0, expected, "{origin}");
    }
}

#[tokio::test]
async fn a_body_over_the_limit_is_payload_too_large() {
    let http = HttpConfig { max_body_bytes: 1024, ..HttpConfig::default() };
    let server = Http::start(Fixture::new().backend, config(), http).await;
    let big = stamped(1, "tools/call", json!({"name": "echo", "arguments": {"text": "x".repeat(2000)}}));
    assert_eq!(post(&server.url, &big, &[]).await.0, StatusCode::PAYLOAD_TOO_LARGE);
    let small = stamped(2, "tools/call", json!({"name": "echo", "arguments": {"text": "x".repeat(100)}}));
    assert_eq!(post(&server.url, &small, &[]).await.0, StatusCode::OK);
}

#[tokio::test]
async fn headers_over_the_limit_are_refused() {
    let http = HttpConfig { max_header_bytes: 1024, ..HttpConfig::default() };
    let server = Http::start(Fixture::new().backend, config(), http).await;
    let long = "x".repeat(2000);
    assert_eq!(
        post(&server.url, &discover(), &[("x-padding", &long)]).await.0,
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
    );
    assert_eq!(post(&server.url, &discover(), &[("x-padding", "short")]).await.0, StatusCode::OK);
}

#[tokio::test]
async fn a_header_far_over_the_limit_is_answered_431_not_cut_off() {
    // A megabyte of token: past what hyper buffers, so the answer must survive the
    // rest of the request arriving after it.
    let server = Http::start(Fixture::new().backend, config(), HttpConfig::default()).await;
    let token = format!("Bearer {}", "t".repeat(1 << 20));
    for _ in 0..3 {
        assert_eq!(
            post(&server.url, &discover(), &[("authorization", &token)]).await.0,
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
        );
    }
    // A client that writes its whole request before it reads.
    let address = server.url.trim_start_matches("http://").split('/').next().unwrap().to_owned();
    let body = discover().to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nAuthorization: {token}\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    for _ in 0..3 {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
        let _ = stream.write_all(request.as_bytes()).await;
        let mut answer = Vec::new();
        let read = bounded("the answer", stream.read_to_end(&mut answer)).await;
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 431"), "{read:?}: {answer:?}");
    }
}

#[tokio::test]
async fn requests_beyond_the_per_client_limit_are_too_many_until_one_finishes() {
    let mut fixture = Fixture::new();
    let http = HttpConfig { per_client_concurrency: 2, ..HttpConfig::default() };
    let server = Http::start(fixture.backend.clone(), config(), http).await;
    let mut calls = Vec::new();
    for n in 1..=2 {
        let (url, body) = (
            server.url.clone(),
            stamped(n, "tools/call", json!({"name": "block", "arguments": {"text": n.to_string()}})),
        );
        calls.push(tokio::spawn(async move { post(&url, &body, &[]).await }));
        fixture.entered().await;
    }
    let (status, body) = post(&server.url, &discover(), &[]).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    fixture.release.add_permits(2);
    for call in calls {
        let (status, body) = bounded("a released call", call).await.unwrap();
        assert_eq!(status, StatusCode::OK);
        assert!(body["result"]["content"][0]["text"].as_str().unwrap().starts_with("released"));
    }
    assert_eq!(post(&server.url, &discover(), &[]).await.0, StatusCode::OK, "the slots are free again");
}

#[tokio::test]
async fn behind_a_trusted_proxy_each_forwarded_client_has_its_own_limit_and_others_cannot_claim_one() {
    let mut fixture = Fixture::new();
    let trusted = vec!["127.0.0.1/32".parse().unwrap()];
    let http = HttpConfig { per_client_concurrency: 1, trusted_proxies: trusted, ..HttpConfig::default() };
    let server = Http::start(fixture.backend.clone(), config(), http).await;
    let (url, body) =
        (server.url.clone(), stamped(1, "tools/call", json!({"name": "block", "arguments": {"text": "a"}})));
    // Client A (as the proxy says) holds its one slot.
    let held = tokio::spawn(async move { post(&url, &body, &[("x-forwarded-for", "198.51.100.1")]).await });
    fixture.entered().await;
    let a_again = post(&server.url, &discover(), &[("x-forwarded-for", "198.51.100.1")]).await;
    assert_eq!(a_again.0, StatusCode::TOO_MANY_REQUESTS, "A is at its limit");
    // Client B, through the same proxy, is another client; so is one a spoofed entry
    // left of the proxy's cannot pass for A.
    assert_eq!(post(&server.url, &discover(), &[("x-forwarded-for", "198.51.100.2")]).await.0, StatusCode::OK);
    let spoofed = post(&server.url, &discover(), &[("x-forwarded-for", "198.51.100.1, 198.51.100.3")]).await;
    assert_eq!(spoofed.0, StatusCode::OK, "counted as 198.51.100.3, the proxy's entry");
    fixture.release.add_permits(1);
    assert_eq!(bounded("a released call", held).await.unwrap().0, StatusCode::OK);
}

#[tokio::test]
async fn initialize_beyond_the_session_cap_is_unavailable_until_a_session_ends() {
    let http = HttpConfig { max_sessions: 1, ..HttpConfig::default() };
    let server = Http::start(Fixture::new().backend, config(), http).await;
    let client = reqwest::Client::new();
    let init = common::initialize(1, "2025-11-25").to_string();
    let first =
        client.post(&server.url).header("content-type", "application/json").body(init.clone()).send().await.unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    let session = first.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let second =
        client.post(&server.url).header("content-type", "application/json").body(init.clone()).send().await.unwrap();
    assert_eq!(second.status(), StatusCode::SERVICE_UNAVAILABLE);
    let ended = client.delete(&server.url).header("mcp-session-id", &session).send().await.unwrap();
    assert_eq!(ended.status(), StatusCode::NO_CONTENT);
    let third = client.post(&server.url).header("content-type", "application/json").body(init).send().await.unwrap();
    assert_eq!(third.status(), StatusCode::OK);
}

#[tokio::test]
async fn one_client_may_hold_only_its_share_of_the_sessions() {
    let http = HttpConfig { max_sessions: 10, max_sessions_per_client: 2, ..HttpConfig::default() };
    let server = Http::start(Fixture::new().backend, config(), http).await;
    let client = reqwest::Client::new();
    let init = common::initialize(1, "2025-11-25").to_string();
    let open = || client.post(&server.url).header("content-type", "application/json").body(init.clone()).send();
    let first = bounded("a session", open()).await.unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    assert_eq!(bounded("a session", open()).await.unwrap().status(), StatusCode::OK);
    let third = bounded("one session over its share", open()).await.unwrap();
    assert_eq!(third.status(), StatusCode::TOO_MANY_REQUESTS, "the table has room, but not for this client");
    let session = first.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let ended = client.delete(&server.url).header("mcp-session-id", &session).send().await.unwrap();
    assert_eq!(ended.status(), StatusCode::NO_CONTENT);
    assert_eq!(bounded("a session again", open()).await.unwrap().status(), StatusCode::OK);
}

#[tokio::test]
async fn a_client_at_its_limit_can_still_cancel_and_answer_but_not_start_more() {
    let mut fixture = Fixture::new();
    let http = HttpConfig { per_client_concurrency: 1, ..HttpConfig::default() };
    let server = Http::start(fixture.backend.clone(), config(), http).await;
    let client = reqwest::Client::new();
    let send = |body: Value, session: Option<String>| {
        let mut request = client
            .post(&server.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request.send()
    };
    let opened = bounded("initialize", send(common::initialize(1, "2025-11-25"), None)).await.unwrap();
    let session = opened.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    // The call holds the client's one permit while it runs.
    let call = common::plain(2, "tools/call", json!({"name": "block", "arguments": {"text": "held"}}));
    let running = tokio::spawn(send(call, Some(session.clone())));
    assert_eq!(fixture.entered().await, "held");
    let more = bounded("a second request", send(common::plain(3, "ping", json!({})), Some(session.clone())));
    assert_eq!(more.await.unwrap().status(), StatusCode::TOO_MANY_REQUESTS);
    let reply = json!({"jsonrpc": "2.0", "id": "wasmgate-1", "result": {}});
    let answered = bounded("a response", send(reply, Some(session.clone()))).await.unwrap();
    assert_eq!(answered.status(), StatusCode::ACCEPTED, "a response is taken over the limit");
    let big = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "x".repeat(100_000)}});
    let refused = bounded("a large notification", send(big, Some(session.clone()))).await.unwrap();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS, "but only a small one");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}});
    let cancelled = bounded("a cancellation", send(cancel, Some(session.clone()))).await.unwrap();
    assert_eq!(cancelled.status(), StatusCode::ACCEPTED);
    assert_eq!(fixture.cancelled().await, "held", "the cancellation reached the call");
    bounded("the cancelled call", running).await.unwrap().unwrap();
    let after = bounded("a request after", send(common::plain(4, "ping", json!({})), Some(session))).await.unwrap();
    assert_eq!(after.status(), StatusCode::OK, "the permit is free again");
}

/// A connection that has sent a POST's headers, promising 100 bytes of body, and 10 of them.
async fn unfinished_post(server: &Http) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\"",
        server.addr
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_is_a_request_timeout() {
    use tokio::io::AsyncReadExt;
    let http = HttpConfig { body_read_timeout: std::time::Duration::from_millis(200), ..HttpConfig::default() };
    let server = Http::start(Fixture::new().backend, config(), http).await;
    let mut stream = unfinished_post(&server).await;
    let mut answer = vec![0; 4096];
    let read = bounded("the server's answer to a stalled body", stream.read(&mut answer)).await.unwrap();
    let answer = String::from_utf8_lossy(&answer[..read]);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("did not arrive within"), "{answer}");
}

/// How many POSTs over its limit the server reads at once for one client (`guard.rs`).
const OVER_LIMIT_READS: usize = 4;

#[tokio::test]
async fn a_client_at_its_limit_cannot_hold_more_connections_by_sending_bodies_slowly() {
    let http = HttpConfig { per_client_concurrency: 1, ..HttpConfig::default() };
    let server = Http::start(Fixture::new().backend, config(), http).await;
    // One stalled POST holds the client's permit, the next ones the reads over its limit.
    let mut stalled = Vec::new();
    for _ in 0..=OVER_LIMIT_READS {
        stalled.push(unfinished_post(&server).await);
    }
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}});
    let send = || async {
        let request = reqwest::Client::new().post(&server.url).header("content-type", "application/json");
        bounded("an HTTP answer", request.body(cancel.to_string()).send()).await.unwrap().status()
    };
    // Once the server has taken in every stalled POST, even a small notification is
    // refused rather than read on yet another connection.
    bounded("a notification refused", async {
        while send().await != StatusCode::TOO_MANY_REQUESTS {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
    // A stalled POST that goes away frees its read.
    drop(stalled.pop());
    bounded("a notification taken again", async {
        while send().await != StatusCode::ACCEPTED {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
}
