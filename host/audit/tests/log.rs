//! The audit log as the call pipeline uses it: record format, write-ahead, durability settings,
//! failing closed, and continuing after a restart.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, UNIX_EPOCH};
use wasmgate_audit::{
    AuditError, AuditLog, Durability, Entry, Event, FixedClock, Options, Redaction, genesis_hash, line_hash, verify,
};

fn clock() -> Arc<FixedClock> {
    Arc::new(FixedClock(UNIX_EPOCH + Duration::from_millis(1_777_627_800_125)))
}

fn open(path: &Path, durability: Durability) -> AuditLog {
    AuditLog::open_with_clock(path, Options { durability, ..Options::default() }, clock()).unwrap()
}

fn requested(call: &str, args: Value) -> Entry {
    let event = Event::Requested {
        verdict: "allow".into(),
        reason: "the policy allows `calendar_query`".into(),
        arguments: args,
    };
    Entry::call(call, "calendar", "calendar_query", event)
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap().lines().map(str::to_owned).collect()
}

#[test]
fn records_are_json_lines_with_seq_time_prev_and_the_event() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = open(&path, Durability::EveryCall);
    log.append(requested("c1", json!({"from": "2026-05-01", "api_key": "sk-123"}))).unwrap();
    log.append(Entry::call("c1", "calendar", "calendar_query", Event::Started)).unwrap();
    log.close().unwrap();
    let l = lines(&path);
    assert_eq!(
        l[0],
        format!(
            "{{\"seq\":1,\"time\":\"2026-05-01T09:30:00.125Z\",\"prev\":\"{}\",\"call\":\"c1\",\"provider\":\"calendar\",\
             \"tool\":\"calendar_query\",\"event\":\"requested\",\"verdict\":\"allow\",\"reason\":\"the policy allows \
             `calendar_query`\",\"arguments\":{{\"from\":\"2026-05-01\",\"api_key\":\"[redacted]\"}},\
             \"arguments_sha256\":\"{}\"}}",
            genesis_hash(),
            wasmgate_audit::line_hash(br#"{"from":"2026-05-01","api_key":"[redacted]"}"#)
        )
    );
    let second: Value = serde_json::from_str(&l[1]).unwrap();
    assert_eq!(second["seq"], 2);
    assert_eq!(second["prev"], line_hash(l[0].as_bytes()));
    assert_eq!(second["event"], "started");
}

#[test]
fn a_new_log_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    open(&path, Durability::EveryCall).close().unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
}

/// The one record a log with `redaction` writes for a call with `args`.
fn redacted_record(redaction: Redaction, args: Value) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(&path, Options { redaction, ..Options::default() }).unwrap();
    log.append(requested("c", args)).unwrap();
    drop(log);
    lines(&path).swap_remove(0)
}

#[test]
fn redaction_rules_come_from_the_options() {
    let line =
        redacted_record(Redaction::none().with_pointer("/attendees"), json!({"attendees": ["a@x"], "token": "kept"}));
    let rec: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(rec["arguments"], json!({"attendees": "[redacted]", "token": "kept"}));
}

#[test]
fn oversized_arguments_are_redacted_before_they_are_shrunk() {
    // The secret's name is cut past its 128th character when the arguments are shrunk:
    // redacted afterwards, the cut name would no longer match the rule.
    let name = format!("{}_password", "x".repeat(200));
    let line =
        redacted_record(Redaction::none().with_key("password"), json!({ name: "hunter2", "pad": "y".repeat(100_000) }));
    assert!(!line.contains("hunter2"), "{}", &line[..300]);
    assert!(line.contains("[redacted]"));
}

