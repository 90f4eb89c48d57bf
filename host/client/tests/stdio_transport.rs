//! The stdio transport against a real process (tests/fixtures/stdio_server.py, standard
//! library Python): what only a real child shows, namely its environment and working
//! directory, a line over the cap, an exit mid-call, and a shutdown that has to kill a
//! server (and its helper) that ignore both stdin closing and `SIGTERM`. The server runs
//! confined (the default), in a private working directory of its own. Two tests use a
//! shell instead: pipelined writes, and a server that closed its stdin.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod confined;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use confined::{fixtures, python};

use serde_json::{Map, Value, json};
use wasmgate_client::{ClientConfig, ClientError, CloseReason, McpClient, StdioConfig, StdioTransport, TransportError};
use wasmgate_core::CancellationToken;
use wasmgate_protocol::ContentBlock;
use wasmgate_testing::is_running;

/// The scripted server, confined, with its working directory (removed when dropped).
fn server(extra: &[&str]) -> (StdioConfig, tempfile::TempDir) {
    let workdir = tempfile::tempdir().unwrap();
    let mut config = StdioConfig::new("scripted", python(), workdir.path())
        .arg(fixtures().join("stdio_server.py"))
        .env("GREETING", "hi")
        .confinement(Some(confined::for_python(&python(), &fixtures())));
    for arg in extra {
        config = config.arg(*arg);
    }
    (config, workdir)
}

async fn connect(config: &StdioConfig) -> McpClient {
    let transport = StdioTransport::spawn(config).expect("spawn");
    McpClient::connect("scripted", transport, ClientConfig::default()).await.expect("connect")
}

async fn call(client: &McpClient, tool: &str, args: Value) -> Result<String, ClientError> {
    let args: Map<String, Value> = args.as_object().cloned().unwrap_or_default();
    let result = client.call_tool(tool, args, CancellationToken::new()).await?;
    Ok(result.content.first().and_then(ContentBlock::text).unwrap_or_default().to_owned())
}

#[tokio::test]
async fn the_server_gets_only_the_configured_environment_and_working_directory() {
    let (config, workdir) = server(&[]);
    let client = connect(&config).await;
    let env: BTreeMap<String, String> = serde_json::from_str(&call(&client, "env", json!({})).await.unwrap()).unwrap();
    assert_eq!(env.get("GREETING").map(String::as_str), Some("hi"));
    for (key, _) in std::env::vars() {
        // Python itself sets LC_CTYPE when the locale is C (PEP 538); nothing else may appear.
        assert!(key == "LC_CTYPE" || key == "GREETING" || !env.contains_key(&key), "{key} leaked into the server");
    }
    assert!(!env.contains_key("PATH") && !env.contains_key("HOME"), "{env:?}");
    let cwd = call(&client, "cwd", json!({})).await.unwrap();
    assert_eq!(Path::new(&cwd).canonicalize().unwrap(), workdir.path().canonicalize().unwrap());
    client.close().await;
}

#[tokio::test]
async fn a_line_longer_than_the_cap_fails_its_call_and_the_connection_survives() {
    let (mut config, _workdir) = server(&[]);
    config.limits.max_line_bytes = 64 * 1024;
    let client = connect(&config).await;
    match call(&client, "long", json!({"bytes": 1_000_000})).await {
        Err(ClientError::MalformedMessage { detail }) => assert!(detail.contains("over the size limit"), "{detail}"),
        other => panic!("expected MalformedMessage, got {other:?}"),
    }
    assert_eq!(call(&client, "echo", json!({"text": "still here"})).await.unwrap(), "still here");
    client.close().await;
}

/// A bare transport to `sh -c script` (unconfined: the shell is the test's own).
fn shell(script: &str) -> (StdioTransport, tempfile::TempDir) {
    let workdir = tempfile::tempdir().unwrap();
    let config = StdioConfig::new("sh", "/bin/sh", workdir.path()).arg("-c").arg(script).confinement(None);
    (StdioTransport::spawn(&config).expect("spawn"), workdir)
}

