//! Gateway overhead, side by side in one run:
//!
//! * one small `echo` call from our `McpClient` to a trivial upstream (the gate crate's
//!   stdlib Python server over stdio) called directly, and the same call through
//!   `wasmgate serve` over stdio and over HTTP (policy, audit, sandboxed formatting,
//!   screening included), with the audit log `off` and with the default `every-call`;
//! * the trivial WASM tool component (`echo-tools`, a fresh instance per call) through
//!   `wasmgate serve` over stdio, against the Python server called directly, and against
//!   wassette serving the same component (its export `call-tool`) when
//!   `WASMGATE_BENCH_WASSETTE` names its binary;
//! * the same stdio gateway with `[sandbox] prepared_instances = 0` (every instance made
//!   and torn down on its call's path) against the default (docs/SANDBOX.md);
//! * the same stdio gateway with `--spin-us 0` (it always sleeps at once) against the
//!   default, which may poll for up to 300 µs before it sleeps (`host/cli/src/spin.rs`);
//! * the CPU time each process on a call's path spends per call (the client, the
//!   gateway, the upstream), one call at a time and 8 in flight;
//! * all of the above with two clients: on tokio's default multi-threaded runtime, and
//!   on a current-thread runtime like a Node or Python client's event loop
//!   (`WASMGATE_BENCH_CLIENT=multi-thread` or `current-thread` runs one of them);
//! * fsyncs per call of the default durable audit log, one caller at a time and with 64
//!   concurrent callers (the gateway run in-process here, to read its counter);
//! * `wasmgate serve --http` with its Prometheus metrics on (the default) against the
//!   same with `[serve.metrics] enabled = false` (`WASMGATE_BENCH_METRICS_ONLY=1` runs
//!   only this);
//! * a real SDK server, the Python `mcp` SDK's `echo` (host/client's interop peer, from
//!   `scripts/install-peers.sh`; the bench says when it is absent), called directly and
//!   through `wasmgate serve` over stdio, audit off (`WASMGATE_BENCH_SDK_ONLY=1` runs
//!   only this).
//!
//! Besides criterion's own figures, each comparison prints interleaved rounds (a batch
//! of calls one way, then the other) and the median ratio, because this VM's speed
//! drifts. Run: `cargo bench -p wasmgate-cli --bench overhead`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "../tests/common/mod.rs"]
mod common;
use common::python;
use serde_json::{Map, Value, json};
use tokio::runtime::Runtime;
use wasmgate_client::{ClientConfig, McpClient, StdioConfig, StdioTransport};
use wasmgate_core::CancellationToken;

/// Calls per interleaved batch, and batches per comparison.
const BATCH: usize = 100;
const ROUNDS: usize = 7;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../client/tests/fixtures").canonicalize().unwrap()
}

/// A reviewed gateway configuration: `echo` (the Python server, confined) and `tools`
/// (the echo-tools component), both tools allowed, the audit log at `durability`.
fn gateway_dir(durability: &str) -> tempfile::TempDir {
    gateway_dir_with(durability, "")
}

/// [`gateway_dir`] with `sandbox` (TOML lines) added to its `[sandbox]` table.
fn gateway_dir_with(durability: &str, sandbox: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let (python, dirs) = python();
    let config = format!(
        "state_dir = \"state\"\n\n[audit]\ndurability = {durability:?}\n\n[sandbox]\ncache_dir = \"cache\"\n{sandbox}\n\
         [providers.echo]\ncommand = {python:?}\nargs = [{server:?}]\nread_exec = {dirs:?}\n\n\
         [providers.tools]\ncomponent = {component:?}\n",
        python = python.display().to_string(),
        server = fixtures().join("stdio_server.py").display().to_string(),
        dirs = dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>(),
        component = wasmgate_guests::ECHO_TOOLS_PATH,
    );
    std::fs::write(dir.path().join("wasmgate.toml"), config).unwrap();
    let policy = format!(
        "[providers.echo]\nread_paths = [{:?}]\n\n[providers.echo.tools]\necho = \"allow\"\n\n\
         [providers.tools.tools]\necho = \"allow\"\n",
        fixtures().display().to_string()
    );
    std::fs::write(dir.path().join("policy.toml"), policy).unwrap();
    let review = common::wasmgate(dir.path(), &["review", "--yes"]);
    assert!(review.status.success(), "{}", common::stderr(&review));
    dir
}

