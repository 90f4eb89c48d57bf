//! The console's pages over an audit log of 100,000 records across rotated files: each
//! page through the console's router (the handlers, the templates, the security headers),
//! in-process, as an admin with a bearer token. The audit view reads the log through its
//! index: records appended since the last page are verified and indexed, and a page reads
//! only the records it shows.
//!
//! `cargo bench -p wasmgate-console --bench pages`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use criterion::{BatchSize, Criterion};
use serde_json::{Map, Value, json};
use tower::ServiceExt as _;
use wasmgate_audit::{AuditLog, Durability, Entry, Event, Options};
use wasmgate_core::{BoxFuture, Caller};
use wasmgate_server::{AuthFailure, Authenticator};

/// Records in the log before the gateway starts.
const RECORDS: usize = 100_000;

/// Takes the token `admin` as dave, an admin of the policy's `[console]`.
struct Tokens;

impl Authenticator for Tokens {
    fn authenticate<'a>(&'a self, token: Option<&'a str>) -> BoxFuture<'a, Result<Caller, AuthFailure>> {
        let caller = match token {
            Some("admin") => Ok(Caller { subject: "dave".into(), claims: Map::new() }),
            _ => Err(AuthFailure::Missing),
        };
        Box::pin(std::future::ready(caller))
    }

    fn metadata(&self) -> Value {
        json!({})
    }

    fn metadata_url(&self) -> String {
        String::new()
    }
}

/// Writes `count` call records, from `first`, spread over callers, providers and tools
/// (one tool in 10,000 calls is `rare`).
fn fill(log: &AuditLog, first: usize, count: usize) {
    for i in first..first + count {
        let tool = if i % 10_000 == 7 { "rare" } else { ["send", "list", "read"][i % 3] };
        let mut entry = Entry::call(
            format!("c{i}"),
            ["mail", "calendar", "files", "db"][i % 4],
            tool,
            Event::Requested {
                verdict: if i % 7 == 0 { "deny" } else { "allow" }.into(),
                reason: "the policy allows it".into(),
                arguments: json!({"to": format!("user{}@example.com", i % 97), "subject": "weekly report", "n": i}),
            },
        );
        entry.caller = Some(["alice", "bob"][i % 2].into());
        log.append(entry).unwrap();
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    // The log, rotated every 4 MiB, written before the gateway starts and goes on with it.
    let log = AuditLog::open(
        &state.join("audit.jsonl"),
        Options { durability: Durability::Off, rotate_bytes: Some(4 << 20), ..Options::default() },
    )
    .unwrap();
    fill(&log, 0, RECORDS);
    log.close().unwrap();
    let files = std::fs::read_dir(&state)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with("audit.jsonl"))
        .count();
    std::fs::write(dir.path().join("wasmgate.toml"), "state_dir = \"state\"\n[audit]\ndurability = \"off\"\n").unwrap();
    std::fs::write(dir.path().join("policy.toml"), "[console]\nadmins = [{ subjects = [\"dave\"] }]\n").unwrap();
    let path = dir.path().join("wasmgate.toml");
    let config = wasmgate_gateway::Config::load(&path).unwrap();
    let gateway =
        Arc::new(rt.block_on(wasmgate_gateway::Gateway::start(&config, Arc::new(wasmgate_guard::Unattended))).unwrap());
    let settings = wasmgate_gateway::ConsoleConfig {
        client_id: "console".into(),
        authorization_endpoint: "http://127.0.0.1:9/authorize".into(),
        token_endpoint: "http://127.0.0.1:9/token".into(),
        redirect_uri: None,
        scopes: Vec::new(),
        session_minutes: None,
    };
    let parts = wasmgate_console::Parts {
        gateway: Arc::clone(&gateway),
        backend: gateway.backend(),
        config_path: path,
        authenticator: Arc::new(Tokens),
        resource: "https://gw.example/mcp".into(),
        audit_key: None,
    };
    let console = wasmgate_console::Console::new(&settings, "127.0.0.1:8080".parse().unwrap(), parts).unwrap();
    let router = Arc::new(console).router();
    let get = |uri: &'static str| {
        let router = router.clone();
        let request = Request::get(uri).header("authorization", "Bearer admin").body(Body::empty()).unwrap();
        async move {
            let response = router.oneshot(request).await.unwrap();
            assert_eq!(response.status(), 200, "{uri}");
            axum::body::to_bytes(response.into_body(), 16 << 20).await.unwrap().len()
        }
    };

    // The first view reads the whole log once, verifying and indexing it.
    let started = Instant::now();
    let bytes = rt.block_on(get("/console/audit"));
    println!(
        "first view of the audit log ({RECORDS} records in {files} files): {:.1} ms, {bytes} bytes",
        started.elapsed().as_secs_f64() * 1e3
    );

    let mut c = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(3)).configure_from_args();
    let mut group = c.benchmark_group(format!("console, {RECORDS} audit records"));
    for (name, uri) in [
        ("audit, newest page", "/console/audit"),
        ("audit, caller=bob (1 in 2)", "/console/audit?caller=bob"),
        ("audit, tool=rare (1 in 10,000: the whole index scanned)", "/console/audit?tool=rare"),
        ("audit, provider+verdict+since", "/console/audit?provider=mail&verdict=deny&since=2000-01-01"),
        ("audit, a page from seq 50,000", "/console/audit?before=50000"),
        ("providers and tools", "/console"),
        ("reviews", "/console/reviews"),
        ("approvals", "/console/approvals"),
    ] {
        group.bench_function(name, |b| b.iter(|| rt.block_on(get(uri))));
    }
    // Records appended between two views: verified and indexed by the next one.
    let mut next = RECORDS;
    group.bench_function("audit, newest page after 100 records appended", |b| {
        b.iter_batched(
            || {
                let audit = gateway.guard.audit();
                fill(audit, next, 100);
                next += 100;
            },
            |()| rt.block_on(get("/console/audit")),
            BatchSize::PerIteration,
        );
    });
    group.finish();
    c.final_summary();
    rt.block_on(gateway.close());
}
