//! Crash safety: `wasmgate serve` killed with SIGKILL while calls are running starts
//! again on the same state, and its audit log then verifies and holds a `started`
//! record for every call that ran.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{serve_http, setup, stderr, wasmgate};
use serde_json::{Value, json};
use wasmgate_core::CancellationToken;
use wasmgate_testing::{children, is_running};

/// Concurrent callers (below the per-client limit of 16 open requests).
const CALLERS: usize = 8;
/// Calls answered before the gateway is killed.
const BEFORE_KILL: usize = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_killed_under_load_restarts_and_its_audit_log_accounts_for_every_call() {
    let dir = setup();
    let policy = std::fs::read_to_string(dir.path().join("policy.toml")).unwrap();
    std::fs::write(
        dir.path().join("policy.toml"),
        policy.replace("calendar_create = \"ask\"", "calendar_create = \"allow\""),
    )
    .unwrap();
    // The echo provider outlives the end of its input (as a hostile server may): only
    // the parent-death signal can stop it when the gateway is killed.
    let config = std::fs::read_to_string(dir.path().join("wasmgate.toml")).unwrap();
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("../client/tests/fixtures/stdio_server.py");
    let server = format!("{:?}", server.canonicalize().unwrap().display().to_string());
    let stubborn = "import runpy, sys, time\ntry:\n    runpy.run_path(sys.argv[1], run_name='__main__')\nfinally:\n    time.sleep(600)";
    let config = config.replace(&format!("args = [{server}]"), &format!("args = [\"-c\", {stubborn:?}, {server}]"));
    assert!(config.contains("runpy"), "the provider's args were rewritten: {config}");
    std::fs::write(dir.path().join("wasmgate.toml"), config).unwrap();
    let review = wasmgate(dir.path(), &["review", "--yes"]);
    assert!(review.status.success(), "{}", stderr(&review));

    let (mut child, url) = serve_http(dir.path(), &[]);
    let client = wasmgate_testing::http_client(&url, &[], None).await;
    let answered = Arc::new(AtomicUsize::new(0));
    let next = Arc::new(AtomicUsize::new(0));
    let mut callers = Vec::new();
    for _ in 0..CALLERS {
        let (client, answered, next) = (client.clone(), Arc::clone(&answered), Arc::clone(&next));
        callers.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                let args = json!({"user": "alice", "title": format!("crash-{n}"),
                                  "start": "2026-12-03T12:00", "end": "2026-12-03T13:00"});
                let call = client.call_tool(
                    "calendar__calendar_create",
                    args.as_object().cloned().unwrap(),
                    CancellationToken::new(),
                );
                if call.await.is_err() {
                    return; // the gateway is gone
                }
                answered.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    tokio::time::timeout(Duration::from_secs(60), async {
        while answered.load(Ordering::Relaxed) < BEFORE_KILL {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("calls are answered");
    let servers = children(child.0.id());
    assert!(!servers.is_empty(), "the gateway runs its stdio provider");
    child.kill(); // SIGKILL, with calls in flight
    // Its servers die with it (parent-death signal): nothing is left running.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while servers.iter().any(|pid| is_running(*pid)) {
        assert!(std::time::Instant::now() < deadline, "a provider outlived the killed gateway: {servers:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for caller in callers {
        tokio::time::timeout(Duration::from_secs(30), caller).await.unwrap().unwrap();
    }

    // Nothing left behind blocks a restart, and the restarted gateway serves.
    let (mut again, url) = serve_http(dir.path(), &[]);
    let client = wasmgate_testing::http_client(&url, &[], None).await;
    let args = json!({"user": "alice", "title": "after", "start": "2026-12-03T14:00", "end": "2026-12-03T15:00"});
    let after =
        client.call_tool("calendar__calendar_create", args.as_object().cloned().unwrap(), CancellationToken::new());
    let after = after.await.unwrap();
    assert!(!after.is_error, "the restarted gateway serves: {after:?}");
    client.close().await;
    again.kill();

    let log_path = dir.path().join("state/audit.jsonl");
    let verify = wasmgate(dir.path(), &["audit", "verify", &log_path.display().to_string()]);
    assert!(verify.status.success(), "the log verifies after the crash: {}", stderr(&verify));

    // Every event the calendar stored was created by a call with a durable start record.
    let records: Vec<Value> =
        std::fs::read_to_string(&log_path).unwrap().lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let started: HashSet<&str> =
        records.iter().filter(|r| r["event"] == "started").filter_map(|r| r["call"].as_str()).collect();
    let started_titles: HashSet<&str> = records
        .iter()
        .filter(|r| r["event"] == "requested" && r["call"].as_str().is_some_and(|c| started.contains(c)))
        .filter_map(|r| r["arguments"]["title"].as_str())
        .collect();
    let stored = std::fs::read_to_string(dir.path().join("data/events.json")).unwrap();
    let stored: Value = serde_json::from_str(&stored).unwrap();
    let titles: Vec<&str> = stored["events"].as_array().unwrap().iter().filter_map(|e| e["title"].as_str()).collect();
    // Concurrent creates race on the calendar file (WASI has no file locks: the later
    // write wins), so fewer events than calls may be stored; the file is always whole.
    assert!(!titles.is_empty(), "calls ran before the kill");
    for title in titles {
        assert!(started_titles.contains(title), "{title} was stored without a start record");
    }
}
