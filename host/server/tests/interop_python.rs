//! Interop with a client written elsewhere: the Python SDK's `Client` (PyPI `mcp` 2.3.0,
//! from the venv scripts/install-peers.sh builds) over Streamable HTTP, in the
//! 2026-07-28 era (its default probe) and in the handshake era. A missing venv fails the
//! test with the command that installs it: interop that silently does not run proves nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::{Fixture, Http, bounded, config};
use serde_json::{Value, json};
use wasmgate_server::HttpConfig;

/// The venv's Python: `<workspace>/target/peers/venv`, or under `WASMGATE_PEERS_DIR`.
fn venv_python() -> PathBuf {
    let peers = std::env::var_os("WASMGATE_PEERS_DIR")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/peers"), PathBuf::from);
    let python = peers.join("venv/bin/python");
    assert!(python.exists(), "interop peer {} is missing: run scripts/install-peers.sh", python.display());
    python
}

async fn python_client(url: &str, mode: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/python_client.py");
    let run = tokio::process::Command::new(venv_python())
        .arg(script)
        .arg(url)
        .arg(mode)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = bounded("the Python client", run).await.unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the Python client failed: {}\n{stderr}", output.status);
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {:?}\n{stderr}", output.stdout))
}

fn check(seen: &Value) {
    assert_eq!(seen["server_name"], "wasmgate");
    assert_eq!(seen["tools"], json!(["echo", "fail", "broken", "block"]));
    assert_eq!(seen["echo"], json!({"text": ["hello from python"], "is_error": false}));
    assert_eq!(seen["fail"], json!({"text": ["no such calendar"], "is_error": true}));
    assert_eq!(seen["unknown"], json!({"code": -32602, "message": "Unknown tool: nope"}));
}

#[tokio::test]
async fn the_python_sdk_client_uses_the_2026_era_over_http() {
    let server = Http::start(Fixture::new().backend, config(), HttpConfig::default()).await;
    let seen = python_client(&server.url, "auto").await;
    assert_eq!(seen["protocol_version"], "2026-07-28", "{seen}");
    check(&seen);
}

#[tokio::test]
async fn the_python_sdk_client_uses_the_handshake_era_over_http() {
    let server = Http::start(Fixture::new().backend, config(), HttpConfig::default()).await;
    let seen = python_client(&server.url, "legacy").await;
    assert_eq!(seen["protocol_version"], "2025-11-25", "{seen}");
    check(&seen);
}