#[test]
fn the_arguments_hash_covers_what_shrinking_leaves_out() {
    // Past its 128th field an object's fields are left out of the record.
    let with_bcc = |bcc: &str| {
        let mut args = serde_json::Map::new();
        for i in 0..200 {
            args.insert(format!("f{i:03}"), Value::String("y".repeat(400)));
        }
        args.insert("bcc".into(), Value::String(bcc.into()));
        Value::Object(args)
    };
    let args = with_bcc("mallory@example.invalid");
    let line = redacted_record(Redaction::default(), args.clone());
    let rec: Value = serde_json::from_str(&line).unwrap();
    assert!(!line.contains("mallory"), "the field is shrunk out of the record");
    let hash = rec["arguments_sha256"].as_str().unwrap();
    let sha256 = |v: &Value| wasmgate_audit::line_hash(v.to_string().as_bytes());
    assert_eq!(hash, sha256(&args), "whoever holds the arguments can check them");
    assert_ne!(hash, sha256(&with_bcc("someone@example.invalid")));
    // Of the redacted arguments: the hash does not reveal a redacted secret either.
    let line = redacted_record(Redaction::default(), json!({"password": "hunter2"}));
    let rec: Value = serde_json::from_str(&line).unwrap();
    let redacted = json!({"password": "[redacted]"}).to_string();
    assert_eq!(rec["arguments_sha256"].as_str().unwrap(), wasmgate_audit::line_hash(redacted.as_bytes()));
}

#[test]
fn a_call_start_costs_exactly_one_fsync_on_its_critical_path() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(&dir.path().join("audit.jsonl"), Durability::EveryCall);
    let before = log.fsyncs();
    let seq = log
        .submit([requested("c1", json!({})), Entry::call("c1", "calendar", "calendar_query", Event::Started)])
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(seq, 2);
    assert_eq!(log.fsyncs() - before, 1, "requested + started share one fsync, and it is done when wait returns");
}

#[test]
fn pending_is_also_a_future() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(&dir.path().join("audit.jsonl"), Durability::EveryCall);
    let pending = log.submit([Entry::log(Event::Started)]).unwrap();
    assert_eq!(block_on(pending).unwrap(), 1);
    assert_eq!(log.fsyncs(), 1);
}

#[test]
fn batched_durability_returns_at_once_and_syncs_within_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(&dir.path().join("audit.jsonl"), Durability::Batched { max_delay_ms: 20 });
    for i in 0..10 {
        assert_eq!(log.append(Entry::log(Event::Started)).unwrap(), i + 1);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while log.fsyncs() == 0 {
        assert!(Instant::now() < deadline, "no fsync within the bound");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(log.fsyncs() <= log.batches());
}

#[test]
fn closing_a_batched_log_syncs_what_is_pending() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = open(&path, Durability::Batched { max_delay_ms: 60_000 });
    log.append(Entry::log(Event::Started)).unwrap();
    let started = Instant::now();
    log.close().unwrap();
    assert!(started.elapsed() < Duration::from_secs(30), "close must not wait out the delay");
    assert_eq!(verify(&path).unwrap().records, 1);
}

#[test]
fn a_shared_log_is_closed_once_by_any_holder_and_refuses_appends_after() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = Arc::new(open(&path, Durability::Batched { max_delay_ms: 60_000 }));
    let other = Arc::clone(&log);
    log.append(Entry::log(Event::Started)).unwrap();
    log.close().unwrap();
    assert_eq!(verify(&path).unwrap().records, 1, "what was pending is written");
    assert!(matches!(other.append(Entry::log(Event::Started)), Err(AuditError::Closed { .. })));
    other.close().unwrap();
    // Its file is let go of: the log can be opened again while the closed one is held.
    let again = open(&path, Durability::EveryCall);
    again.append(Entry::log(Event::Started)).unwrap();
    drop((log, other));
    assert_eq!(verify(&path).unwrap().records, 2);
}

#[test]
fn durability_off_never_fsyncs_but_writes_before_returning() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = open(&path, Durability::Off);
    log.append(Entry::log(Event::Started)).unwrap();
    assert_eq!(lines(&path).len(), 1, "written to the OS before append returned");
    log.close().unwrap();
    assert_eq!(verify(&path).unwrap().records, 1);
}

