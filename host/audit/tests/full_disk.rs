//! A disk that fills: calls are refused with an error that says so, the log holds whole
//! records only, and it goes on by itself once a write succeeds again, with every record it
//! acknowledged and a `warning` saying what it does not hold.
//!
//! The disk is "filled" by this process's file size limit (`RLIMIT_FSIZE`): a write past it
//! fails as a write to a full disk does, part-way included, and the limit can be raised
//! again without root or a file system of the test's own. It is process-wide, so this
//! binary holds one test.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(unsafe_code)] // setrlimit and ignoring SIGXFSZ, in this test's own process

mod common;

use common::{limit_file_size, records};
use wasmgate_audit::{AuditError, AuditLog, Durability, Entry, Event, Options, verify};

fn call(id: &str, event: Event) -> Entry {
    Entry::call(id, "calendar", "list", event)
}

#[test]
fn a_full_disk_refuses_calls_and_the_log_goes_on_when_space_returns_with_nothing_acknowledged_lost() {
    // A write past the limit raises SIGXFSZ, which would end the process.
    // SAFETY: setting a signal's disposition to "ignore" installs no handler.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    for durability in [Durability::EveryCall, Durability::Off, Durability::Batched { max_delay_ms: 20 }] {
        let batched = matches!(durability, Durability::Batched { .. });
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&path, Options { durability, ..Options::default() }).unwrap();
        // What each acknowledged seq must hold.
        let mut acknowledged = vec![(log.append(call("c1", Event::Started)).unwrap(), "c1")];
        while log.durable_head().seq < 1 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let size = std::fs::metadata(&path).unwrap().len();

        // Room for part of a record only.
        limit_file_size(Some(size + 40));
        if durability == Durability::EveryCall {
            // Nobody waits for an outcome: it is kept, and written once the log goes on.
            log.record_later([call("c1", Event::Finished { is_error: false, flags: vec![] })]).unwrap();
        }
        if durability == Durability::Off {
            // `off` keeps nothing to write later: the outcome is lost, and counted as such.
            let lost = log.record_later([call("c1", Event::Finished { is_error: false, flags: vec![] })]);
            assert!(matches!(lost, Err(AuditError::Stalled { .. })), "{lost:?}");
        }
        for attempt in ["c2", "c3"] {
            if attempt == "c3" && batched {
                // c2's write has failed: from now on an append waits for its own write.
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
                while !log.is_stalled() {
                    assert!(std::time::Instant::now() < deadline, "c2's write never failed");
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
            }
            match log.append(call(attempt, Event::Started)) {
                // Under `batched` an append returns before its write: the record is kept,
                // unless writes were failing already.
                Ok(seq) if batched && attempt == "c2" => acknowledged.push((seq, attempt)),
                Ok(seq) => panic!("{durability:?}: {attempt} was acknowledged as {seq} on a full disk"),
                Err(error) => {
                    assert!(!batched || attempt == "c3", "{durability:?}: {error}");
                    assert!(matches!(error, AuditError::Stalled { .. }), "{durability:?}: {error}");
                    let text = error.to_string();
                    assert!(text.contains("File too large") && text.contains("free disk space"), "{text}");
                }
            }
        }
        // Stalled, the writer does not spin: it tries again once a second.
        let batches = log.batches();
        std::thread::sleep(std::time::Duration::from_millis(500));
        assert!(log.batches() <= batches + 2, "{durability:?}: {} writes in 500 ms", log.batches() - batches);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), size, "{durability:?}: cut back to whole records");
        assert!(!log.is_poisoned(), "{durability:?}");

        limit_file_size(None);
        if durability == Durability::EveryCall {
            // With nobody waiting, the writer tries again by itself.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while std::fs::metadata(&path).unwrap().len() == size {
                assert!(std::time::Instant::now() < deadline, "the kept records were never written");
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        acknowledged.push((log.append(call("c4", Event::Started)).unwrap(), "c4"));
        acknowledged.push((log.append(call("c5", Event::Started)).unwrap(), "c5"));
        log.close().unwrap();

        let summary = verify(&path).unwrap();
        let records = records(&path);
        assert_eq!(summary.records as usize, records.len());
        let calls: Vec<(&str, &str)> =
            records.iter().map(|r| (r["event"].as_str().unwrap(), r["call"].as_str().unwrap_or("-"))).collect();
        let expected: Vec<(&str, &str)> = match durability {
            Durability::EveryCall => {
                vec![("started", "c1"), ("finished", "c1"), ("warning", "-"), ("started", "c4"), ("started", "c5")]
            }
            Durability::Off => vec![("started", "c1"), ("warning", "-"), ("started", "c4"), ("started", "c5")],
            // c2's append had returned: it is kept, and the warning comes after it.
            _ => vec![("started", "c1"), ("started", "c2"), ("warning", "-"), ("started", "c4"), ("started", "c5")],
        };
        assert_eq!(calls, expected, "{durability:?}");
        let warning = records.iter().find(|r| r["event"] == "warning").unwrap()["message"].as_str().unwrap();
        let refused = if batched { "1 records of calls refused" } else { "2 records of calls refused" };
        assert!(warning.contains("File too large") && warning.contains(refused), "{warning}");
        let lost = durability == Durability::Off;
        assert_eq!(warning.contains("and 1 records nobody waited for"), lost, "{durability:?}: {warning}");
        for (seq, id) in acknowledged {
            let record = records.iter().find(|r| r["seq"] == seq).unwrap();
            assert_eq!(record["call"], id, "{durability:?}: seq {seq} is the record acknowledged as it");
        }
    }

    // Closed while the disk is still full: the records kept to be written later are not in
    // the log, and closing says so rather than end it as a normal stop would.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(&path, Options::default()).unwrap();
    log.append(call("c1", Event::Started)).unwrap();
    limit_file_size(Some(std::fs::metadata(&path).unwrap().len() + 40));
    log.record_later([call("c1", Event::Finished { is_error: false, flags: vec![] })]).unwrap();
    assert!(matches!(log.append(call("c2", Event::Started)), Err(AuditError::Stalled { .. })));
    let closed = log.close().unwrap_err();
    limit_file_size(None);
    assert!(matches!(closed, AuditError::ClosedStalled { unwritten: 2, .. }), "{closed}");
    assert!(closed.to_string().contains("free disk space before stopping"), "{closed}");
}
