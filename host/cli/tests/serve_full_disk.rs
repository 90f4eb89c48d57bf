//! `wasmgate serve` stopped while its audit log cannot be written says which records the
//! log does not hold, and exits with a failure. The full disk is the child's file size
//! limit (`RLIMIT_FSIZE`), set to the log's size when it starts: a write past it fails as
//! a write to a full disk does.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(unsafe_code)] // setrlimit and ignoring SIGXFSZ, in the child before it runs

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt as _;
use std::process::Stdio;

use common::{command, setup, stderr, wasmgate};
use serde_json::{Value, json};

#[test]
fn a_serve_stopped_while_the_disk_is_full_says_what_its_audit_log_does_not_hold() {
    let dir = setup();
    let review = wasmgate(dir.path(), &["review", "--yes"]);
    assert!(review.status.success(), "{}", stderr(&review));
    let log = dir.path().join("state/audit.jsonl");
    let size = std::fs::metadata(&log).map_or(0, |m| m.len());
    let mut serve = command(dir.path());
    serve.arg("serve").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // SAFETY: between fork and exec, only async-signal-safe calls: setting a signal's
    // disposition to "ignore" (inherited across exec; a write past the limit would
    // otherwise end the process) and the file size limit.
    unsafe {
        serve.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit { rlim_cur: size, rlim_max: libc::RLIM_INFINITY };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = serve.spawn().unwrap();
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
    drop(ask);
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let said = stderr(&out);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("closed while it could not be written") && said.contains("free disk space"), "{said}");
}