/// Our client straight to the Python server.
async fn direct() -> McpClient {
    let (python, _) = python();
    let server = StdioConfig::new("echo", python, fixtures())
        .arg(fixtures().join("stdio_server.py").display().to_string())
        .confinement(None);
    McpClient::connect("echo", StdioTransport::spawn(&server).unwrap(), ClientConfig::default()).await.unwrap()
}

/// Our client to `wasmgate serve` over stdio, spinning before it sleeps for `spin_us`
/// microseconds (`--spin-us`; `None`: the default).
async fn through_stdio(dir: &Path, spin_us: Option<u64>) -> McpClient {
    let mut server = StdioConfig::new("wasmgate", env!("CARGO_BIN_EXE_wasmgate"), dir)
        .arg("serve")
        .env("WASMGATE_CONFIG", dir.join("wasmgate.toml"))
        .env("RUST_LOG", "error")
        .confinement(None);
    if let Some(us) = spin_us {
        server = server.arg(format!("--spin-us={us}"));
    }
    McpClient::connect("wasmgate", StdioTransport::spawn(&server).unwrap(), ClientConfig::default()).await.unwrap()
}

/// wassette (`WASMGATE_BENCH_WASSETTE`: its binary, 0.2.0 or newer, built from
/// <https://github.com/microsoft/wassette>) serving the echo-tools component over stdio,
/// and our client to it; `None`, said on stderr, when the variable is unset or its file
/// absent. The directory holds the component it loads at start.
async fn wassette() -> Option<(tempfile::TempDir, McpClient, String)> {
    let Some(binary) = std::env::var_os("WASMGATE_BENCH_WASSETTE").map(PathBuf::from).filter(|b| b.is_file()) else {
        eprintln!(
            "wassette: not measured (set WASMGATE_BENCH_WASSETTE to a wassette binary, 0.2.0 or newer, \
             built from https://github.com/microsoft/wassette)"
        );
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(wasmgate_guests::ECHO_TOOLS_PATH, dir.path().join("echo_tools.wasm")).unwrap();
    let server = StdioConfig::new("wassette", binary, dir.path())
        .arg("serve")
        .arg("--stdio")
        .arg(format!("--plugin-dir={}", dir.path().display()))
        .env("RUST_LOG", "error")
        .confinement(None);
    // It speaks the handshake era only, and exits on a first message other than
    // `initialize`: no `server/discover` probe.
    let config = ClientConfig {
        versions: wasmgate_protocol::SUPPORTED.into_iter().filter(|v| !v.is_stateless()).collect(),
        ..ClientConfig::default()
    };
    let client = McpClient::connect("wassette", StdioTransport::spawn(&server).unwrap(), config).await.unwrap();
    // It loads the plugin directory as it starts: wait until the component's export
    // `call-tool` is listed, under the name wassette gives it.
    for _ in 0..200 {
        let tools = client.list_tools().await.unwrap();
        if let Some(tool) = tools.iter().find(|t| t.name.ends_with("call-tool")) {
            let result = client.call_tool(&tool.name, wassette_args(), CancellationToken::new()).await.unwrap();
            assert!(format!("{:?}", result.content).contains("hello"), "wassette's echo: {result:?}");
            return Some((dir, client, tool.name.clone()));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("wassette did not list the echo-tools component's `call-tool` within 10 s");
}

/// The Python of the interop peers' venv (with the `mcp` SDK), its prefixes, and the
/// SDK's server script; `None`, said on stderr, when scripts/install-peers.sh has not
/// installed it.
fn sdk_python() -> Option<(PathBuf, Vec<PathBuf>, PathBuf)> {
    let peers = std::env::var_os("WASMGATE_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/peers"));
    let python = peers.join("venv/bin/python");
    if !python.is_file() {
        eprintln!("python sdk: not measured ({} is missing: run scripts/install-peers.sh)", python.display());
        return None;
    }
    let (_, dirs) = common::python_at(&python);
    Some((python, dirs, fixtures().join("python_peer.py")))
}

/// A reviewed gateway in front of the SDK's server alone (`sdk`, confined, audit off).
fn sdk_gateway_dir((python, dirs, script): &(PathBuf, Vec<PathBuf>, PathBuf)) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "state_dir = \"state\"\n\n[audit]\ndurability = \"off\"\n\n[sandbox]\ncache_dir = \"cache\"\n\n\
         [providers.sdk]\ncommand = {python:?}\nargs = [{script:?}, \"stdio\"]\nread_exec = {dirs:?}\n",
        python = python.display().to_string(),
        script = script.display().to_string(),
        dirs = dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>(),
    );
    std::fs::write(dir.path().join("wasmgate.toml"), config).unwrap();
    let policy = format!(
        "[providers.sdk]\nread_paths = [{:?}]\n\n[providers.sdk.tools]\necho = \"allow\"\n",
        fixtures().display().to_string()
    );
    std::fs::write(dir.path().join("policy.toml"), policy).unwrap();
    let review = common::wasmgate(dir.path(), &["review", "--yes"]);
    assert!(review.status.success(), "{}", common::stderr(&review));
    dir
}

