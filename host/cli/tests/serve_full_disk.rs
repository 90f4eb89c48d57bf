//! `wasmgate serve` while its audit log cannot be written: calls are refused, `/readyz`
//! says why, and a stop says which records the log does not hold and exits with a
//! failure. The full disk is the child's file size limit (`RLIMIT_FSIZE`), set to the
//! log's size when it starts: a write past it fails as a write to a full disk does.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(unsafe_code)] // setrlimit and ignoring SIGXFSZ, in the child before it runs

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Stdio};

use common::{command, setup, stderr, wasmgate};
use serde_json::{Value, json};

/// `wasmgate serve ARGS` on a reviewed configuration, its audit log unable to grow.
fn serve_on_a_full_disk(args: &[&str]) -> (tempfile::TempDir, Child) {
    let dir = setup();
    let review = wasmgate(dir.path(), &["review", "--yes"]);
    assert!(review.status.success(), "{}", stderr(&review));
    let size = std::fs::metadata(dir.path().join("state/audit.jsonl")).map_or(0, |m| m.len());
    let mut serve = command(dir.path());
    // The default log level, whatever the environment says: what an operator sees.
    serve.env("WASMGATE_LOG", "warn").arg("serve").args(args);
    serve.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // SAFETY: between fork and exec, only async-signal-safe calls: setting a signal's
    // disposition to "ignore" (inherited across exec; a write past the limit would
    // otherwise end the process) and the file size limit.
    unsafe {
        serve.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            // The soft limit only: an unprivileged user cannot raise the hard one.
            if libc::getrlimit(libc::RLIMIT_FSIZE, &mut limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            limit.rlim_cur = size.min(limit.rlim_max);
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    (dir, serve.spawn().unwrap())
}

#[test]
fn a_serve_stopped_while_the_disk_is_full_says_what_its_audit_log_does_not_hold() {
    let (_dir, mut child) = serve_on_a_full_disk(&[]);
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut ask = |message: Value| {
        writeln!(stdin, "{message}").unwrap();
        if message.get("id").is_none() {
            return Value::Null;
        }
        serde_json::from_str::<Value>(&lines.next().unwrap().unwrap()).unwrap()
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    assert!(ask(init).get("result").is_some());
    ask(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo__echo", "arguments": {"text": "hi"}}});
    let answer = ask(call).to_string();
    // The agent is told no more than that the gateway refused it.
    assert!(answer.contains("refused by the gateway") && !answer.contains("\"hi\""), "{answer}");
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let said = stderr(&out);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("closed while it could not be written") && said.contains("free disk space"), "{said}");
}

#[tokio::test]
async fn a_gateway_whose_audit_log_cannot_be_written_is_not_ready_and_says_why_once() {
    let (_dir, child) = serve_on_a_full_disk(&["--http", "127.0.0.1:0"]);
    let mut child = wasmgate_testing::Killed(child);
    let (url, lines) = common::listening(&mut child.0);
    let (log, said) = std::sync::mpsc::channel();
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(|line| drop(log.send(line))));
    let ready = url.replace("/mcp", "/readyz");
    let answer = reqwest::get(&ready).await.unwrap();
    assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());
    let client = wasmgate_testing::http_client(&url, &[], None).await;
    let arguments = json!({"text": "hi"}).as_object().cloned().unwrap();
    let refused = client.call_tool("echo__echo", arguments, wasmgate_core::CancellationToken::new()).await;
    assert!(refused.is_ok_and(|r| r.is_error), "refused: the log cannot be written");
    for _ in 0..3 {
        assert_eq!(reqwest::get(&ready).await.unwrap().status(), 503);
    }
    // Why goes to the gateway's log, not to whoever asks: at the default level, once, when
    // it changed, not at every probe.
    drop(child);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut heard = Vec::new();
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        match said.recv_timeout(left) {
            Ok(line) => heard.push(line),
            Err(_) => break,
        }
    }
    let why: Vec<&String> = heard.iter().filter(|line| line.contains("not ready")).collect();
    assert_eq!(why.len(), 1, "{heard:#?}");
    assert!(why[0].contains("the audit log cannot be written now"), "{}", why[0]);
}
