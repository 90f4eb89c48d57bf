//! Load: `wasmgate serve --http` on loopback under 64 concurrent
//! clients, and `wasmgate serve` over stdio under 10,000 sequential calls, with the
//! gateway's memory and open files measured before and after. Long: both are ignored
//! here and run by `scripts/load.sh`; the figures go in docs/PERFORMANCE.md.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{serve_http, serve_stdio, setup, stderr, wasmgate};
use serde_json::{Map, json};
use wasmgate_client::{CancellationToken, ClientConfig, HttpConfig, HttpTransport, McpClient, StdioTransport};
use wasmgate_protocol::ProtocolVersion;

/// Concurrent HTTP clients, each its own connection (and, handshake era, session).
const CLIENTS: usize = 64;
/// Calls each HTTP client makes.
const CALLS_PER_CLIENT: usize = 50;
/// Open requests the gateway allows one address (all clients share 127.0.0.1).
const PER_CLIENT_REQUESTS: &str = "128";
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

/// One `echo__echo` call; `Err` describes what went wrong.
async fn echo(client: &McpClient, text: &str) -> Result<(), String> {
    let result = client
        .call_tool("echo__echo", echo_args(text), CancellationToken::new())
        .await
        .map_err(|e| format!("call failed: {e}"))?;
    let got: String = result.content.iter().filter_map(|b| b.text()).collect();
    if result.is_error {
        return Err(format!("is_error: {got}"));
    }
    if !got.contains(text) {
        return Err(format!("wrong text: {got:?} lacks {text:?}"));
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

async fn http_client(url: &str, version: ProtocolVersion) -> McpClient {
    let transport = HttpTransport::new(&HttpConfig::new("wasmgate", url)).unwrap();
    let config = ClientConfig { versions: vec![version], ..ClientConfig::default() };
    McpClient::connect("wasmgate", transport, config).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: run by scripts/load.sh"]
async fn http_64_clients() {
    let dir = reviewed();
    let (child, url) = serve_http(dir.path(), &["--per-client-requests", PER_CLIENT_REQUESTS]);
    let pid = child.0.id();

    // Warm-up: the provider started, the first calls' allocations made.
    for version in [ProtocolVersion::V2026_07_28, ProtocolVersion::V2025_11_25] {
        let client = http_client(&url, version).await;
        for n in 0..5 {
            echo(&client, &format!("warm-{n}")).await.unwrap();
        }
        client.close().await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (rss_before, fds_before) = (rss_kib(pid), fds(pid));

    // Half the clients on the stateless era, half handshake era (a session each).
    let mut clients = Vec::new();
    for i in 0..CLIENTS {
        let version = if i % 2 == 0 { ProtocolVersion::V2026_07_28 } else { ProtocolVersion::V2025_11_25 };
        clients.push(http_client(&url, version).await);
    }
    let fds_connected = fds(pid);

    let start = Instant::now();
    let mut tasks = Vec::new();
    for (i, client) in clients.into_iter().enumerate() {
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(CALLS_PER_CLIENT);
            let mut errors = Vec::new();
            for n in 0..CALLS_PER_CLIENT {
                let text = format!("c{i}-n{n}");
                let began = Instant::now();
                let outcome = echo(&client, &text).await;
                latencies.push(began.elapsed());
                if let Err(e) = outcome {
                    errors.push(format!("client {i} call {n}: {e}"));
                }
            }
            (client, latencies, errors)
        }));
    }
    let mut latencies = Vec::new();
    let mut errors = Vec::new();
    let mut clients = Vec::new();
    for task in tasks {
        let (client, l, e) = task.await.unwrap();
        latencies.extend(l);
        errors.extend(e);
        clients.push(client);
    }
    let elapsed = start.elapsed();
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
         latency p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; errors {}",
        elapsed.as_secs_f64(),
        calls as f64 / elapsed.as_secs_f64(),
        ms(quantile(&latencies, 0.50)),
        ms(quantile(&latencies, 0.99)),
        ms(latencies[calls - 1]),
        errors.len(),
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
    assert!(errors.is_empty(), "{} errors, the first: {:?}", errors.len(), &errors[..errors.len().min(5)]);
    assert_eq!(calls, CLIENTS * CALLS_PER_CLIENT);
    assert!(rss_after < rss_before + 64 * 1024, "RSS grew by more than 64 MiB");
    assert!(fds_after <= fds_before + 8, "open fds: {fds_before} before, {fds_after} after");
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
            panic!("call {n}: {e}");
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