/// The SDK's server called directly against through `wasmgate serve` (audit off): one
/// call at a time and [`IN_FLIGHT`] at once, and each process's CPU per call.
fn against_sdk(client: Client) {
    let rt = client.runtime();
    let label = |what: &str| format!("[{}] {what}", client.name());
    let Some(sdk) = sdk_python() else { return };
    let dir = sdk_gateway_dir(&sdk);
    let (python, _, script) = &sdk;
    let server =
        StdioConfig::new("sdk", python, dir.path()).arg(script.display().to_string()).arg("stdio").confinement(None);
    let direct = rt
        .block_on(async {
            McpClient::connect("sdk", StdioTransport::spawn(&server).unwrap(), ClientConfig::default()).await
        })
        .unwrap();
    let gateway = rt.block_on(through_stdio(dir.path(), None));
    let what = label("python sdk: gateway stdio (audit off) vs direct");
    interleaved(&rt, &what, (&direct, "echo"), (&gateway, "sdk__echo"));
    concurrent(&rt, &what, (&direct, "echo"), (&gateway, "sdk__echo"));
    let process = gateway_child(dir.path());
    let sdk_child = |parent| child_of(parent, |cmdline, _| cmdline.contains("python_peer.py"));
    cpu_per_call(&rt, &label("python sdk: direct"), (&direct, "echo"), &[("upstream", sdk_child(std::process::id()))]);
    cpu_per_call(
        &rt,
        &label("python sdk: gateway stdio (audit off)"),
        (&gateway, "sdk__echo"),
        &[("gateway", process), ("its upstream", sdk_child(process))],
    );
    for mcp in [direct, gateway] {
        rt.block_on(mcp.close());
    }
}

/// `wasmgate serve --http` (killed on drop) and our client to it.
async fn through_http(dir: &Path) -> (wasmgate_testing::Killed, McpClient) {
    let (served, url) = common::serve_http(dir, &[]);
    let client = wasmgate_testing::http_client(&url, &[], None).await;
    (served, client)
}

fn echo_args() -> Map<String, Value> {
    json!({"text": "hello"}).as_object().cloned().unwrap()
}

/// The same `echo` call as wassette takes it: the component's export `call-tool`, with
/// the tool's name and its arguments as a JSON string.
fn wassette_args() -> Map<String, Value> {
    json!({"name": "echo", "arguments": json!({"text": "hello"}).to_string()}).as_object().cloned().unwrap()
}

async fn call(client: &McpClient, tool: &str) {
    let arguments = if tool.ends_with("call-tool") { wassette_args() } else { echo_args() };
    let result = client.call_tool(tool, arguments, CancellationToken::new()).await.unwrap();
    assert!(!result.is_error, "{result:?}");
}

/// Interleaved batches of `a` and `b`, one call at a time; prints each round and the
/// median of `b`'s calls per second over `a`'s.
fn interleaved(rt: &Runtime, what: &str, a: (&McpClient, &str), b: (&McpClient, &str)) {
    let batch = |way| calls_per_second(rt, way, 1, BATCH);
    rounds(what, || (batch(a), batch(b)));
}

/// Calls in flight at once in the throughput comparison, and calls per caller per batch.
const IN_FLIGHT: usize = 8;
const PER_CALLER: usize = 50;

