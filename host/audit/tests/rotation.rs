//! Rotation by size: the log goes on in a new file, the set is one chain, and
//! verification, continuing and anchors read the set.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use wasmgate_audit::{
    AuditError, AuditLog, Durability, Entry, Event, Options, Problem, VerifyOptions, holds, verify, verify_options,
};

fn open(path: &Path, durability: Durability, rotate_bytes: u64) -> Result<AuditLog, AuditError> {
    AuditLog::open(path, Options { durability, rotate_bytes: Some(rotate_bytes), ..Options::default() })
}

fn write(log: &AuditLog, n: usize) -> Vec<u64> {
    (0..n).map(|i| log.append(Entry::call(format!("c{i}"), "calendar", "list", Event::Started)).unwrap()).collect()
}

/// The files of the log at `path`, oldest first, with the `seq` of their first record.
fn files(path: &Path) -> Vec<(PathBuf, u64)> {
    let dir = path.parent().unwrap();
    let mut found: Vec<(PathBuf, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().starts_with(&*path.to_string_lossy()))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let first = text.lines().next().map(|l| serde_json::from_str::<Value>(l).unwrap()["seq"].as_u64().unwrap());
            (p, first.unwrap_or(u64::MAX))
        })
        .collect();
    found.sort_by_key(|(_, seq)| *seq);
    found
}

#[test]
fn a_log_over_its_size_goes_on_in_a_new_file_and_the_set_verifies_as_one_chain() {
    for durability in [Durability::EveryCall, Durability::Batched { max_delay_ms: 1 }, Durability::Off] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = open(&path, durability, 2_000).unwrap();
        let seqs = write(&log, 60);
        log.close().unwrap();
        assert_eq!(seqs, (1..=60).collect::<Vec<_>>(), "{durability:?}");
        let files = files(&path);
        // Rotation comes between batches: under `batched`, the 60 may be one.
        let least = if matches!(durability, Durability::Batched { .. }) { 2 } else { 4 };
        assert!(files.len() >= least, "{durability:?}: {files:?}");
        for (file, first) in &files[..files.len() - 1] {
            assert_eq!(file.to_string_lossy(), format!("{}.{first}", path.display()), "{durability:?}");
            let size = std::fs::metadata(file).unwrap().len();
            // At most one batch past the size; under `batched`, a batch may be large.
            let bound = if matches!(durability, Durability::Batched { .. }) { u64::MAX } else { 2_600 };
            assert!((2_000..bound).contains(&size), "{durability:?}: a rotated file holds {size} bytes");
        }
        assert_eq!(files.last().unwrap().0, path);
        let summary = verify(&path).unwrap();
        assert_eq!((summary.records, summary.last_seq), (60, 60), "{durability:?}");

        // Continued after a restart: the chain goes on from the newest file.
        let log = open(&path, durability, 2_000).unwrap();
        assert_eq!(write(&log, 1), [61], "{durability:?}");
        log.close().unwrap();
        assert_eq!(verify(&path).unwrap().records, 61, "{durability:?}");
    }
}

#[test]
fn a_log_whose_current_file_is_empty_still_opens_only_under_the_key_it_was_written_with() {
    let key = |byte: u8| Some(wasmgate_audit::ChainKey::new(vec![byte; 32]).unwrap());
    let open_keyed =
        |path: &Path, key| AuditLog::open(path, Options { key, rotate_bytes: Some(2_000), ..Options::default() });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = open_keyed(&path, key(7)).unwrap();
    write(&log, 60);
    log.close().unwrap();
    // As a rotation leaves it, the newest records in a rotated file and the current one
    // empty (its own records dropped here, so that it has none).
    assert!(files(&path).len() > 2);
    std::fs::write(&path, b"").unwrap();
    for (other, what) in [(key(8), "another key"), (None, "no key")] {
        let refused = open_keyed(&path, other).map(drop).unwrap_err();
        assert!(matches!(refused, AuditError::Chain { .. }), "{what}: {refused}");
    }
    let log = open_keyed(&path, key(7)).unwrap();
    write(&log, 1);
    log.close().unwrap();
}

#[test]
fn a_missing_or_altered_file_of_the_set_is_named_by_verify() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = open(&path, Durability::EveryCall, 1_500).unwrap();
    write(&log, 40);
    log.close().unwrap();
    let files = files(&path);
    let (second, third) = (&files[1].0, &files[2]);

    // The last record of a rotated file altered: the next file does not chain to it.
    let original = std::fs::read_to_string(second).unwrap();
    let cut = original.trim_end().rfind('\n').unwrap() + 1;
    let altered = format!("{}{}", &original[..cut], original[cut..].replace("\"call\":\"c", "\"call\":\"C"));
    assert_ne!(altered, original);
    std::fs::write(second, altered).unwrap();
    let error = verify(&path).unwrap_err();
    assert_eq!(error.file.as_deref(), Some(third.0.as_path()), "{error}");
    assert_eq!((error.line, error.problem.clone()), (1, Problem::Unlinked), "{error}");
    assert!(error.to_string().contains("does not chain to the last record of the file rotated before it"));

    // A file of the set removed: the sequence has a gap where it was.
    std::fs::remove_file(second).unwrap();
    let error = verify(&path).unwrap_err();
    assert_eq!(error.file.as_deref(), Some(third.0.as_path()), "{error}");
    assert!(matches!(error.problem, Problem::Sequence { .. }), "{error}");
    assert!(error.to_string().starts_with(&format!("{}, line 1", third.0.display())), "{error}");
}

#[test]
fn a_log_is_continued_from_its_rotated_files_when_its_own_file_is_gone() {
    // A stop between the rename and the new file: only rotated files are left.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = open(&path, Durability::EveryCall, 1_000_000).unwrap();
    write(&log, 5);
    log.close().unwrap();
    std::fs::rename(&path, dir.path().join("audit.jsonl.1")).unwrap();
    assert_eq!(verify(&path).unwrap().records, 5, "the rotated files alone verify");
    let log = open(&path, Durability::EveryCall, 1_000_000).unwrap();
    assert_eq!(write(&log, 2), [6, 7]);
    log.close().unwrap();
    assert_eq!(verify(&path).unwrap().records, 7);

    // A file that does not go on from the rotated one is not continued.
    std::fs::write(&path, std::fs::read_to_string(dir.path().join("audit.jsonl.1")).unwrap()).unwrap();
    let error = open(&path, Durability::EveryCall, 1_000_000).unwrap_err();
    assert!(matches!(error, AuditError::Chain { .. }), "{error}");
    assert!(error.to_string().contains("does not chain to the last record of"), "{error}");
}

#[test]
fn an_anchor_is_found_in_whichever_file_holds_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = open(&path, Durability::EveryCall, 1_500).unwrap();
    write(&log, 3);
    let early = log.durable_head();
    write(&log, 30);
    let late = log.durable_head();
    log.close().unwrap();
    assert!(files(&path).len() > 2);
    for anchor in [&early, &late] {
        assert!(holds(&path, anchor).unwrap(), "{anchor:?}");
        let options = VerifyOptions { anchor: Some(anchor.clone()), ..VerifyOptions::default() };
        verify_options(&path, &options).unwrap();
    }
    let mut forged = early.clone();
    forged.hash = late.hash.clone();
    assert!(!holds(&path, &forged).unwrap());
    let mut beyond = late.clone();
    beyond.seq += 1;
    assert!(!holds(&path, &beyond).unwrap());
}
