//! A supervised provider: withheld while it cannot start and started again when it
//! does; restarted when its process dies, with each move reported.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Reply, Upstream, formatters, text, tool};
use serde_json::json;
use wasmgate_adapter::{AdapterError, Backoff, Connect, McpProvider, Report, Supervised};
use wasmgate_client::{ClientConfig, FakeTransport, TransportError};
use wasmgate_core::{CancellationToken, Naming, ToolSource};

const QUICK: Backoff =
    Backoff { first: Duration::from_millis(20), most: Duration::from_millis(80), settled: Duration::from_secs(60) };

/// Connects to `upstream` over a fresh in-memory transport, failing the first `fail` times.
fn connector(upstream: Arc<Upstream>, fail: usize, attempts: Arc<AtomicUsize>) -> Connect {
    Arc::new(move || {
        let upstream = Arc::clone(&upstream);
        let attempt = attempts.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            if attempt < fail {
                let source = TransportError::Config("no such program: ./server".into());
                return Err(AdapterError::Transport { provider: "p".into(), source });
            }
            let (transport, server) = FakeTransport::pair();
            tokio::spawn(common::serve(server, upstream));
            McpProvider::connect("p", transport, ClientConfig::default(), formatters(None)).await
        })
    })
}

fn recorder() -> (Report, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&seen);
    (Arc::new(move |_provider: &str, message: &str| kept.lock().unwrap().push(message.to_owned())), seen)
}

async fn offered(source: &Supervised) -> (Vec<String>, Option<String>) {
    let (offers, trouble) = source.offers().await;
    (offers.into_iter().map(|o| o.tool.spec.name).collect(), trouble)
}

async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    for _ in 0..2000 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{what} did not happen within 20 s");
}

#[tokio::test]
async fn a_provider_that_cannot_start_is_withheld_and_served_once_it_can() {
    let upstream = Upstream::new(vec![tool("echo", json!({}))], |_, _| Reply::Result(text("hi", false)));
    let attempts = Arc::new(AtomicUsize::new(0));
    let connect = connector(upstream, 3, Arc::clone(&attempts));
    let first = connect().await;
    let (report, seen) = recorder();
    let supervised = Supervised::start("p", first, connect, QUICK, report, Naming::Prefixed);
    let mut changes = supervised.changes();
    let (names, trouble) = offered(&supervised).await;
    assert!(names.is_empty());
    let trouble = trouble.unwrap();
    assert!(
        trouble.contains("provider p is not running") && trouble.contains("no such program: ./server"),
        "{trouble}"
    );
    assert!(seen.lock().unwrap()[0].starts_with("provider p is withheld: cannot start provider \"p\": "));

    eventually("the provider coming up", async || offered(&supervised).await.0 == ["p__echo"]).await;
    assert_eq!(attempts.load(Ordering::SeqCst), 4, "three failures, then up");
    assert!(changes.has_changed().unwrap(), "the change counter moved");
    changes.mark_unchanged();
    assert!(seen.lock().unwrap().iter().any(|m| m == "provider p is up"), "{:?}", seen.lock().unwrap());
    supervised.close().await;
}

#[tokio::test]
async fn a_provider_whose_process_dies_is_started_again_and_its_call_fails_as_the_contract_says() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let upstream = Upstream::new(vec![tool("echo", json!({}))], move |_, _| {
        if counted.fetch_add(1, Ordering::SeqCst) == 0 { Reply::Die } else { Reply::Result(text("hi", false)) }
    });
    let attempts = Arc::new(AtomicUsize::new(0));
    let connect = connector(upstream, 0, Arc::clone(&attempts));
    let first = connect().await;
    let (report, seen) = recorder();
    let supervised = Supervised::start("p", first, connect, QUICK, report, Naming::Prefixed);
    let (offers, _) = supervised.offers().await;
    let tool = offers[0].tool.clone();

    let failed = tool.execute(json!({}), CancellationToken::new()).await.unwrap_err();
    assert_eq!(failed.to_string(), "tool execution failed", "the call in flight fails");
    eventually("a second start", async || attempts.load(Ordering::SeqCst) == 2).await;
    eventually("the new process's tools", async || !offered(&supervised).await.0.is_empty()).await;
    let (offers, _) = supervised.offers().await;
    let answer = offers[0].tool.execute(json!({}), CancellationToken::new()).await.unwrap();
    assert!(answer.content.contains("hi"), "{answer:?}");
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.iter().any(|m| m.starts_with("provider p went down (") && m.contains("starting it again")),
        "{seen:?}"
    );
    supervised.close().await;
}

#[tokio::test]
async fn a_closed_provider_is_not_started_again() {
    let upstream = Upstream::new(vec![tool("echo", json!({}))], |_, _| Reply::Result(text("hi", false)));
    let attempts = Arc::new(AtomicUsize::new(0));
    let connect = connector(upstream, usize::MAX, Arc::clone(&attempts));
    let first = connect().await;
    let (report, _) = recorder();
    let supervised = Supervised::start("p", first, connect, QUICK, report, Naming::Prefixed);
    supervised.close().await;
    let after = attempts.load(Ordering::SeqCst);
    tokio::time::sleep(QUICK.most * 4).await;
    assert!(attempts.load(Ordering::SeqCst) <= after + 1, "at most the attempt already under way");
    let (_, trouble) = offered(&supervised).await;
    assert_eq!(trouble.as_deref(), Some("provider p is closed"));
}

#[tokio::test]
async fn a_withheld_provider_is_stopped_offers_nothing_and_is_not_started_again() {
    let upstream = Upstream::new(vec![tool("echo", json!({}))], |_, _| Reply::Result(text("hi", false)));
    let attempts = Arc::new(AtomicUsize::new(0));
    let connect = connector(upstream, 0, Arc::clone(&attempts));
    let first = connect().await.unwrap();
    let client = first.client().clone();
    let (report, _) = recorder();
    let supervised = Supervised::start("p", Ok(first), connect, QUICK, report, Naming::Prefixed);
    let (offers, _) = supervised.offers().await;
    let tool = offers[0].tool.clone();
    let mut changes = supervised.changes();
    changes.mark_unchanged();

    supervised.withhold("it opened 600 refused connections in 2 s");
    assert!(changes.has_changed().unwrap(), "a server face announces the changed list");
    let (names, trouble) = offered(&supervised).await;
    assert!(names.is_empty());
    assert_eq!(trouble.as_deref(), Some("provider p is withheld: it opened 600 refused connections in 2 s"));
    eventually("the running server stopped", async || client.closed().is_some()).await;
    assert!(tool.execute(json!({}), CancellationToken::new()).await.is_err(), "a tool listed before fails");
    tokio::time::sleep(QUICK.most * 4).await;
    assert_eq!(attempts.load(Ordering::SeqCst), 1, "never started again");
    supervised.close().await;
    let (_, trouble) = offered(&supervised).await;
    assert!(trouble.unwrap().contains("withheld"), "closing keeps why it was withheld");
}