/// Calls per second with [`IN_FLIGHT`] calls in flight on one connection, interleaved
/// like [`interleaved`]: a pipelined client keeps the upstream (and the gateway) busy
/// instead of waiting out a round trip per call.
fn concurrent(rt: &Runtime, what: &str, a: (&McpClient, &str), b: (&McpClient, &str)) {
    let batch = |way| calls_per_second(rt, way, IN_FLIGHT, PER_CALLER);
    rounds(&format!("{what}, {IN_FLIGHT} in flight"), || (batch(a), batch(b)));
}

/// Calls per second of `callers` callers making `each` calls one after another: on the
/// thread in `block_on` for one caller, as tasks of their own for more.
fn calls_per_second(rt: &Runtime, (client, tool): (&McpClient, &str), callers: usize, each: usize) -> f64 {
    let started = Instant::now();
    rt.block_on(async {
        if callers == 1 {
            for _ in 0..each {
                call(client, tool).await;
            }
            return;
        }
        let tasks: Vec<_> = (0..callers)
            .map(|_| {
                let (client, tool) = (client.clone(), tool.to_owned());
                tokio::spawn(async move {
                    for _ in 0..each {
                        call(&client, &tool).await;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
    });
    (callers * each) as f64 / started.elapsed().as_secs_f64()
}

/// [`ROUNDS`] rounds of `round` (calls per second of the first way, then the second);
/// prints each and the median ratio, second over first.
fn rounds(what: &str, mut round: impl FnMut() -> (f64, f64)) {
    let mut ratios = Vec::new();
    for n in 0..ROUNDS {
        let (ra, rb) = round();
        let per_call = |rate: f64| 1e6 / rate;
        eprintln!(
            "{what}: round {n}: {ra:.0} vs {rb:.0} calls/s ({:.1} µs vs {:.1} µs per call); ratio {:.2}",
            per_call(ra),
            per_call(rb),
            rb / ra
        );
        ratios.push(rb / ra);
    }
    ratios.sort_by(f64::total_cmp);
    eprintln!("{what}: median throughput ratio (second / first) {:.2}", ratios[ROUNDS / 2]);
}

/// The client's runtime. Every comparison uses the same runtime on both sides; what it
/// changes is how many thread wake-ups a call costs the client.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Client {
    /// tokio's default: worker threads poll for I/O and wake the thread in `block_on`.
    MultiThread,
    /// One thread that also polls for I/O, like the event loop of a Node or Python client.
    CurrentThread,
}

impl Client {
    /// Both, or the one `WASMGATE_BENCH_CLIENT` names (`multi-thread`, `current-thread`).
    fn chosen() -> Vec<Self> {
        match std::env::var("WASMGATE_BENCH_CLIENT").as_deref() {
            Err(_) => vec![Self::MultiThread, Self::CurrentThread],
            Ok("multi-thread") => vec![Self::MultiThread],
            Ok("current-thread") => vec![Self::CurrentThread],
            Ok(other) => panic!("WASMGATE_BENCH_CLIENT={other}: expected multi-thread or current-thread"),
        }
    }

    fn runtime(self) -> Runtime {
        match self {
            Self::MultiThread => Runtime::new().unwrap(),
            Self::CurrentThread => tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap(),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::MultiThread => "multi-thread client",
            Self::CurrentThread => "current-thread client",
        }
    }
}

/// Calls per CPU-time measurement.
const CPU_CALLS: usize = 1000;

/// CPU time per call of each process on a call's path, over [`CPU_CALLS`] calls made
/// one at a time and then [`IN_FLIGHT`] at a time: the client (this process), and
/// `processes` (the gateway, the upstream), read from `/proc/PID/task/*/schedstat`
/// (nanoseconds, all threads) before and after. This is the work each side does for a
/// call, without the time it spends asleep waiting for the other; it includes what the
/// kernel charges it for sleeping and for waking the other side, which on this VM is
/// much more one call at a time than with calls in flight.
fn cpu_per_call(rt: &Runtime, what: &str, way: (&McpClient, &str), processes: &[(&str, u32)]) {
    let pids: Vec<u32> = std::iter::once(std::process::id()).chain(processes.iter().map(|(_, pid)| *pid)).collect();
    let labels: Vec<&str> = std::iter::once("client").chain(processes.iter().map(|(label, _)| *label)).collect();
    for callers in [1, IN_FLIGHT] {
        let before: Vec<Duration> = pids.iter().map(|pid| cpu_time(*pid)).collect();
        let rate = calls_per_second(rt, way, callers, CPU_CALLS / callers);
        let per_call = |d: Duration| d.as_secs_f64() * 1e6 / CPU_CALLS as f64;
        let spent: Vec<String> = labels
            .iter()
            .zip(pids.iter().zip(&before))
            .map(|(label, (pid, before))| format!("{label} {:.1} µs", per_call(cpu_time(*pid) - *before)))
            .collect();
        eprintln!(
            "{what}, {callers} in flight: CPU per call: {}; wall {:.1} µs per call",
            spent.join(", "),
            1e6 / rate
        );
    }
}

/// CPU time of every thread of process `pid` so far.
fn cpu_time(pid: u32) -> Duration {
    let mut total = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let schedstat = std::fs::read_to_string(task.unwrap().path().join("schedstat")).unwrap_or_default();
        total += schedstat.split_whitespace().next().and_then(|ns| ns.parse::<u64>().ok()).unwrap_or(0);
    }
    Duration::from_nanos(total)
}

/// The child of `parent` whose command line (arguments joined by spaces) and
/// environment (`NAME=VALUE` entries joined by NULs) satisfy `matches`.
fn child_of(parent: u32, matches: impl Fn(&str, &str) -> bool) -> u32 {
    let read = |pid: &str, file: &str| std::fs::read(format!("/proc/{pid}/{file}")).unwrap_or_default();
    for entry in std::fs::read_dir("/proc").unwrap() {
        let name = entry.unwrap().file_name();
        let Some(pid) = name.to_str().filter(|n| n.bytes().all(|b| b.is_ascii_digit())) else { continue };
        let status = String::from_utf8_lossy(&read(pid, "status")).into_owned();
        let ppid = status.lines().find_map(|l| l.strip_prefix("PPid:")).map(str::trim);
        if ppid != Some(parent.to_string().as_str()) {
            continue;
        }
        let cmdline = String::from_utf8_lossy(&read(pid, "cmdline")).replace('\0', " ");
        let environ = String::from_utf8_lossy(&read(pid, "environ")).into_owned();
        if matches(&cmdline, &environ) {
            return pid.parse().unwrap();
        }
    }
    panic!("no child of {parent} matches");
}

/// This process's child running the Python server, or the child of `parent` that does.
fn python_child(parent: u32) -> u32 {
    child_of(parent, |cmdline, _| cmdline.contains("stdio_server.py"))
}

/// This process's `wasmgate serve` child on the configuration in `dir`.
fn gateway_child(dir: &Path) -> u32 {
    let config = format!("WASMGATE_CONFIG={}", dir.join("wasmgate.toml").display());
    child_of(std::process::id(), |cmdline, environ| {
        cmdline.contains("serve") && environ.split('\0').any(|e| e == config)
    })
}

fn overhead(c: &mut Criterion) {
    if std::env::var_os("WASMGATE_BENCH_METRICS_ONLY").is_some() {
        metrics_on_off(c, &Runtime::new().unwrap());
        return;
    }
    if std::env::var_os("WASMGATE_BENCH_WASSETTE_ONLY").is_some() {
        for client in Client::chosen() {
            against_wassette(client);
        }
        return;
    }
    if std::env::var_os("WASMGATE_BENCH_SDK_ONLY").is_some() {
        for client in Client::chosen() {
            against_sdk(client);
        }
        return;
    }
    // `WASMGATE_BENCH_FSYNCS_ONLY=1`: only the audit log's figures, to repeat them quickly.
    if std::env::var_os("WASMGATE_BENCH_FSYNCS_ONLY").is_none() {
        for client in Client::chosen() {
            compare(c, client);
            against_sdk(client);
        }
        metrics_on_off(c, &Runtime::new().unwrap());
    }
    durable_against_off(&Client::CurrentThread.runtime());
    fsyncs(&Runtime::new().unwrap());
}

/// The WASM tool through two gateways over stdio, audit `off` and `every-call`,
/// interleaved one call at a time: what a durable record adds to a call, end to end;
/// then, in the same rounds, that against the fsync alone: a record's worth of bytes
/// appended and `fdatasync`ed by this process in the durable gateway's state directory,
/// as its audit log is (`cargo bench -p wasmgate-audit --bench durable` gives the
/// record's own cost beside its fsync).
fn durable_against_off(rt: &Runtime) {
    let (off, durable) = (gateway_dir("off"), gateway_dir("every-call"));
    let stdio_off = rt.block_on(through_stdio(off.path(), None));
    let stdio_durable = rt.block_on(through_stdio(durable.path(), None));
    let what = "[current-thread] wasm component via gateway, audit off vs every-call";
    interleaved(rt, what, (&stdio_off, "tools__echo"), (&stdio_durable, "tools__echo"));
    let mut probe = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(durable.path().join("state").join("fsync-probe"))
        .unwrap();
    let mut record = vec![b'x'; 551];
    record.push(b'\n');
    let mut fsync_alone = || {
        let started = Instant::now();
        for _ in 0..BATCH {
            std::io::Write::write_all(&mut probe, &record).unwrap();
            probe.sync_data().unwrap();
        }
        started.elapsed().as_secs_f64() * 1e6 / BATCH as f64
    };
    let per_call = |client: &McpClient| 1e6 / calls_per_second(rt, (client, "tools__echo"), 1, BATCH);
    let mut beyond = Vec::new();
    for n in 0..ROUNDS {
        let (plain, durable, fsync) = (per_call(&stdio_off), per_call(&stdio_durable), fsync_alone());
        eprintln!(
            "{what}: round {n}: {plain:.1} vs {durable:.1} µs a call; a durable record adds {:.1} µs, \
             a record's write and fdatasync alone take {fsync:.1} µs: one fsync plus {:.1} µs",
            durable - plain,
            durable - plain - fsync
        );
        beyond.push(durable - plain - fsync);
    }
    beyond.sort_by(f64::total_cmp);
    eprintln!("{what}: a durable record adds one fsync plus {:.1} µs a call (median of rounds)", beyond[ROUNDS / 2]);
    for mcp in [stdio_off, stdio_durable] {
        rt.block_on(mcp.close());
    }
}

/// `wasmgate serve --http` (audit off) with its metrics on, the default, against the
/// same gateway with `[serve.metrics] enabled = false`: criterion's figures, then
/// interleaved rounds one call at a time and [`IN_FLIGHT`] at once.
fn metrics_on_off(c: &mut Criterion, rt: &Runtime) {
    let (on_dir, off_dir) = (gateway_dir("off"), gateway_dir("off"));
    let config = off_dir.path().join("wasmgate.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}\n[serve.metrics]\nenabled = false\n")).unwrap();
    let (_on_served, on) = rt.block_on(through_http(on_dir.path()));
    let (_off_served, off) = rt.block_on(through_http(off_dir.path()));
    let mut group = c.benchmark_group("metrics");
    group.bench_function("gateway_http_metrics_off", |b| b.iter(|| rt.block_on(call(&off, "echo__echo"))));
    group.bench_function("gateway_http_metrics_on", |b| b.iter(|| rt.block_on(call(&on, "echo__echo"))));
    group.finish();
    interleaved(rt, "gateway http (audit off), metrics off vs on", (&off, "echo__echo"), (&on, "echo__echo"));
    concurrent(rt, "gateway http (audit off), metrics off vs on", (&off, "echo__echo"), (&on, "echo__echo"));
    for mcp in [on, off] {
        rt.block_on(mcp.close());
    }
}

/// The component through `wasmgate serve` (audit off) against wassette serving it, one
/// call at a time and [`IN_FLIGHT`] at once, and the CPU each spends per call.
fn against_wassette(client: Client) {
    let rt = client.runtime();
    let label = |what: &str| format!("[{}] {what}", client.name());
    let off = gateway_dir("off");
    let gateway = rt.block_on(through_stdio(off.path(), None));
    let Some((_dir, wassette, tool)) = rt.block_on(wassette()) else { return };
    wassette_rounds(&rt, &label, (&wassette, &tool), &gateway);
    let process = gateway_child(off.path());
    cpu_per_call(
        &rt,
        &label("wasm component via gateway (audit off)"),
        (&gateway, "tools__echo"),
        &[("gateway", process)],
    );
    for mcp in [gateway, wassette] {
        rt.block_on(mcp.close());
    }
}

/// wassette against the gateway serving the same component (audit off): interleaved
/// rounds one call at a time and [`IN_FLIGHT`] at once, and wassette's CPU per call.
fn wassette_rounds(rt: &Runtime, label: &dyn Fn(&str) -> String, wassette: (&McpClient, &str), gateway: &McpClient) {
    let what = label("wasm component: wassette vs via gateway (audit off)");
    interleaved(rt, &what, wassette, (gateway, "tools__echo"));
    concurrent(rt, &what, wassette, (gateway, "tools__echo"));
    let process = child_of(std::process::id(), |cmdline, _| cmdline.contains("wassette"));
    cpu_per_call(rt, &label("wassette"), wassette, &[("wassette", process)]);
}

/// Every comparison with `client`'s runtime; criterion's figures with the default one.
fn compare(c: &mut Criterion, client: Client) {
    let rt = client.runtime();
    let label = |what: &str| format!("[{}] {what}", client.name());
    // One directory per running gateway: a gateway holds its state directory.
    let (off, off_http, durable) = (gateway_dir("off"), gateway_dir("off"), gateway_dir("every-call"));
    let off_sleeping = gateway_dir("off");
    let off_unprepared = gateway_dir_with("off", "prepared_instances = 0\n");
    let direct = rt.block_on(direct());
    let stdio_off = rt.block_on(through_stdio(off.path(), None));
    let stdio_durable = rt.block_on(through_stdio(durable.path(), None));
    // The same gateway, sleeping at once whenever it runs out of work.
    let stdio_sleeping = rt.block_on(through_stdio(off_sleeping.path(), Some(0)));
    // The same gateway making and tearing down every instance on its call's path.
    let stdio_unprepared = rt.block_on(through_stdio(off_unprepared.path(), None));
    let (http_served, http_off) = rt.block_on(through_http(off_http.path()));
    let wassette = rt.block_on(wassette());

    if client == Client::MultiThread {
        let mut group = c.benchmark_group("small_echo_call");
        group.bench_function("direct_python_stdio", |b| b.iter(|| rt.block_on(call(&direct, "echo"))));
        group.bench_function("gateway_stdio_audit_off", |b| b.iter(|| rt.block_on(call(&stdio_off, "echo__echo"))));
        group.bench_function("gateway_stdio_audit_every_call", |b| {
            b.iter(|| rt.block_on(call(&stdio_durable, "echo__echo")));
        });
        group.bench_function("gateway_http_audit_off", |b| b.iter(|| rt.block_on(call(&http_off, "echo__echo"))));
        group.bench_function("wasm_component_via_gateway_stdio_audit_off", |b| {
            b.iter(|| rt.block_on(call(&stdio_off, "tools__echo")));
        });
        group.finish();
    }

    interleaved(&rt, &label("gateway stdio (audit off) vs direct"), (&direct, "echo"), (&stdio_off, "echo__echo"));
    interleaved(&rt, &label("gateway http (audit off) vs direct"), (&direct, "echo"), (&http_off, "echo__echo"));
    interleaved(&rt, &label("gateway stdio (every-call) vs direct"), (&direct, "echo"), (&stdio_durable, "echo__echo"));
    interleaved(
        &rt,
        &label("wasm component via gateway (audit off) vs python direct"),
        (&direct, "echo"),
        (&stdio_off, "tools__echo"),
    );
    interleaved(
        &rt,
        &label("wasm component via gateway (every-call) vs python direct"),
        (&direct, "echo"),
        (&stdio_durable, "tools__echo"),
    );
    interleaved(
        &rt,
        &label("wasm component via gateway (audit off), prepared_instances 0 vs default"),
        (&stdio_unprepared, "tools__echo"),
        (&stdio_off, "tools__echo"),
    );
    interleaved(
        &rt,
        &label("gateway stdio (audit off), prepared_instances 0 vs default"),
        (&stdio_unprepared, "echo__echo"),
        (&stdio_off, "echo__echo"),
    );
    interleaved(
        &rt,
        &label("gateway stdio (audit off), --spin-us 0 vs default"),
        (&stdio_sleeping, "echo__echo"),
        (&stdio_off, "echo__echo"),
    );
    interleaved(
        &rt,
        &label("wasm component via gateway (audit off), --spin-us 0 vs default"),
        (&stdio_sleeping, "tools__echo"),
        (&stdio_off, "tools__echo"),
    );
    let me = std::process::id();
    let (stdio_gateway, http_gateway) = (gateway_child(off.path()), http_served.0.id());
    let upstream = |gateway: u32| ("its upstream", python_child(gateway));
    cpu_per_call(&rt, &label("direct"), (&direct, "echo"), &[("upstream", python_child(me))]);
    cpu_per_call(
        &rt,
        &label("gateway stdio (audit off)"),
        (&stdio_off, "echo__echo"),
        &[("gateway", stdio_gateway), upstream(stdio_gateway)],
    );
    cpu_per_call(
        &rt,
        &label("gateway http (audit off)"),
        (&http_off, "echo__echo"),
        &[("gateway", http_gateway), upstream(http_gateway)],
    );
    cpu_per_call(
        &rt,
        &label("wasm component via gateway (audit off)"),
        (&stdio_off, "tools__echo"),
        &[("gateway", stdio_gateway)],
    );
    if let Some((_, wassette, tool)) = &wassette {
        wassette_rounds(&rt, &label, (wassette, tool), &stdio_off);
    }
    concurrent(&rt, &label("gateway stdio (audit off) vs direct"), (&direct, "echo"), (&stdio_off, "echo__echo"));
    concurrent(&rt, &label("gateway http (audit off) vs direct"), (&direct, "echo"), (&http_off, "echo__echo"));
    concurrent(&rt, &label("gateway stdio (every-call) vs direct"), (&direct, "echo"), (&stdio_durable, "echo__echo"));
    concurrent(
        &rt,
        &label("wasm component via gateway (audit off) vs python direct"),
        (&direct, "echo"),
        (&stdio_off, "tools__echo"),
    );
    for mcp in [direct, stdio_off, stdio_durable, stdio_sleeping, stdio_unprepared, http_off] {
        rt.block_on(mcp.close());
    }
    if let Some((_dir, wassette, _)) = wassette {
        rt.block_on(wassette.close());
    }
}

/// Fsyncs per call of the default durable log: the gateway in-process (the same
/// `Gateway::start` and `serve_http` as `wasmgate serve`), one caller, then 64.
fn fsyncs(rt: &Runtime) {
    let dir = gateway_dir("every-call");
    rt.block_on(async {
        let config = wasmgate_gateway::Config::load(&dir.path().join("wasmgate.toml")).unwrap();
        let gateway = wasmgate_gateway::Gateway::start(&config, Arc::new(wasmgate_guard::Unattended)).await.unwrap();
        let backend = gateway.backend();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let http = wasmgate_server::HttpConfig { per_client_concurrency: 256, ..wasmgate_server::HttpConfig::new() };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn(wasmgate_server::serve_http(
            backend,
            listener,
            wasmgate_server::ServerConfig::default(),
            http,
            async {
                let _ = stopped.await;
            },
        ));
        let connect = || wasmgate_testing::http_client(&url, &[], None);
        let one = connect().await;
        call(&one, "echo__echo").await;
        let audit = gateway.guard.audit();
        let before = audit.fsyncs();
        for _ in 0..200 {
            call(&one, "echo__echo").await;
        }
        let sequential = (audit.fsyncs() - before) as f64 / 200.0;
        eprintln!("fsyncs per call, one caller at a time: {sequential:.3}");

        let mut clients = Vec::new();
        for _ in 0..64 {
            clients.push(connect().await);
        }
        let before = audit.fsyncs();
        let calls = 20;
        let started = Instant::now();
        let tasks: Vec<_> = clients
            .iter()
            .cloned()
            .map(|client| {
                tokio::spawn(async move {
                    for _ in 0..calls {
                        call(&client, "echo__echo").await;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        let total = 64 * calls;
        let concurrent = (audit.fsyncs() - before) as f64 / f64::from(total);
        eprintln!(
            "fsyncs per call, 64 concurrent callers ({total} calls in {:.2} s): {concurrent:.3}",
            started.elapsed().as_secs_f64()
        );
        for client in clients.into_iter().chain([one]) {
            client.close().await;
        }
        let _ = stop.send(());
        let _ = served.await;
        gateway.close().await;
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3)).sample_size(30);
    targets = overhead
}
criterion_main!(benches);
