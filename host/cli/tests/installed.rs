//! The binary `cargo install` gives, run from somewhere else: `--version` names the
//! commit, and `doctor`, `init --from`, `review` and `serve` work from a directory that
//! is not the clone, with no file of the clone on hand (the default components are
//! embedded).
//!
//! It needs the installed binary, so it is ignored by a plain `cargo test`;
//! `scripts/test.sh` installs it into a temporary root and runs it:
//!
//! ```sh
//! cargo install --locked --debug --path host/cli --root DIR --target-dir target
//! WASMGATE_INSTALLED_ROOT=DIR cargo test -p wasmgate-cli --test installed -- --ignored
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use serde_json::{Map, json};
use wasmgate_client::{ClientConfig, McpClient, StdioConfig, StdioTransport};
use wasmgate_core::CancellationToken;

/// The installed binary, from `WASMGATE_INSTALLED_ROOT`.
fn installed() -> PathBuf {
    let root = std::env::var_os("WASMGATE_INSTALLED_ROOT").expect(
        "WASMGATE_INSTALLED_ROOT is not set: install first (cargo install --locked --debug --path host/cli --root DIR \
         --target-dir target) and pass the root, as scripts/test.sh does",
    );
    let binary = Path::new(&root).join("bin/wasmgate");
    assert!(binary.is_file(), "{} is not there: did `cargo install` succeed?", binary.display());
    binary
}

/// The installed `wasmgate ARGS`, run in `home` with nothing of the clone in its
/// environment but `PATH`.
fn run(binary: &Path, home: &Path, args: &[&str]) -> Output {
    Command::new(binary)
        .args(args)
        .current_dir(home)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CACHE_HOME", home.join("cache"))
        .output()
        .unwrap()
}

#[tokio::test]
#[ignore = "needs the installed binary: scripts/test.sh installs it and runs this"]
async fn the_installed_binary_names_its_commit_and_serves_from_anywhere() {
    let binary = installed();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();

    // The version names the commit of the checkout it was built from.
    let version = common::text(&run(&binary, home, &["--version"]));
    let head = Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).output().unwrap();
    let head = String::from_utf8(head.stdout).unwrap();
    assert!(!head.trim().is_empty(), "the test runs in a checkout");
    assert_eq!(version.trim(), format!("wasmgate {} (commit {})", env!("CARGO_PKG_VERSION"), head.trim()));

    let doctor = run(&binary, home, &["doctor"]);
    assert!(doctor.status.success(), "{}", common::text(&doctor));
    assert!(common::text(&doctor).contains("The system:"), "{}", common::text(&doctor));

    // A client's configuration with one stdio server, copied out of the clone.
    let server = home.join("stdio_server.py");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("../client/tests/fixtures/stdio_server.py"), &server)
        .unwrap();
    let (python, dirs) = common::python();
    let claude = json!({"mcpServers": {"echo": {"command": python, "args": [server]}}});
    std::fs::write(home.join("claude.json"), claude.to_string()).unwrap();
    let init = run(&binary, home, &["init", "--from", "claude.json", "--dir", "gateway"]);
    assert!(init.status.success(), "{}", common::text(&init));
    // The interpreter's own directories, as the gateway's error advises when they are
    // outside what a confined server may read (a pyenv under a home directory).
    let config = home.join("gateway/wasmgate.toml");
    let read_exec: Vec<String> = dirs.iter().map(|d| format!("{:?}", d.display().to_string())).collect();
    let mut written = std::fs::read_to_string(&config).unwrap();
    let last_table = written.lines().rfind(|l| l.starts_with('['));
    assert_eq!(last_table, Some("[providers.echo]"), "the server's table ends the file: {written}");
    written.push_str(&format!("read_exec = [{}]\n", read_exec.join(", ")));
    std::fs::write(&config, written).unwrap();
    let config = config.display().to_string();
    let review = run(&binary, home, &["review", "--config", &config, "--yes"]);
    assert!(
        review.status.success() && common::text(&review).contains("approved: echo__echo"),
        "{}",
        common::text(&review)
    );

    // `serve`, started as a client would start it, answers a call (asked, approved).
    let serve = StdioConfig::new("wasmgate", &binary, home)
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .env("HOME", home)
        .env("XDG_CACHE_HOME", home.join("cache"))
        .confinement(None);
    let mut capabilities = Map::new();
    capabilities.insert("elicitation".into(), json!({}));
    let client_config =
        ClientConfig { capabilities, input_handler: Some(Arc::new(common::Person)), ..ClientConfig::default() };
    let client = McpClient::connect("wasmgate", StdioTransport::spawn(&serve).unwrap(), client_config).await.unwrap();
    let mut arguments = Map::new();
    arguments.insert("text".into(), json!("hello from an installed gateway"));
    let echoed = client.call_tool("echo__echo", arguments, CancellationToken::new()).await.unwrap();
    let said: String = echoed.content.iter().filter_map(|b| b.text()).collect();
    assert!(!echoed.is_error && said.contains("hello from an installed gateway"), "{said}");
    assert!(said.contains("<untrusted-data"), "rendered and framed by the embedded formatter: {said}");
    client.close().await;
}
