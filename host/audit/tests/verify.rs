//! Verification names the first bad record: tampering, removal, reordering, a torn tail.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use wasmgate_audit::{AuditLog, Entry, Event, Options, Problem, Tail, verify, verify_with};

/// A log of `n` records; returns its directory guard, path and lines.
fn log_of(n: u64) -> (tempfile::TempDir, PathBuf, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(&path, Options::default()).unwrap();
    for i in 0..n {
        log.append(Entry::call(format!("c{i}"), "calendar", "calendar_query", Event::Started)).unwrap();
    }
    log.close().unwrap();
    let lines = std::fs::read_to_string(&path).unwrap().lines().map(str::to_owned).collect();
    (dir, path, lines)
}

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
}

#[test]
fn an_intact_log_verifies() {
    let (_d, path, _) = log_of(5);
    let s = verify(&path).unwrap();
    assert_eq!((s.records, s.last_seq, s.incomplete_last_line), (5, 5, None));
}

#[test]
fn an_empty_log_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.jsonl");
    std::fs::write(&path, "").unwrap();
    assert_eq!(verify(&path).unwrap().records, 0);
}

#[test]
fn a_field_edited_mid_file_is_found_at_its_line() {
    let (_d, path, mut lines) = log_of(5);
    lines[2] = lines[2].replace("\"c2\"", "\"cX\"");
    write_lines(&path, &lines);
    let err = verify(&path).unwrap_err();
    assert_eq!((err.line, err.seq), (3, Some(3)));
    assert_eq!(err.problem, Problem::Altered { next_line: 4 });
    assert!(err.to_string().starts_with("line 3 (seq 3): record was altered"), "{err}");
}

#[test]
fn a_deleted_record_is_found() {
    let (_d, path, mut lines) = log_of(5);
    lines.remove(1);
    write_lines(&path, &lines);
    let err = verify(&path).unwrap_err();
    assert_eq!((err.line, err.seq, err.problem), (2, Some(3), Problem::Sequence { expected: 2 }));
}

#[test]
fn reordered_records_are_found() {
    let (_d, path, mut lines) = log_of(5);
    lines.swap(2, 3);
    write_lines(&path, &lines);
    let err = verify(&path).unwrap_err();
    assert_eq!((err.line, err.problem), (3, Problem::Sequence { expected: 3 }));
}

#[test]
fn a_renumbered_deletion_still_breaks_the_chain() {
    let (_d, path, mut lines) = log_of(5);
    lines.remove(1);
    lines[1] = lines[1].replacen("\"seq\":3", "\"seq\":2", 1);
    write_lines(&path, &lines);
    let err = verify(&path).unwrap_err();
    assert_eq!((err.line, err.problem), (1, Problem::Altered { next_line: 2 }));
}

#[test]
fn a_cut_off_start_is_found() {
    let (_d, path, lines) = log_of(3);
    write_lines(&path, &lines[1..]);
    assert_eq!(verify(&path).unwrap_err().problem, Problem::Sequence { expected: 1 });
    let renumbered: Vec<String> = vec![lines[1].replacen("\"seq\":2", "\"seq\":1", 1)];
    write_lines(&path, &renumbered);
    assert_eq!(verify(&path).unwrap_err().problem, Problem::NotGenesis);
}

#[test]
fn a_line_that_is_not_a_record_is_found() {
    let (_d, path, mut lines) = log_of(3);
    lines[1] = "{\"seq\":2".into();
    write_lines(&path, &lines);
    let err = verify(&path).unwrap_err();
    assert!(matches!(err.problem, Problem::NotJson(_)) && err.line == 2);
    lines[1] = "[1]".into();
    write_lines(&path, &lines);
    assert!(matches!(verify(&path).unwrap_err().problem, Problem::NotJson(_)));
    let (_d2, path2, mut lines2) = log_of(2);
    lines2[1] = lines2[1].replace("\"event\":\"started\"", "\"event\":1");
    write_lines(&path2, &lines2);
    assert_eq!(verify(&path2).unwrap_err().problem, Problem::MissingField("event"));
}

#[test]
fn a_torn_last_record_is_reported_distinctly_or_allowed() {
    let (_d, path, lines) = log_of(3);
    let mut text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    text.push_str(&lines[0][..20]);
    std::fs::write(&path, text).unwrap();
    let err = verify(&path).unwrap_err();
    assert_eq!((err.line, err.problem.clone()), (4, Problem::IncompleteLastRecord));
    assert!(err.to_string().contains("incomplete last record"));
    let s = verify_with(&path, Tail::AllowIncomplete).unwrap();
    assert_eq!((s.records, s.last_seq, s.incomplete_last_line), (3, 3, Some(4)));
}

#[test]
fn a_missing_file_is_an_io_problem() {
    assert!(matches!(verify(Path::new("/nonexistent/audit.jsonl")).unwrap_err().problem, Problem::Io(_)));
}

#[test]
fn an_overlong_line_is_refused_without_reading_it_all() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.jsonl");
    std::fs::write(&path, vec![b'x'; (wasmgate_audit::MAX_LINE_BYTES + 10) as usize]).unwrap();
    assert_eq!(verify(&path).unwrap_err().problem, Problem::TooLong);
}

fn key(byte: u8) -> wasmgate_audit::ChainKey {
    wasmgate_audit::ChainKey::new(vec![byte; 32]).unwrap()
}

