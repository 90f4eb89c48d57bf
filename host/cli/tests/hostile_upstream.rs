//! The hostile upstream matrix, end to end through `wasmgate serve` over stdio: a gateway
//! with two providers, `bad` (tests/fixtures/hostile_upstream.py in one misbehaviour mode,
//! spawned confined) and `echo` (the gate crate's well-behaved stdio fixture), reviewed
//! with `wasmgate review --yes`, then driven by our own MCP client. For each mode: the
//! outcome the failure contract gives (the exact text a model would read), the gateway
//! still up, `echo__echo` still answering, and the gateway's memory (VmHWM, its peak
//! resident set, read from /proc) under a bound far below what buffering the attack
//! whole would take. Every wait is bounded: the client gives up after a minute, and a
//! call that the mode never answers is given up by the client after a few seconds
//! (the gateway has no configurable call timeout of its own; its client's default is
//! 120 s), which also checks that the cancellation reaches the upstream.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{python, serve_stdio, stderr, stdout, wasmgate};
use serde_json::{Map, Value, json};
use wasmgate_client::{CallOptions, ClientConfig, ClientError, McpClient, StdioTransport};
use wasmgate_core::CancellationToken;
use wasmgate_protocol::CallToolResult;

/// What a model reads when a call produced no result (`ToolErrorKind::ExecutionFailed`).
const EXECUTION_FAILED: &str = "tool execution failed";
/// Peak resident memory of the gateway in any mode: a 100 MB answer must never be
/// buffered whole, nor a flood of messages queued.
const MAX_PEAK_KIB: u64 = 300 * 1024;
/// How far above its resident set before the attack the gateway's peak may go (it starts
/// at about 26 MiB; queuing 100,000 answers to pings took it up by 140 MiB).
const MAX_GROWTH_KIB: u64 = 64 * 1024;
/// How long the client waits for a call that the mode never answers.
const GIVE_UP: Duration = Duration::from_secs(3);
/// How long anything that should happen is waited for.
const PATIENCE: Duration = Duration::from_secs(60);

fn cli_fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").canonicalize().unwrap()
}

/// A gateway configuration with `bad` running the hostile fixture as `args` say, and `echo`.
/// Compiled components are cached across the tests of this file.
fn configure(args: &[&str]) -> tempfile::TempDir {
    configure_with(args, "")
}

/// As [`configure`], with `extra` lines in the hostile provider's table.
fn configure_with(args: &[&str], extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let gate_fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../client/tests/fixtures").canonicalize().unwrap();
    let hostile = cli_fixtures().join("hostile_upstream.py").display().to_string();
    let (python, dirs) = python();
    let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    let mut bad_args = vec![hostile];
    bad_args.extend(args.iter().map(|a| (*a).to_owned()));
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile-upstream-cache");
    let config = format!(
        "state_dir = \"state\"\n\n[sandbox]\ncache_dir = {cache:?}\n\n\
         [providers.bad]\ncommand = {python:?}\nargs = {bad_args:?}\nread_exec = {dirs:?}\n{extra}\n\
         [providers.echo]\ncommand = {python:?}\nargs = [{echo:?}]\nread_exec = {dirs:?}\n",
        cache = cache.display().to_string(),
        python = python.display().to_string(),
        echo = gate_fixtures.join("stdio_server.py").display().to_string(),
    );
    std::fs::write(dir.path().join("wasmgate.toml"), config).unwrap();
    let policy = format!(
        "[providers.bad]\nread_paths = [{bad:?}]\nunlisted = \"allow\"\n\n\
         [providers.echo]\nread_paths = [{echo:?}]\n\n[providers.echo.tools]\necho = \"allow\"\n",
        bad = cli_fixtures().display().to_string(),
        echo = gate_fixtures.display().to_string(),
    );
    std::fs::write(dir.path().join("policy.toml"), policy).unwrap();
    dir
}

