//! Load: `wasmgate serve --http` on loopback under 64 concurrent clients of four
//! callers (OAuth access tokens), one of whom runs out of a budget while the rules are
//! reloaded halfway, and `wasmgate serve` over stdio under 10,000 sequential calls, with
//! the gateway's memory and open files measured before and after. The HTTP test runs in
//! the suite; the stdio one is long, ignored here and run by `scripts/load.sh`, which
//! runs both and prints their figures for docs/PERFORMANCE.md.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{serve_http, serve_stdio, setup, stderr, stdout, wasmgate};
use serde_json::{Map, json};
use wasmgate_client::{ClientConfig, ClientError, McpClient, StdioTransport};
use wasmgate_core::CancellationToken;
use wasmgate_protocol::ProtocolVersion;
use wasmgate_testing::{Issuer, http_client};

/// Concurrent HTTP clients, each its own connection (and, handshake era, session).
const CLIENTS: usize = 64;
/// Calls each HTTP client makes.
const CALLS_PER_CLIENT: usize = 50;
/// Open requests the gateway allows one address (all clients share 127.0.0.1; each
/// may hold a call and a stream that follows the tool list).
const PER_CLIENT_REQUESTS: &str = "256";
/// The callers, one client in four each; the last one has a budget.
const CALLERS: [&str; 4] = ["alice", "bob", "carol", "dave"];
/// Dave's budget: this many calls, refilled at this many a minute.
const DAVE_BUDGET: u32 = 100;
/// Sequential calls over stdio, and when the warm sample is taken.
const STDIO_CALLS: usize = 10_000;
const STDIO_WARM: usize = 1_000;

/// A child killed and reaped when dropped, so a failed assertion leaves no gateway behind.
fn reviewed() -> tempfile::TempDir {
    let dir = setup();
    let review = wasmgate(dir.path(), &["review", "--yes"]);
    assert!(review.status.success(), "{}", stderr(&review));
    dir
}

/// The resident set (VmRSS) of `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Open file descriptors of `pid`.
fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count()
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn echo_args(text: &str) -> Map<String, serde_json::Value> {
    json!({ "text": text }).as_object().cloned().unwrap()
}

/// How a call went wrong.
#[derive(Debug)]
enum Failure {
    /// Refused for a used-up budget (-32010).
    Limited,
    /// Anything else.
    Other(String),
}

/// One `echo__echo` call.
async fn echo(client: &McpClient, text: &str) -> Result<(), Failure> {
    let result = match client.call_tool("echo__echo", echo_args(text), CancellationToken::new()).await {
        Ok(result) => result,
        Err(ClientError::Rpc { code: -32010, .. }) => return Err(Failure::Limited),
        Err(e) => return Err(Failure::Other(format!("call failed: {e}"))),
    };
    let got: String = result.content.iter().filter_map(|b| b.text()).collect();
    if result.is_error {
        return Err(Failure::Other(format!("is_error: {got}")));
    }
    if !got.contains(text) {
        return Err(Failure::Other(format!("wrong text: {got:?} lacks {text:?}")));
    }
    Ok(())
}

