//! A writer killed with SIGKILL mid-append leaves a log that verifies up to its last complete
//! record, and reopening it continues the chain.
//!
//! The test re-runs its own binary as the child (selected by an environment variable), so no
//! helper binary is needed. In "loop" rounds the child appends large records until it is killed,
//! wherever that lands. A write of one record is rarely interrupted, so "tear" rounds make the
//! torn record certain: the child leaves half a record line at the end of the file, the state a
//! kill inside `write` leaves, and is killed while it waits.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use wasmgate_audit::{AuditLog, Durability, Entry, Event, Options, Tail, verify, verify_with};
use wasmgate_testing::Killed;

const CHILD_ENV: &str = "WASMGATE_AUDIT_CRASH_CHILD";
const TEAR_ENV: &str = "WASMGATE_AUDIT_CRASH_TEAR";

fn record(i: u64) -> Entry {
    let arguments = serde_json::json!({ "blob": "x".repeat(60_000) });
    Entry::call(format!("c{i}"), "p", "t", Event::Requested { verdict: "allow".into(), reason: "r".into(), arguments })
}

fn marker(path: &Path) -> PathBuf {
    path.with_extension("torn")
}

/// The child process of the test below: appends until killed. Ignored in a normal run,
/// where it would have nothing to do.
#[test]
#[ignore = "the child process of sigkill_mid_write_leaves_a_log_that_verifies_up_to_its_last_complete_record"]
fn crash_child() {
    let path = std::env::var_os(CHILD_ENV).expect("run by sigkill_mid_write_..., which names the log");
    let path = PathBuf::from(path);
    // Off: no fsync, so the child spends its time in write() and a kill is likely to land there.
    let log = AuditLog::open(&path, Options { durability: Durability::Off, ..Options::default() }).unwrap();
    if std::env::var_os(TEAR_ENV).is_some() {
        for i in 0..40 {
            log.append(record(i)).unwrap();
        }
        let line = serde_json::to_string(&record(99)).unwrap();
        let mut raw = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        raw.write_all(&line.as_bytes()[..line.len() / 2]).unwrap();
        std::fs::write(marker(&path), "").unwrap();
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    for i in 0.. {
        log.append(record(i)).unwrap();
    }
}

#[test]
fn sigkill_mid_write_leaves_a_log_that_verifies_up_to_its_last_complete_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    for (round, tear) in [false, true, false, true].into_iter().enumerate() {
        let _ = std::fs::remove_file(marker(&path));
        let mut command = Command::new(std::env::current_exe().unwrap());
        command.args(["crash_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"]).env(CHILD_ENV, &path);
        if tear {
            command.env(TEAR_ENV, "1");
        }
        let mut child = Killed(command.stdout(std::process::Stdio::null()).spawn().unwrap());
        let child = &mut child.0;
        let before = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let ready = || {
            if tear { marker(&path).exists() } else { std::fs::metadata(&path).unwrap().len() >= before + 4_000_000 }
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !path.exists() || !ready() {
            assert!(Instant::now() < deadline, "round {round}: the child wrote too little");
            assert!(child.try_wait().unwrap().is_none(), "round {round}: the child exited early");
            std::thread::sleep(Duration::from_millis(5));
        }
        child.kill().unwrap(); // SIGKILL on Unix
        child.wait().unwrap();

        let summary = verify_with(&path, Tail::AllowIncomplete).unwrap();
        assert!(summary.records >= 30, "round {round}: {summary:?}");
        if tear {
            assert!(summary.incomplete_last_line.is_some(), "round {round}: the torn record is reported");
        }
        if summary.incomplete_last_line.is_some() {
            let err = verify(&path).unwrap_err();
            assert!(err.to_string().contains("incomplete last record"), "{err}");
        }

        let log = AuditLog::open(&path, Options::default()).unwrap();
        let next = log.append(Entry::log(Event::Warning { message: format!("restart {round}") })).unwrap();
        drop(log);
        let after = verify(&path).unwrap();
        assert_eq!(after.last_seq, next);
        let repair_warning = u64::from(summary.incomplete_last_line.is_some());
        assert_eq!(next, summary.last_seq + 1 + repair_warning, "the chain continues after the last complete record");
    }
}