/// `wasmgate serve` on `dir` over stdio, our client connected to it, and its pid.
async fn serve(dir: &Path) -> (McpClient, u32) {
    let server = serve_stdio(dir);
    let transport = StdioTransport::spawn(&server).unwrap();
    let pid = transport.pid().expect("the gateway's pid");
    let config = ClientConfig { request_timeout: PATIENCE, call_timeout: PATIENCE, ..ClientConfig::default() };
    (McpClient::connect("wasmgate", transport, config).await.unwrap(), pid)
}

/// The resident set now and its peak so far, in KiB, from /proc/PID/status.
#[derive(Debug, Clone, Copy)]
struct Memory {
    rss_kib: u64,
    peak_kib: u64,
}

fn memory(pid: u32) -> Memory {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| -> u64 {
        let line = status.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("{name} in {status}"));
        line[name.len()..].trim().trim_end_matches("kB").trim().parse().unwrap()
    };
    Memory { rss_kib: field("VmRSS:"), peak_kib: field("VmHWM:") }
}

fn text(result: &CallToolResult) -> String {
    result.content.iter().filter_map(|b| b.text()).collect()
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

/// A served gateway whose tools were reviewed while the fixture behaved.
struct Served {
    mode: String,
    dir: tempfile::TempDir,
    client: McpClient,
    pid: u32,
    before: Memory,
    started: Instant,
}

/// Reviews and serves a gateway with `bad` in `mode`; checks both providers' tools are
/// listed and `echo__echo` answers, and notes the memory before the attack.
async fn gateway(mode: &str) -> Served {
    gateway_with(mode, "").await
}

/// As [`gateway`], with `extra` lines in the hostile provider's configuration.
async fn gateway_with(mode: &str, extra: &str) -> Served {
    let started = Instant::now();
    let dir = configure_with(&[mode], extra);
    let review = wasmgate(dir.path(), &["review", "--yes"]);
    assert!(review.status.success(), "{mode}: review: {}{}", stdout(&review), stderr(&review));
    assert!(stdout(&review).contains("approved: bad__trap"), "{mode}: {}", stdout(&review));
    let (client, pid) = serve(dir.path()).await;
    let names = tool_names(&client).await;
    for name in ["bad__ok", "bad__trap", "echo__echo"] {
        assert!(names.iter().any(|n| n == name), "{mode}: {name} is served: {names:?}");
    }
    let served = Served { mode: mode.to_owned(), dir, client, pid, before: memory(pid), started };
    served.assert_echo_works().await;
    served
}

async fn tool_names(client: &McpClient) -> Vec<String> {
    client.list_tools().await.unwrap().into_iter().map(|t| t.name).collect()
}

impl Served {
    async fn call(&self, tool: &str) -> CallToolResult {
        self.client.call_tool(tool, Map::new(), CancellationToken::new()).await.unwrap_or_else(|e| {
            panic!("{}: {tool}: the gateway answers every call (with an error result at worst): {e}", self.mode)
        })
    }

    /// Calls `tool`, which the mode never answers: the client gives up after [`GIVE_UP`].
    async fn call_given_up(&self, tool: &str) {
        let options = CallOptions { timeout: Some(GIVE_UP), ..CallOptions::default() };
        let outcome = self.client.call_tool_with(tool, Map::new(), CancellationToken::new(), options).await;
        assert!(matches!(outcome, Err(ClientError::Timeout { .. })), "{}: {tool}: {outcome:?}", self.mode);
    }

    async fn assert_failed(&self, tool: &str) {
        let result = self.call(tool).await;
        assert!(result.is_error, "{}: {tool}: {result:?}", self.mode);
        assert_eq!(text(&result), EXECUTION_FAILED, "{}: {tool}", self.mode);
    }

    /// Calls `tool` and returns its text, which must be an ordinary (framed) result
    /// containing `expected`.
    async fn assert_answers(&self, tool: &str, expected: &str) -> String {
        let result = self.call(tool).await;
        assert!(!result.is_error, "{}: {tool}: {result:?}", self.mode);
        let got = text(&result);
        assert!(got.contains("<untrusted-data boundary="), "{}: {tool}: upstream text is framed: {got}", self.mode);
        assert!(got.contains(expected), "{}: {tool}: expected {expected:?} in {got}", self.mode);
        got
    }

    async fn assert_echo_works(&self) {
        let echo = self
            .client
            .call_tool("echo__echo", args(json!({"text": "still here"})), CancellationToken::new())
            .await
            .unwrap_or_else(|e| panic!("{}: echo__echo: {e}", self.mode));
        assert!(!echo.is_error && text(&echo).contains("still here"), "{}: {echo:?}", self.mode);
    }

    /// The audit records of `bad`'s tool `tool`.
    fn audit(&self, tool: &str) -> Vec<Value> {
        let log = std::fs::read_to_string(self.dir.path().join("state/audit.jsonl")).unwrap();
        log.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|r| r["provider"] == "bad" && r["tool"] == tool)
            .collect()
    }

    /// The `error` of the `failed` record of `bad__trap`: the host-side reason. The record
    /// is queued when the call ends, so it may land just after the answer.
    async fn trap_failure(&self) -> String {
        self.eventually("the failed record", |s| s.audit("trap").iter().any(|r| r["event"] == "failed")).await;
        let records = self.audit("trap");
        let failed: Vec<&Value> = records.iter().filter(|r| r["event"] == "failed").collect();
        assert_eq!(failed.len(), 1, "{}: one failed record: {records:?}", self.mode);
        let why = failed[0]["error"].as_str().unwrap().to_owned();
        eprintln!("hostile upstream {}: audited failure: {why}", self.mode);
        why
    }

    /// What the fixture received, as it recorded it in its working directory.
    fn received(&self) -> Vec<Value> {
        let path = self.dir.path().join("state/providers/bad/received.jsonl");
        let log = std::fs::read_to_string(path).unwrap_or_default();
        log.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
    }

    /// Waits (within [`PATIENCE`]) until `done` holds.
    async fn eventually(&self, what: &str, mut done: impl FnMut(&Self) -> bool) {
        let deadline = Instant::now() + PATIENCE;
        while !done(self) {
            assert!(Instant::now() < deadline, "{}: {what} never happened", self.mode);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Checks the gateway still serves `echo`, that its memory stayed bounded, and closes.
    async fn finish(self) {
        self.assert_echo_works().await;
        let names = tool_names(&self.client).await;
        assert!(names.iter().any(|n| n == "echo__echo"), "{}: {names:?}", self.mode);
        let after = memory(self.pid);
        eprintln!(
            "hostile upstream {}: gateway RSS {} MiB before, {} MiB after, peak {} MiB; {:.1} s",
            self.mode,
            self.before.rss_kib / 1024,
            after.rss_kib / 1024,
            after.peak_kib / 1024,
            self.started.elapsed().as_secs_f64()
        );
        assert!(after.peak_kib < MAX_PEAK_KIB, "{}: peak {} KiB", self.mode, after.peak_kib);
        let growth = after.peak_kib.saturating_sub(self.before.rss_kib);
        assert!(growth < MAX_GROWTH_KIB, "{}: the peak is {growth} KiB above the start: {after:?}", self.mode);
        self.client.close().await;
    }
}

#[tokio::test]
async fn malformed_json_fails_the_call_it_answers() {
    let served = gateway("malformed-json").await;
    served.assert_failed("bad__trap").await;
    let why = served.trap_failure().await;
    assert!(why.contains("invalid JSON"), "{why}");
    served.assert_answers("bad__ok", "ok").await;
    served.finish().await;
}

#[tokio::test]
async fn a_100_mb_line_fails_its_call_and_is_never_buffered_whole() {
    let served = gateway("huge-line").await;
    served.assert_failed("bad__trap").await;
    let why = served.trap_failure().await;
    assert!(why.contains("104857") && why.contains("over the size limit"), "{why}");
    served.assert_answers("bad__ok", "ok").await;
    served.finish().await;
}

#[tokio::test]
async fn an_answer_under_another_id_is_ignored_and_the_call_is_given_up() {
    let served = gateway("wrong-id").await;
    served.call_given_up("bad__trap").await;
    served.eventually("the cancellation reaching the upstream", cancelled_upstream).await;
    // The stray answer was under the id the gateway used next: it did not answer that call.
    served.assert_answers("bad__ok", "ok").await;
    let received = served.received();
    let id_of = |tool: &str| {
        received.iter().find(|m| m["method"] == "tools/call" && m["params"]["name"] == tool).unwrap()["id"].clone()
    };
    assert_eq!(id_of("ok").as_i64().unwrap(), id_of("trap").as_i64().unwrap() + 1, "{received:?}");
    served.finish().await;
}

#[tokio::test]
async fn a_second_answer_to_the_same_call_is_dropped() {
    let served = gateway("duplicate-id").await;
    let first = served.assert_answers("bad__trap", "first").await;
    assert!(!first.contains("second"), "{first}");
    let next = served.assert_answers("bad__ok", "ok").await;
    assert!(!next.contains("second"), "{next}");
    served.finish().await;
}

#[tokio::test]
async fn answers_to_requests_never_sent_are_ignored() {
    let served = gateway("unsolicited").await;
    served.assert_answers("bad__trap", "proper").await;
    served.assert_answers("bad__ok", "ok").await;
    served.finish().await;
}

#[tokio::test]
async fn a_flood_of_notifications_is_drained_and_the_call_answers() {
    let served = gateway("notification-flood").await;
    served.assert_answers("bad__trap", "after the flood").await;
    served.assert_answers("bad__ok", "ok").await;
    served.finish().await;
}

#[tokio::test]
async fn a_crash_mid_call_fails_that_call_and_the_server_is_started_again() {
    let served = gateway("crash").await;
    served.assert_failed("bad__trap").await;
    let why = served.trap_failure().await;
    // Whichever the transport notices first: the cut line or the exit status.
    assert!(why.starts_with("transport closed"), "{why}");
    // Started again with backoff (1 s first): its tools answer again, and the audit log says
    // what happened.
    let deadline = Instant::now() + PATIENCE;
    loop {
        // While it is down its tools are not served: "Unknown tool", or a failed call.
        let result = served.client.call_tool("bad__ok", Map::new(), CancellationToken::new()).await;
        if result.as_ref().is_ok_and(|r| !r.is_error && text(r).contains("ok")) {
            break;
        }
        assert!(Instant::now() < deadline, "the provider never answered again: {result:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let log = std::fs::read_to_string(served.dir.path().join("state/audit.jsonl")).unwrap();
    assert!(log.contains("provider bad went down (") && log.contains("provider bad is up"), "{log}");
    served.finish().await;
}

#[tokio::test]
async fn a_call_that_never_answers_is_cancelled_upstream_when_the_client_gives_up() {
    let served = gateway("hang").await;
    served.call_given_up("bad__trap").await;
    served.eventually("the cancellation reaching the upstream", cancelled_upstream).await;
    served
        .eventually("the cancellation in the audit log", |s| s.audit("trap").iter().any(|r| r["event"] == "cancelled"))
        .await;
    served.assert_answers("bad__ok", "ok").await;
    served.finish().await;
}

#[tokio::test]
async fn a_configured_call_timeout_ends_a_call_that_never_answers() {
    // `call_timeout_ms` in wasmgate.toml bounds the upstream call (default 120 s).
    let served = gateway_with("hang", "call_timeout_ms = 500").await;
    let started = Instant::now();
    served.assert_failed("bad__trap").await;
    assert!(started.elapsed() < Duration::from_secs(30), "the configured timeout ended the call");
    let why = served.trap_failure().await;
    assert!(why.contains("timed out after 500ms"), "{why}");
    served.assert_answers("bad__ok", "ok").await;
    served.finish().await;
}

#[tokio::test]
async fn a_dripping_answer_is_abandoned_when_the_client_gives_up() {
    let served = gateway("drip").await;
    served.call_given_up("bad__trap").await;
    served
        .eventually("the cancellation in the audit log", |s| s.audit("trap").iter().any(|r| r["event"] == "cancelled"))
        .await;
    served.finish().await;
}

/// Whether the fixture received `notifications/cancelled` for its `trap` call.
fn cancelled_upstream(served: &Served) -> bool {
    let received = served.received();
    let Some(call) = received.iter().find(|m| m["method"] == "tools/call" && m["params"]["name"] == "trap") else {
        return false;
    };
    received.iter().any(|m| m["method"] == "notifications/cancelled" && m["params"]["requestId"] == call["id"])
}

#[tokio::test]
async fn a_list_of_100000_tools_later_keeps_the_reviewed_tools_served() {
    let served = gateway("many-tools").await;
    served.assert_answers("bad__trap", "the list changed").await;
    // The change notification makes the gateway list again: it stops paging at its cap.
    let cursors = |s: &Served| -> Vec<Value> {
        s.received()
            .into_iter()
            .filter(|m| m["method"] == "tools/list")
            .map(|m| m["params"]["cursor"].clone())
            .collect()
    };
    served.eventually("the second page being asked for", |s| cursors(s).contains(&json!("1"))).await;
    let names = tool_names(&served.client).await;
    assert!(names.iter().any(|n| n == "bad__ok"), "the last known tools stay offered: {names:?}");
    assert!(names.iter().all(|n| !n.starts_with("bad__t0")), "{names:?}");
    served.assert_answers("bad__ok", "ok").await;
    assert!(!cursors(&served).contains(&json!("2")), "paging stopped at the tool cap: {:?}", cursors(&served));
    served.finish().await;
}

#[tokio::test]
async fn a_list_of_100000_tools_at_start_up_withholds_that_provider_and_serves_the_others() {
    let dir = configure(&["many-tools", "--from-start"]);
    let started = Instant::now();
    let tools = common::command(dir.path()).args(["tools"]).stdin(std::process::Stdio::null()).output().unwrap();
    assert!(tools.status.success(), "{}", stderr(&tools));
    let listed = stdout(&tools);
    let withheld = listed.lines().find(|l| l.starts_with("  withheld: ")).unwrap_or_default();
    assert_eq!(withheld.matches("cannot start provider \"bad\"").count(), 1, "{listed}");
    assert!(withheld.contains("tools exceeds the limit of 1024"), "{listed}");
    assert!(listed.contains("echo__echo"), "the other provider is served: {listed}");
    // Marked required, it stops start-up, naming it once.
    let config = std::fs::read_to_string(dir.path().join("wasmgate.toml")).unwrap();
    let required = config.replacen("[providers.bad]\n", "[providers.bad]\nrequired = true\n", 1);
    std::fs::write(dir.path().join("wasmgate.toml"), required).unwrap();
    let out = common::command(dir.path()).args(["serve"]).stdin(std::process::Stdio::null()).output().unwrap();
    assert!(!out.status.success());
    let message = stderr(&out);
    let named = message.matches("cannot start provider \"bad\"").count() == 1;
    assert!(named && message.contains("tools exceeds the limit of 1024"), "{message}");
    eprintln!("hostile upstream many-tools --from-start: {:.1} s", started.elapsed().as_secs_f64());
}

/// A provider that announces a change and then never answers `tools/list` must not hold
/// up the gateway's listing. Found by this matrix: providers were asked one after
/// another, each within its client's 30 s request timeout, so the first listing after
/// the change took 60 s. Now every provider is asked at once and waited for at most
/// `OFFER_WAIT` (5 s), after which its last known tools are offered.
#[tokio::test]
async fn a_provider_that_never_answers_tools_list_does_not_stall_the_others() {
    let served = gateway("hang-list").await;
    served.assert_answers("bad__trap", "the list changed").await;
    // Stalled, the listing took 60 s; `OFFER_WAIT` bounds it at 5 s, and 30 s leaves a
    // loaded machine room while still telling the two apart.
    let listing = tokio::time::timeout(Duration::from_secs(30), tool_names(&served.client)).await;
    let names = listing.expect("the gateway lists its tools within 30 s");
    assert!(names.iter().any(|n| n == "echo__echo"), "{names:?}");
    served.finish().await;
}

#[tokio::test]
async fn a_changed_definition_is_withheld_until_reviewed_again() {
    let served = gateway("changing-tools").await;
    served.assert_answers("bad__trap", "the list changed").await;
    let deadline = Instant::now() + PATIENCE;
    while tool_names(&served.client).await.iter().any(|n| n == "bad__trap") {
        assert!(Instant::now() < deadline, "the changed tool is still served");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let again = served.client.call_tool("bad__trap", Map::new(), CancellationToken::new()).await;
    assert!(matches!(again, Err(ClientError::UnknownTool { .. })), "{again:?}");
    let warned = |s: &Served| {
        s.audit("trap").iter().any(|r| {
            r["event"] == "warning"
                && r["message"].as_str().is_some_and(|m| m.contains("changed since it was reviewed"))
        })
    };
    served.eventually("the change in the audit log", warned).await;
    served.assert_answers("bad__ok", "ok").await;
    served.finish().await;
}

#[tokio::test]
async fn names_shaped_like_other_providers_tools_stay_under_their_own_prefix() {
    let served = gateway("shadow").await;
    let names = tool_names(&served.client).await;
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "{names:?}");
    for name in ["bad__echo__echo", "bad__echo", "bad__bad__ok"] {
        assert!(names.iter().any(|n| n == name), "{name}: {names:?}");
    }
    assert!(names.iter().all(|n| n.starts_with("bad__") || n == "echo__echo"), "{names:?}");
    assert!(!names.iter().any(|n| n.contains('/') || n.contains('\u{0435}') || n.len() > 128), "{names:?}");
    // `echo__echo` is still the echo provider's tool, and bad's look-alike answers as bad.
    served.assert_echo_works().await;
    served.assert_answers("bad__echo__echo", "shadow: echo__echo").await;
    served.finish().await;
}

#[tokio::test]
async fn a_poisoned_definition_is_marked_at_review_and_its_hidden_text_never_served() {
    let dir = configure(&["poisoned"]);
    let review = wasmgate(dir.path(), &["review", "--yes"]);
    assert!(review.status.success(), "{}", stderr(&review));
    let shown = stdout(&review);
    assert!(shown.contains("WARNING: /inputSchema/properties/a/description reads like instructions"), "{shown}");
    assert!(
        shown.contains("Adds two numbers.\\u{e0020}\\u{e0054}\\u{e0068}"),
        "the hidden text shown escaped: {shown}"
    );
    assert!(shown.contains("WITHHELD even if approved") && shown.contains("/properties/kind/enum/1"), "{shown}");

    let tools = wasmgate(dir.path(), &["tools"]);
    let listed = stdout(&tools);
    assert!(listed.lines().any(|l| l.contains("bad__pick") && l.ends_with("unusable")), "{listed}");

    let (client, _pid) = serve(dir.path()).await;
    let served = client.list_tools().await.unwrap();
    let add = served.iter().find(|t| t.name == "bad__add").expect("bad__add is served");
    assert_eq!(add.description.as_deref(), Some("Adds two numbers."), "the tag characters are gone");
    assert!(!served.iter().any(|t| t.name == "bad__pick"), "an unusable definition is not served");
    client.close().await;
}

#[tokio::test]
async fn an_answer_that_is_not_utf8_fails_its_call() {
    let served = gateway("non-utf8").await;
    served.assert_failed("bad__trap").await;
    let why = served.trap_failure().await;
    assert!(why.contains("not valid UTF-8"), "{why}");
    served.assert_answers("bad__ok", "ok").await;
    served.finish().await;
}

#[tokio::test]
async fn an_answer_nested_100000_deep_fails_its_call() {
    let served = gateway("deep-json").await;
    served.assert_failed("bad__trap").await;
    let why = served.trap_failure().await;
    assert!(why.contains("deeper than the limit of 64 levels"), "{why}");
    served.assert_answers("bad__ok", "ok").await;
    served.finish().await;
}

#[tokio::test]
async fn a_flood_of_pings_is_answered_and_the_call_answers() {
    let served = gateway("ping-flood").await;
    served.assert_answers("bad__trap", "after the pings").await;
    served.assert_answers("bad__ok", "ok").await;
    served.finish().await;
}