/// The `q`-quantile of sorted `values` (nearest rank).
fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The test suite's gateway taking `issuer`'s tokens, with a budget for dave.
async fn team(issuer: &Issuer) -> tempfile::TempDir {
    let dir = setup();
    let config = dir.path().join("wasmgate.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}{}", issuer.serve_oauth())).unwrap();
    let policy = dir.path().join("policy.toml");
    let rules = std::fs::read_to_string(&policy).unwrap();
    let budget = format!("\n[[budgets]]\nsubjects = [\"dave\"]\nrate = {DAVE_BUDGET}\nper = \"minute\"\n");
    std::fs::write(&policy, format!("{rules}{budget}")).unwrap();
    let review = wasmgate(dir.path(), &["review", "--yes"]);
    assert!(review.status.success(), "{}", stderr(&review));
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_64_clients_of_four_callers_with_a_budget_and_a_reload() {
    let issuer = Issuer::start().await;
    let dir = team(&issuer).await;
    let (child, url) = serve_http(dir.path(), &["--per-client-requests", PER_CLIENT_REQUESTS]);
    let pid = child.0.id();

    // Warm-up: the provider started, the first calls' allocations made.
    for version in [ProtocolVersion::V2026_07_28, ProtocolVersion::V2025_11_25] {
        let client = http_client(&url, &[version], Some(&issuer.token("warm", &[]))).await;
        for n in 0..5 {
            echo(&client, &format!("warm-{n}")).await.unwrap();
        }
        client.close().await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (rss_before, fds_before) = (rss_kib(pid), fds(pid));

    // Half the clients on the stateless era, half handshake era (a session each); client
    // i is caller i % 4.
    let mut clients = Vec::new();
    for i in 0..CLIENTS {
        let version = if i % 2 == 0 { ProtocolVersion::V2026_07_28 } else { ProtocolVersion::V2025_11_25 };
        clients.push(http_client(&url, &[version], Some(&issuer.token(CALLERS[i % 4], &[]))).await);
    }
    let fds_connected = fds(pid);

    // Halfway, the policy changes (the calendar's create is denied) and is reloaded.
    let done = Arc::new(AtomicUsize::new(0));
    let reload = {
        let (done, dir) = (Arc::clone(&done), dir.path().to_owned());
        std::thread::spawn(move || {
            while done.load(Ordering::Relaxed) < CLIENTS * CALLS_PER_CLIENT / 2 {
                std::thread::sleep(Duration::from_millis(1));
            }
            let policy = dir.join("policy.toml");
            let rules = std::fs::read_to_string(&policy).unwrap();
            std::fs::write(&policy, rules.replace("calendar_create = \"ask\"", "calendar_create = \"deny\"")).unwrap();
            let began = done.load(Ordering::Relaxed);
            let out = wasmgate(&dir, &["reload"]);
            ((began, done.load(Ordering::Relaxed)), stdout(&out), out.status.success())
        })
    };

    let start = Instant::now();
    let mut tasks = Vec::new();
    for (i, client) in clients.into_iter().enumerate() {
        let done = Arc::clone(&done);
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(CALLS_PER_CLIENT);
            let (mut errors, mut limited) = (Vec::new(), 0);
            for n in 0..CALLS_PER_CLIENT {
                let text = format!("c{i}-n{n}");
                let began = Instant::now();
                let outcome = echo(&client, &text).await;
                latencies.push(began.elapsed());
                done.fetch_add(1, Ordering::Relaxed);
                match outcome {
                    Ok(()) => {}
                    Err(Failure::Limited) => limited += 1,
                    Err(Failure::Other(e)) => errors.push(format!("client {i} ({}) call {n}: {e}", CALLERS[i % 4])),
                }
            }
            (client, i % 4, latencies, errors, limited)
        }));
    }
    let mut latencies = Vec::new();
    let mut errors = Vec::new();
    let mut limited = [0usize; 4];
    let mut clients = Vec::new();
    for task in tasks {
        let (client, caller, l, e, refused) = task.await.unwrap();
        latencies.extend(l);
        errors.extend(e);
        limited[caller] += refused;
        clients.push(client);
    }
    let elapsed = start.elapsed();
    let ((reload_began, reload_ended), reloaded, reload_ok) = reload.join().unwrap();
    let (rss_loaded, fds_loaded) = (rss_kib(pid), fds(pid));
    for client in clients {
        client.close().await;
    }
    // The gateway notices closed connections asynchronously: give it a moment.
    let deadline = Instant::now() + Duration::from_secs(10);
    while fds(pid) > fds_before + 8 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (rss_after, fds_after) = (rss_kib(pid), fds(pid));

    latencies.sort();
    let calls = latencies.len();
    eprintln!(
        "http: {CLIENTS} clients x {CALLS_PER_CLIENT} calls = {calls} calls in {:.2} s: {:.0} calls/s; \
         latency p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; errors {}; refused for dave's budget {}; \
         reloaded from call {reload_began} to call {reload_ended}: {}",
        elapsed.as_secs_f64(),
        calls as f64 / elapsed.as_secs_f64(),
        ms(quantile(&latencies, 0.50)),
        ms(quantile(&latencies, 0.99)),
        ms(latencies[calls - 1]),
        errors.len(),
        limited[3],
        reloaded.trim(),
    );
    eprintln!(
        "http: gateway VmRSS {:.1} MiB before, {:.1} MiB at the end of the load, {:.1} MiB after the clients closed \
         (growth {:+.1} MiB); open fds {fds_before} before, {fds_connected} with {CLIENTS} clients connected, \
         {fds_loaded} at the end of the load, {fds_after} after",
        mib(rss_before),
        mib(rss_loaded),
        mib(rss_after),
        mib(rss_after) - mib(rss_before),
    );
    assert!(reload_ok && reloaded.ends_with(": reloaded\n"), "{reloaded}");
    assert!(errors.is_empty(), "{} errors, the first: {:?}", errors.len(), &errors[..errors.len().min(5)]);
    assert_eq!(&limited[..3], &[0, 0, 0], "only dave has a budget");
    let daves = CLIENTS / 4 * CALLS_PER_CLIENT;
    assert!(limited[3] > 0 && limited[3] <= daves - DAVE_BUDGET as usize, "dave: {} of {daves} refused", limited[3]);
    assert_eq!(calls, CLIENTS * CALLS_PER_CLIENT);
    assert!(rss_after < rss_before + 64 * 1024, "RSS grew by more than 64 MiB");
    assert!(fds_after <= fds_before + 8, "open fds: {fds_before} before, {fds_after} after");
    let audit = std::fs::read_to_string(dir.path().join("state/audit.jsonl")).unwrap();
    assert_eq!(audit.lines().filter(|l| l.contains("\"event\":\"reload\"")).count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: run by scripts/load.sh"]
async fn stdio_10k_sequential() {
    let dir = reviewed();
    // wasmgate itself is trusted here: it confines the servers it starts.
    let server = serve_stdio(dir.path());
    let transport = StdioTransport::spawn(&server).unwrap();
    let pid = transport.pid().expect("the gateway's pid");
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
    assert!(exe.ends_with("wasmgate"), "the pid is the gateway's: {}", exe.display());
    let client = McpClient::connect("wasmgate", transport, ClientConfig::default()).await.unwrap();

    let start = Instant::now();
    let mut warm = None;
    let mut latencies = Vec::with_capacity(STDIO_CALLS);
    for n in 0..STDIO_CALLS {
        let began = Instant::now();
        if let Err(e) = echo(&client, &format!("seq-{n}")).await {
            panic!("call {n}: {e:?}");
        }
        latencies.push(began.elapsed());
        if n + 1 == STDIO_WARM {
            warm = Some((rss_kib(pid), fds(pid), start.elapsed()));
        }
    }
    let elapsed = start.elapsed();
    let (rss_end, fds_end) = (rss_kib(pid), fds(pid));
    client.close().await;

    let (rss_warm, fds_warm, warm_elapsed) = warm.unwrap();
    latencies.sort();
    eprintln!(
        "stdio: {STDIO_CALLS} sequential calls in {:.2} s ({:.0} calls/s; the first {STDIO_WARM} in {:.2} s); \
         latency p50 {:.3} ms, p99 {:.3} ms, max {:.2} ms",
        elapsed.as_secs_f64(),
        STDIO_CALLS as f64 / elapsed.as_secs_f64(),
        warm_elapsed.as_secs_f64(),
        ms(quantile(&latencies, 0.50)),
        ms(quantile(&latencies, 0.99)),
        ms(latencies[STDIO_CALLS - 1]),
    );
    eprintln!(
        "stdio: gateway VmRSS {:.1} MiB after {STDIO_WARM} calls, {:.1} MiB after {STDIO_CALLS} (growth {:+.1} MiB); \
         open fds {fds_warm} after {STDIO_WARM}, {fds_end} after {STDIO_CALLS}",
        mib(rss_warm),
        mib(rss_end),
        mib(rss_end) - mib(rss_warm),
    );
    assert!(rss_end < rss_warm + 16 * 1024, "RSS grew by more than 16 MiB");
    assert!(fds_end <= fds_warm + 4, "open fds: {fds_warm} warm, {fds_end} at the end");
}
