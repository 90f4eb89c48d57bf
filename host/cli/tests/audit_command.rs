//! `wasmgate audit verify`: an intact log verifies; a tampered record is named.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output};

use wasmgate_audit::{AuditLog, Entry, Event, Options};

fn verify(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wasmgate")).arg("audit").arg("verify").args(args).output().unwrap()
}

fn write_log(path: &std::path::Path) {
    let log = AuditLog::open(path, Options::default()).unwrap();
    for n in 0..3 {
        let event =
            Event::Requested { verdict: "allow".into(), reason: "ok".into(), arguments: serde_json::json!({"n": n}) };
        log.append(Entry::call(format!("c{n}"), "calendar", "calendar_query", event)).unwrap();
    }
    log.close().unwrap();
}

#[test]
fn an_intact_log_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    write_log(&path);
    let out = verify(&[path.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout} {}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("3 records, chain intact"), "{stdout}");
}

#[test]
fn a_tampered_record_is_named_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    write_log(&path);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replacen("\"n\":1", "\"n\":7", 1)).unwrap();
    let out = verify(&[path.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("the chain is broken at line 2"), "{stderr}");
}

#[test]
fn a_torn_tail_fails_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    write_log(&path);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{\"seq\":4,\"ti");
    std::fs::write(&path, text).unwrap();
    assert!(!verify(&[path.to_str().unwrap()]).status.success());
    let out = verify(&["--allow-incomplete", path.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("incomplete"));
}