#[tokio::test]
async fn pipelined_lines_reach_the_server_whole_and_none_is_lost() {
    use wasmgate_client::{Inbound, Transport};
    // `cat` sends every line straight back; 500 sends at once share writes.
    let (mut transport, _workdir) = shell("exec cat");
    let mut inbound = transport.take_inbound().unwrap();
    let transport = std::sync::Arc::new(transport);
    let pad = "x".repeat(300);
    let message = move |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "ping", "pad": pad});
    let sends: Vec<_> = (0..500)
        .map(|id| {
            let (transport, line) = (std::sync::Arc::clone(&transport), message(id));
            tokio::spawn(async move { transport.send(line).await })
        })
        .collect();
    for sent in sends {
        sent.await.unwrap().unwrap();
    }
    let mut ids = Vec::new();
    for _ in 0..500 {
        let Some(Inbound::Frame(line)) = inbound.recv().await else { panic!("a line is missing") };
        let echoed: Value = serde_json::from_slice(&line).unwrap();
        let id = echoed["id"].as_u64().unwrap();
        assert_eq!(echoed, message(id));
        ids.push(id);
    }
    ids.sort_unstable();
    assert_eq!(ids, (0..500).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_server_that_closed_its_stdin_fails_every_send_with_the_write_error() {
    use wasmgate_client::Transport;
    // The shell closes its stdin and stays: the first write meets a broken pipe.
    // Sends succeed until the shell has closed it, however long that takes it.
    let (transport, _workdir) = shell("exec 0<&-; sleep 30");
    let send = || transport.send(json!({"jsonrpc": "2.0", "method": "notifications/x"}));
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let first = loop {
        match send().await {
            Err(error) => break error,
            Ok(()) => assert!(std::time::Instant::now() < deadline, "the writes never failed"),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    for error in [first, send().await.unwrap_err()] {
        let TransportError::Closed(CloseReason::Io(message)) = &error else { panic!("{error:?}") };
        assert!(message.starts_with("writing to the server:") && message.contains("Broken pipe"), "{message}");
    }
}

#[tokio::test]
async fn server_exit_mid_call_fails_the_call_with_the_exit_status() {
    let (config, _workdir) = server(&[]);
    let client = connect(&config).await;
    let error = call(&client, "exit", json!({})).await.unwrap_err();
    assert_eq!(error, ClientError::TransportClosed { reason: CloseReason::Exited { code: Some(3), signal: None } });
    let after = call(&client, "echo", json!({"text": "x"})).await.unwrap_err();
    assert!(matches!(after, ClientError::TransportClosed { .. }), "{after:?}");
}

#[tokio::test]
async fn shutdown_kills_a_server_that_ignores_stdin_close_and_sigterm_and_its_child() {
    let (mut config, _workdir) = server(&["--stubborn"]);
    config.limits.shutdown_grace = Duration::from_millis(100);
    config.limits.term_grace = Duration::from_millis(100);
    let client = connect(&config).await;
    let helper: u32 = call(&client, "spawn_child", json!({})).await.unwrap().parse().unwrap();
    assert!(is_running(helper), "the helper runs");
    let reason = client.close().await;
    assert_eq!(reason, CloseReason::Exited { code: None, signal: Some(9) }, "the server needed SIGKILL");
    // The helper got the group's SIGKILL too; wait (bounded) for the kernel to tear it down.
    for _ in 0..200 {
        if !is_running(helper) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("helper process {helper} survived the shutdown");
}

#[tokio::test]
async fn dropping_the_client_kills_the_server_and_its_helpers() {
    let (config, _workdir) = server(&["--stubborn"]);
    let client = connect(&config).await;
    let helper: u32 = call(&client, "spawn_child", json!({})).await.unwrap().parse().unwrap();
    drop(client);
    for _ in 0..200 {
        if !is_running(helper) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("helper process {helper} survived the client");
}

#[tokio::test]
async fn a_command_that_does_not_exist_is_a_configuration_error() {
    let config = StdioConfig::new("missing", "wasmgate-no-such-command", fixtures());
    let error = StdioTransport::spawn(&config).unwrap_err();
    assert!(matches!(&error, TransportError::Config(m) if m.contains("wasmgate-no-such-command")), "{error}");
}

/// Waits up to 30 s for `path` to exist.
async fn appears(path: &Path) -> bool {
    for _ in 0..3000 {
        if path.exists() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test]
async fn the_program_that_runs_is_the_open_file_handed_over_not_what_is_at_its_path_by_then() {
    use std::os::unix::fs::PermissionsExt as _;
    // A native program, opened (as the gateway opens what it hashes), then swapped at its
    // path for a script by whoever can write there.
    let code = tempfile::tempdir().unwrap();
    let program = code.path().join("server");
    std::fs::copy("/usr/bin/touch", &program).unwrap();
    let checked = std::sync::Arc::new(std::fs::File::open(&program).unwrap());
    std::fs::remove_file(&program).unwrap();
    std::fs::write(&program, "#!/bin/sh\ntouch swapped\n").unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();

    let confinements = [None, Some(wasmgate_confine::Confinement::default().read_exec(code.path()))];
    for confinement in confinements {
        let confined = confinement.is_some();
        let workdir = tempfile::tempdir().unwrap();
        let config = StdioConfig::new("native", &program, workdir.path())
            .arg("checked-ran")
            .program_file(std::sync::Arc::clone(&checked))
            .confinement(confinement);
        let transport = StdioTransport::spawn(&config).expect("spawn");
        assert!(appears(&workdir.path().join("checked-ran")).await, "confined {confined}: the checked program ran");
        drop(transport);
        assert!(!workdir.path().join("swapped").exists(), "confined {confined}: the swapped-in script did not");
    }
    // By its path alone, whatever is there now runs.
    let workdir = tempfile::tempdir().unwrap();
    let transport =
        StdioTransport::spawn(&StdioConfig::new("native", &program, workdir.path()).confinement(None)).expect("spawn");
    assert!(appears(&workdir.path().join("swapped")).await, "the path runs the script");
    drop(transport);
}