fn options(
    key: Option<wasmgate_audit::ChainKey>,
    anchor: Option<wasmgate_audit::Anchor>,
) -> wasmgate_audit::VerifyOptions {
    wasmgate_audit::VerifyOptions { key, anchor, ..wasmgate_audit::VerifyOptions::default() }
}

#[test]
fn a_keyed_log_verifies_only_with_its_key_and_cannot_be_rebuilt_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let keyed = Options { key: Some(key(1)), ..Options::default() };
    let log = AuditLog::open(&path, keyed.clone()).unwrap();
    for i in 0..4 {
        log.append(Entry::call(format!("c{i}"), "calendar", "calendar_query", Event::Started)).unwrap();
    }
    log.close().unwrap();
    let summary = wasmgate_audit::verify_options(&path, &options(Some(key(1)), None)).unwrap();
    assert_eq!(summary.records, 4);
    for wrong in [None, Some(key(2))] {
        let error = wasmgate_audit::verify_options(&path, &options(wrong, None)).unwrap_err();
        assert_eq!((error.line, error.problem), (1, Problem::NotGenesis));
    }
    // Continued with the same key, the chain goes on; a writer without it is refused.
    let log = AuditLog::open(&path, keyed).unwrap();
    log.append(Entry::call("c4", "calendar", "calendar_query", Event::Started)).unwrap();
    log.close().unwrap();
    assert_eq!(wasmgate_audit::verify_options(&path, &options(Some(key(1)), None)).unwrap().records, 5);
    let refused = AuditLog::open(&path, Options::default()).unwrap_err();
    assert!(refused.to_string().contains("its chain is keyed"), "{refused}");

    // Someone who can write the file changes a record and rebuilds the chain as the unkeyed
    // log would be built: the keyed check finds the change.
    let lines: Vec<String> = std::fs::read_to_string(&path).unwrap().lines().map(str::to_owned).collect();
    let mut forged = Vec::new();
    let mut prev = wasmgate_audit::genesis_hash();
    for line in &lines {
        let mut record: serde_json::Value = serde_json::from_str(line).unwrap();
        record["prev"] = serde_json::Value::String(prev.clone());
        if record["seq"] == 3 {
            record["tool"] = "calendar_delete".into();
        }
        let text = record.to_string();
        prev = wasmgate_audit::line_hash(text.as_bytes());
        forged.push(text);
    }
    write_lines(&path, &forged);
    assert!(verify(&path).is_ok(), "the forgery passes as an unkeyed log");
    let error = wasmgate_audit::verify_options(&path, &options(Some(key(1)), None)).unwrap_err();
    assert_eq!(error.problem, Problem::NotGenesis);
}

#[test]
fn an_anchor_finds_a_log_cut_short_or_rewritten_behind_it() {
    let (_d, path, lines) = log_of(6);
    let anchor = verify(&path).unwrap().anchor;
    assert_eq!(anchor.seq, 6);
    assert!(wasmgate_audit::verify_options(&path, &options(None, Some(anchor.clone()))).is_ok());

    // Cut short: the last two records removed. The chain alone still verifies.
    write_lines(&path, &lines[..4]);
    assert!(verify(&path).is_ok());
    let error = wasmgate_audit::verify_options(&path, &options(None, Some(anchor.clone()))).unwrap_err();
    assert_eq!(error.problem, Problem::CutShort { anchored: 6, last: 4 });
    assert!(error.to_string().contains("records were removed from its end"), "{error}");

    // Rewritten: a new log of the same length in its place.
    let (_d2, other, _) = log_of(6);
    std::fs::copy(&other, &path).unwrap();
    let error = wasmgate_audit::verify_options(&path, &options(None, Some(anchor.clone()))).unwrap_err();
    assert_eq!((error.seq, error.problem), (Some(6), Problem::AnchorMismatch));

    // An anchor of an earlier record holds while the log grows after it.
    write_lines(&path, &lines);
    let early = wasmgate_audit::Anchor { seq: 2, hash: wasmgate_audit::line_hash(lines[1].as_bytes()) };
    assert!(wasmgate_audit::verify_options(&path, &options(None, Some(early))).is_ok());
}

#[test]
fn holds_finds_the_anchored_record_and_nothing_else_in_its_place() {
    let (_d, path, mut lines) = log_of(5);
    let anchor = verify(&path).unwrap().anchor;
    assert!(wasmgate_audit::holds(&path, &anchor).unwrap());
    // A later record does not change it; an anchor of an earlier record holds too.
    let third = wasmgate_audit::Anchor { seq: 3, hash: wasmgate_audit::line_hash(lines[2].as_bytes()) };
    assert!(wasmgate_audit::holds(&path, &third).unwrap());
    // The anchored record rewritten, the log cut before it, or torn there: not held.
    lines[4] = lines[4].replace("c4", "cX");
    write_lines(&path, &lines);
    assert!(!wasmgate_audit::holds(&path, &anchor).unwrap(), "rewritten");
    write_lines(&path, &lines[..4]);
    assert!(!wasmgate_audit::holds(&path, &anchor).unwrap(), "cut short");
    std::fs::write(&path, format!("{}\n{}", lines[..4].join("\n"), &lines[4][..10])).unwrap();
    assert!(!wasmgate_audit::holds(&path, &anchor).unwrap(), "torn");
    // The empty log's anchor.
    let empty = wasmgate_audit::Anchor { seq: 0, hash: wasmgate_audit::genesis_hash() };
    assert!(wasmgate_audit::holds(&path, &empty).unwrap());
}