#[test]
fn reopening_continues_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = open(&path, Durability::EveryCall);
    log.append(Entry::log(Event::Started)).unwrap();
    log.append(Entry::log(Event::Started)).unwrap();
    drop(log);
    let log = open(&path, Durability::EveryCall);
    assert_eq!(log.append(Entry::log(Event::Started)).unwrap(), 3);
    drop(log);
    let summary = verify(&path).unwrap();
    assert_eq!((summary.records, summary.last_seq), (3, 3));
}

#[test]
fn a_torn_last_record_is_cut_off_on_open_and_a_warning_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = open(&path, Durability::EveryCall);
    log.append(Entry::log(Event::Started)).unwrap();
    drop(log);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(b"{\"seq\":2,\"time\":\"20");
    std::fs::write(&path, bytes).unwrap();
    assert!(verify(&path).is_err());
    let log = open(&path, Durability::EveryCall);
    assert_eq!(log.append(Entry::log(Event::Started)).unwrap(), 3);
    drop(log);
    let l = lines(&path);
    let warning: Value = serde_json::from_str(&l[1]).unwrap();
    assert_eq!(warning["event"], "warning");
    assert!(warning["message"].as_str().unwrap().contains("incomplete last record (19 bytes)"));
    assert_eq!(verify(&path).unwrap().records, 3);
}

#[test]
fn a_log_whose_last_record_is_garbage_refuses_to_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    std::fs::write(&path, "not json\n").unwrap();
    let err = AuditLog::open(&path, Options::default()).unwrap_err();
    assert!(matches!(err, AuditError::Corrupt { .. }));
    assert!(err.to_string().contains("wasmgate audit verify"), "{err}");
}

#[test]
fn a_second_writer_on_the_same_log_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let _first = AuditLog::open(&path, Options::default()).unwrap();
    let err = AuditLog::open(&path, Options::default()).unwrap_err();
    assert!(matches!(err, AuditError::InUse { .. }), "{err}");
}

#[test]
fn a_path_whose_parent_is_a_file_refuses_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let err = AuditLog::open(&file.join("audit.jsonl"), Options::default()).unwrap_err();
    assert!(matches!(err, AuditError::Open { .. }));
    let shown = err.to_string();
    assert!(shown.contains("calls are refused") && shown.contains("writable"), "{shown}");
}

#[test]
fn a_missing_directory_or_a_directory_path_refuses() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        AuditLog::open(&dir.path().join("no/such/dir/a.jsonl"), Options::default()),
        Err(AuditError::Open { .. })
    ));
    assert!(matches!(AuditLog::open(dir.path(), Options::default()), Err(AuditError::Open { .. })));
}

#[test]
fn an_unwritable_directory_refuses() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    // Root ignores permission bits; procfs refuses new files even to root, so it stands in there.
    let probe = std::fs::File::create(ro.join("probe")).is_ok();
    let path = if probe { Path::new("/proc/wasmgate-audit-test.jsonl").to_owned() } else { ro.join("audit.jsonl") };
    let err = AuditLog::open(&path, Options::default()).unwrap_err();
    assert!(matches!(err, AuditError::Open { .. }), "{err}");
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_full_disk_refuses_the_append_and_every_later_one() {
    // `off` writes on the appender's thread, the others on the writer's: both refuse.
    for durability in [Durability::EveryCall, Durability::Off] {
        let log = AuditLog::open(Path::new("/dev/full"), Options { durability, ..Options::default() }).unwrap();
        let err = log.append(Entry::log(Event::Started)).unwrap_err();
        assert!(matches!(err, AuditError::Write { .. }), "{durability:?}: {err}");
        let shown = err.to_string();
        assert!(shown.contains("No space left on device") && shown.contains("free disk space"), "{shown}");
        assert!(log.is_poisoned());
        let again = log.append(Entry::log(Event::Started)).unwrap_err();
        assert!(matches!(again, AuditError::Poisoned { .. }), "{durability:?}: {again}");
        assert!(again.to_string().contains("No space left on device"));
        assert!(log.record_later([Entry::log(Event::Started)]).is_err(), "{durability:?}");
        assert!(matches!(log.close(), Err(AuditError::Poisoned { .. })));
    }
}

