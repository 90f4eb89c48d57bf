//! `wasmgate audit verify` and `audit anchor`: an intact log verifies; a tampered record is named;
//! a log cut short behind an anchor, or verified without its key, fails.
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

fn wasmgate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wasmgate")).args(args).output().unwrap()
}

#[test]
fn an_anchor_printed_now_finds_the_log_cut_short_later() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    write_log(&path);
    let file = path.to_str().unwrap();
    let out = wasmgate(&["audit", "anchor", file]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let anchor = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert!(anchor.starts_with("wasmgate-audit-anchor:3:"), "{anchor}");
    let out = verify(&["--anchor", &anchor, file]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("the anchored record is there unchanged"));

    let text = std::fs::read_to_string(&path).unwrap();
    let kept: String = text.lines().take(2).map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, kept).unwrap();
    assert!(verify(&[file]).status.success(), "the chain alone cannot tell");
    let out = verify(&["--anchor", &anchor, file]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("the log ends at seq 2, before the anchored record (seq 3)"), "{stderr}");
    let out = verify(&["--anchor", "not-an-anchor", file]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("as `wasmgate audit anchor` prints"));
}

#[test]
fn a_keyed_log_verifies_with_its_key_file_only() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let key_path = dir.path().join("audit.key");
    std::fs::write(&key_path, [42u8; 32]).unwrap();
    std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let key = wasmgate_audit::ChainKey::load(&key_path).unwrap();
    let log = AuditLog::open(&path, Options { key: Some(key), ..Options::default() }).unwrap();
    log.append(Entry::call("c", "calendar", "calendar_query", Event::Started)).unwrap();
    log.close().unwrap();
    let (file, key_file) = (path.to_str().unwrap(), key_path.to_str().unwrap());
    assert!(verify(&["--key", key_file, file]).status.success());
    let out = verify(&[file]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("verified without its key"), "{out:?}");
    std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = verify(&["--key", key_file, file]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("chmod 600"), "{out:?}");
}
