//! A disk that fills under a lone caller, whose records its own thread writes and syncs
//! (`every-call`, the writer idle): the call is refused as under any other, the file is cut
//! back to whole records, and the writer takes over the stall and ends it once space
//! returns. `RLIMIT_FSIZE` stands for the full disk, as in `full_disk.rs`; it is
//! process-wide, so this binary holds one test.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(unsafe_code)] // setrlimit and ignoring SIGXFSZ, in this test's own process

mod common;

use common::{limit_file_size, records};
use wasmgate_audit::{AuditError, AuditLog, Entry, Event, Options, verify};

fn started(id: &str) -> Entry {
    Entry::call(id, "calendar", "list", Event::Started)
}

#[test]
fn a_lone_callers_write_on_a_full_disk_is_refused_and_the_writer_ends_the_stall() {
    // SAFETY: setting a signal's disposition to "ignore" installs no handler.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(&path, Options::default()).unwrap();
    assert_eq!(log.append(started("c1")).unwrap(), 1);
    assert_eq!(log.fsyncs(), 1, "written and synced by the appender");
    let size = std::fs::metadata(&path).unwrap().len();

    limit_file_size(Some(size + 40));
    let refused = log.submit([started("c2")]).unwrap();
    // Its own thread tried the write: the answer is there before anyone waits.
    assert_eq!(log.batches(), 2);
    let error = refused.wait().unwrap_err();
    assert!(matches!(error, AuditError::Stalled { .. }), "{error}");
    assert!(error.to_string().contains("File too large"), "{error}");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), size, "cut back to whole records");
    assert!(!log.is_poisoned());
    // Stalled, a later lone record goes to the writer, which refuses it as well.
    let error = log.append(started("c3")).unwrap_err();
    assert!(matches!(error, AuditError::Stalled { .. }), "{error}");

    limit_file_size(None);
    // With nobody waiting, the writer writes the stall's warning by itself.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::fs::metadata(&path).unwrap().len() == size {
        assert!(std::time::Instant::now() < deadline, "the stall's warning was never written");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(log.append(started("c4")).unwrap(), 3);
    assert_eq!(log.durable_head().seq, 3, "synced before it returned");
    log.close().unwrap();

    assert_eq!(verify(&path).unwrap().records, 3);
    let records = records(&path);
    let events: Vec<(&str, &str)> =
        records.iter().map(|r| (r["event"].as_str().unwrap(), r["call"].as_str().unwrap_or("-"))).collect();
    assert_eq!(events, [("started", "c1"), ("warning", "-"), ("started", "c4")]);
    let warning = records[1]["message"].as_str().unwrap();
    assert!(warning.contains("2 records of calls refused"), "{warning}");
}