#[test]
fn a_full_disk_under_batched_durability_is_refused_on_a_later_append() {
    let log = AuditLog::open(
        Path::new("/dev/full"),
        Options { durability: Durability::Batched { max_delay_ms: 1 }, ..Options::default() },
    )
    .unwrap();
    let _ = log.append(Entry::log(Event::Started)); // returns before the write
    let deadline = Instant::now() + Duration::from_secs(10);
    while !log.is_poisoned() {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(matches!(log.append(Entry::log(Event::Started)), Err(AuditError::Poisoned { .. })));
}

#[test]
fn every_event_kind_is_written_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = open(&path, Durability::EveryCall);
    let c = |e| Entry::call("c", "p", "t", e);
    let events = vec![
        requested("c", json!({})),
        c(Event::Approval { approved: true, approver: "terminal".into() }),
        c(Event::Started),
        c(Event::Finished { is_error: false, flags: vec!["ignore-previous".into()] }),
        c(Event::Failed { error: "transport closed".into() }),
        c(Event::Cancelled { reason: "caller cancelled".into() }),
        c(Event::Withheld { reason: "formatter trapped".into(), flags: vec![] }),
        Entry::log(Event::Warning { message: "best-effort confinement for calendar".into() }),
        Entry::log(Event::Review {
            subject: "definition".into(),
            hash: "ab".repeat(32),
            approved: true,
            reviewer: "local user alice (uid 1000)".into(),
        }),
    ];
    log.submit(events).unwrap().wait().unwrap();
    drop(log);
    let kinds: Vec<String> = lines(&path)
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["event"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        kinds,
        ["requested", "approval", "started", "finished", "failed", "cancelled", "withheld", "warning", "review"]
    );
    assert_eq!(verify(&path).unwrap().records, 9);
}

#[test]
fn an_empty_submission_is_a_no_op() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(&dir.path().join("a.jsonl"), Durability::EveryCall);
    assert_eq!(log.submit(Vec::new()).unwrap().wait().unwrap(), 0);
    assert_eq!(log.fsyncs(), 0);
}

/// A minimal executor: the log's future needs no runtime, only a waker.
fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

#[test]
fn a_replicas_log_names_it_in_every_record_and_still_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let options = Options { replica: Some("r2".into()), ..Options::default() };
    let log = AuditLog::open_with_clock(&path, options, clock()).unwrap();
    log.append(requested("c1", json!({}))).unwrap();
    log.append(Entry::call("c1", "calendar", "calendar_query", Event::Started)).unwrap();
    log.close().unwrap();
    for line in lines(&path) {
        let record: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(record["replica"], "r2", "{line}");
        assert!(line.contains(r#""prev":"#) && line.find("\"replica\"") > line.find("\"prev\""), "{line}");
    }
    assert_eq!(verify(&path).unwrap().records, 2);
}

#[test]
fn the_durable_head_is_the_last_record_synced_and_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    for durability in [Durability::EveryCall, Durability::Off] {
        let _ = std::fs::remove_file(&path);
        let log = open(&path, durability);
        assert_eq!(log.durable_head().seq, 0, "an empty log");
        assert_eq!(log.durable_head().hash, genesis_hash());
        log.append(requested("c1", json!({}))).unwrap();
        log.append(Entry::call("c1", "calendar", "calendar_query", Event::Started)).unwrap();
        let head = log.durable_head();
        log.close().unwrap();
        let summary = verify(&path).unwrap();
        assert_eq!(head, summary.anchor, "{durability:?}: the head is what `audit anchor` prints");
        let again = open(&path, durability);
        assert_eq!(again.durable_head(), summary.anchor, "{durability:?}: read back when the log is continued");
    }
    // Under `batched`, an append returns before its fsync: the head moves only with it.
    let _ = std::fs::remove_file(&path);
    let log = open(&path, Durability::Batched { max_delay_ms: 60_000 });
    log.append(requested("c1", json!({}))).unwrap();
    assert_eq!(log.durable_head().seq, 0, "written, not yet synced");
    log.close().unwrap();
}
