//! A hostile remote MCP server against the gateway's own requests, end to end through
//! the `wasmgate` binary: its OAuth challenge cannot make the gateway request an internal
//! URL, and its token endpoint cannot make the gateway buffer a huge answer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::ErrorKind;
use std::net::{Ipv4Addr, TcpListener};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Runs the fixture in `mode` against an internal listener, which must receive nothing;
/// returns its report.
fn attack(mode: &str) -> Value {
    let internal = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    internal.set_nonblocking(true).unwrap();
    let internal_url = format!("http://{}", internal.local_addr().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile_oauth.py");
    let out = Command::new("python3")
        .arg(fixture)
        .args([mode, &internal_url])
        .arg(dir.path())
        .arg(&report)
        .env("WASMGATE_BIN", env!("CARGO_BIN_EXE_wasmgate"))
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{mode}: {}", String::from_utf8_lossy(&out.stderr));
    let seen: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(
        internal.accept().map(|_| ()).unwrap_err().kind(),
        ErrorKind::WouldBlock,
        "{mode}: the internal listener was reached: {seen:#}"
    );
    seen
}

#[test]
fn a_challenge_naming_an_internal_url_gets_no_request_sent_there() {
    let seen = attack("hint");
    let tools = seen["tools"].as_str().unwrap();
    assert!(tools.contains("another origin than its own") && tools.contains("refused unfetched"), "{tools}");
}

#[test]
fn an_authorization_server_at_an_internal_address_is_not_reached_unless_granted() {
    let seen = attack("issuer");
    let tools = seen["tools"].as_str().unwrap();
    assert!(tools.contains("grant its host in the provider's network_hosts"), "{tools}");
}

#[test]
fn a_token_answer_of_256_mib_is_refused_after_a_bounded_read() {
    let seen = attack("token");
    assert!(seen["authorize_url"].as_str().is_some_and(|u| u.contains("/authorize?")), "{seen:#}");
    let stderr = seen["login_stderr"].as_str().unwrap();
    assert_ne!(seen["login_status"], 0, "{stderr}");
    assert!(stderr.contains("token endpoint: the answer is larger than 65536 bytes"), "{stderr}");
    // The login read a bounded part of the answer and hung up: the server could not
    // send it whole (it counts the 1 MiB chunks it wrote).
    assert!(seen["token_bytes_sent"].as_u64().unwrap() < 16 << 20, "{seen:#}");
    let peak = seen["peak_rss_kib"].as_u64().unwrap();
    assert!(peak < 100 * 1024, "the login's peak resident set was {peak} KiB");
}
