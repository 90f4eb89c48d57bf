//! Group commit, pinned without timing luck: the writer is held while 64 threads append, so all 64
//! records are queued before it drains, and they must go out in one write and one fsync.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::{AuditLog, Entry, Event, Options, verify};
use std::sync::Arc;

#[test]
fn sixty_four_concurrent_appenders_share_fewer_than_point_two_fsyncs_per_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = Arc::new(AuditLog::open(&path, Options::default()).unwrap());
    log.hold_writer(true);
    let threads: Vec<_> = (0..64)
        .map(|i| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || log.append(Entry::call(format!("c{i}"), "p", "t", Event::Started)).unwrap())
        })
        .collect();
    log.wait_queued(64);
    assert_eq!(log.fsyncs(), 0, "nothing is synced while the writer is held");
    log.hold_writer(false);
    let mut seqs: Vec<u64> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    seqs.sort();
    assert_eq!(seqs, (1..=64).collect::<Vec<_>>());
    let records = 64.0;
    assert!((log.fsyncs() as f64) < 0.2 * records, "{} fsyncs for 64 records", log.fsyncs());
    assert_eq!(log.fsyncs(), 1);
    assert_eq!(log.batches(), 1);
    drop(log);
    assert_eq!(verify(&path).unwrap().records, 64);
}

#[test]
fn under_contention_every_batch_is_written_and_synced_once() {
    // Without the hold, how appends interleave with the writer is up to the scheduler, so only
    // the invariants are pinned: one fsync per batch, and every record chained in order.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.jsonl");
    let log = Arc::new(AuditLog::open(&path, Options::default()).unwrap());
    let threads: Vec<_> = (0..64)
        .map(|_| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for _ in 0..20 {
                    log.append(Entry::log(Event::Started)).unwrap();
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert!(log.fsyncs() >= 1 && log.fsyncs() <= 64 * 20);
    assert_eq!(log.fsyncs(), log.batches(), "every-call durability syncs every batch it writes");
    drop(log);
    assert_eq!(verify(&path).unwrap().records, 64 * 20);
}

#[test]
fn outcome_records_cost_no_fsync_of_their_own_and_ride_with_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lazy.jsonl");
    let log = AuditLog::open(&path, Options::default()).unwrap();
    log.hold_writer(true);
    log.record_later([Entry::call("c1", "p", "t", Event::Finished { is_error: false, flags: vec![] })]).unwrap();
    let start = log.submit([Entry::call("c2", "p", "t", Event::Started)]).unwrap();
    log.wait_queued(2);
    log.hold_writer(false);
    start.wait().unwrap();
    assert_eq!(log.fsyncs(), 1, "the outcome went out with the start's fsync");

    // Alone, an outcome is written at once and synced within the lazy bound.
    log.record_later([Entry::call("c2", "p", "t", Event::Finished { is_error: false, flags: vec![] })]).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while log.fsyncs() < 2 {
        assert!(std::time::Instant::now() < deadline, "a lone outcome record was never synced");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(log.fsyncs(), 2);
    log.record_later([Entry::log(Event::Warning { message: "last".into() })]).unwrap();
    log.close().unwrap();
    assert_eq!(verify(&path).unwrap().records, 4, "close syncs what is left");
}

#[test]
fn the_writer_gathers_only_after_a_batch_of_several_appenders_and_only_when_every_call() {
    use crate::Durability;
    use crate::writer::{COMMIT_DELAY, Gather, gather_for};
    let gather = |enough| Some(Gather { delay: COMMIT_DELAY, enough });
    assert_eq!(gather_for(Durability::EveryCall, 0), None, "an idle log writes at once");
    assert_eq!(gather_for(Durability::EveryCall, 1), None, "a lone caller never waits");
    assert_eq!(gather_for(Durability::EveryCall, 2), gather(2), "two callers in step wait for each other only");
    assert_eq!(gather_for(Durability::EveryCall, 3), gather(3));
    assert_eq!(gather_for(Durability::EveryCall, 8), gather(10), "batches grow under load");
    assert_eq!(gather_for(Durability::EveryCall, 64), gather(32), "and are bounded");
    assert_eq!(gather_for(Durability::Off, 64), None);
    assert_eq!(gather_for(Durability::Batched { max_delay_ms: 5 }, 64), None);
}

#[test]
fn after_a_concurrent_batch_a_lone_append_still_completes_and_chains() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gather.jsonl");
    let log = Arc::new(AuditLog::open(&path, Options::default()).unwrap());
    log.hold_writer(true);
    let first = log.submit([Entry::log(Event::Started)]).unwrap();
    let second = log.submit([Entry::log(Event::Started)]).unwrap();
    log.wait_queued(2);
    log.hold_writer(false);
    assert_eq!((first.wait().unwrap(), second.wait().unwrap()), (1, 2));
    // The writer now gathers before its next write; one append alone (queued while it is
    // held, so that it goes to the writer) ends the wait when the delay runs out, not never.
    log.hold_writer(true);
    let third = log.submit([Entry::log(Event::Started)]).unwrap();
    log.wait_queued(1);
    log.hold_writer(false);
    assert_eq!(third.wait().unwrap(), 3);
    assert_eq!(log.fsyncs(), 2);
    drop(log);
    assert_eq!(verify(&path).unwrap().records, 3);
}

#[test]
fn a_lone_waited_for_submission_is_written_and_synced_by_its_appender() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("alone.jsonl");
    let log = AuditLog::open(&path, Options::default()).unwrap();
    let first = log.submit([Entry::call("c1", "p", "t", Event::Started)]).unwrap();
    // Durable before `submit` returned: no writer thread was waited for.
    assert_eq!((log.fsyncs(), log.batches(), log.durable_head().seq), (1, 1, 1));
    assert_eq!(first.wait().unwrap(), 1);

    // An outcome goes to the writer (nobody waits for it)...
    log.hold_writer(true);
    log.record_later([Entry::call("c1", "p", "t", Event::Finished { is_error: false, flags: vec![] })]).unwrap();
    // ...and a submission behind queued records goes with them.
    let second = log.submit([Entry::call("c2", "p", "t", Event::Started)]).unwrap();
    log.wait_queued(2);
    assert_eq!(log.fsyncs(), 1, "queued behind the held writer, not written by its appender");
    log.hold_writer(false);
    assert_eq!(second.wait().unwrap(), 3);
    assert_eq!(log.fsyncs(), 2);

    // Not under `batched`: its appends return before any write.
    let batched = dir.path().join("batched.jsonl");
    let options = Options { durability: crate::Durability::Batched { max_delay_ms: 60_000 }, ..Options::default() };
    let later = AuditLog::open(&batched, options).unwrap();
    later.hold_writer(true);
    let pending = later.submit([Entry::log(Event::Started)]).unwrap();
    assert_eq!(pending.wait().unwrap(), 1);
    assert_eq!(later.batches(), 0, "a batched append is the writer's");
    later.hold_writer(false);
    later.close().unwrap();
    log.close().unwrap();
    assert_eq!(verify(&path).unwrap().records, 3);
    assert_eq!(verify(&batched).unwrap().records, 1);
}

#[test]
fn a_gathering_ends_when_enough_are_queued_when_arrivals_stop_or_at_the_delay() {
    use crate::writer::{COMMIT_DELAY, Gather, Gathering};
    use std::time::{Duration, Instant};
    let ms = Duration::from_millis;
    let t0 = Instant::now();
    let gather = Gather { delay: COMMIT_DELAY, enough: 10 };

    // Arrivals every millisecond (callers paced by an upstream): the gathering goes on
    // until the delay is over, then writes.
    let mut paced = Gathering::new(gather, 2, None, t0);
    for n in 1..=7u32 {
        paced.saw(2 + n as usize, t0 + ms(n.into()));
        assert!(paced.wait(t0 + ms(n.into())).is_some(), "still arriving after {n} ms");
    }
    assert_eq!(paced.pace(), Some(ms(1)));
    assert_eq!(paced.wait(t0 + ms(7)), Some(ms(1)), "the delay, not the quiet spell, ends it");
    assert_eq!(paced.wait(t0 + COMMIT_DELAY), None);

    // Enough queued: write at once.
    let mut full = Gathering::new(gather, 2, None, t0);
    full.saw(10, t0 + ms(1));
    assert_eq!(full.wait(t0 + ms(1)), None);

    // Every caller in step is queued and no more come: after eight mean gaps of quiet
    // (at least two milliseconds), write, long before the delay.
    let mut burst = Gathering::new(gather, 1, None, t0);
    burst.saw(8, t0 + ms(1));
    assert_eq!(burst.pace(), Some(Duration::from_micros(1000) / 7));
    assert!(burst.wait(t0 + ms(2)).is_some(), "1 ms of quiet is not yet enough");
    assert_eq!(burst.wait(t0 + ms(3)), None);

    // A wake-up with nothing new is not an arrival.
    let mut spurious = Gathering::new(gather, 3, Some(Duration::from_micros(100)), t0);
    spurious.saw(3, t0 + Duration::from_micros(500));
    assert_eq!(
        spurious.wait(t0 + Duration::from_micros(500)),
        Some(Duration::from_micros(1500)),
        "quiet is judged from the last real arrival"
    );

    // Nothing arrived yet in this gathering: the earlier pace judges quiet...
    let lockstep = Gathering::new(gather, 8, Some(Duration::from_micros(50)), t0);
    assert_eq!(lockstep.wait(t0), Some(ms(2)), "eight gaps, but at least 2 ms");
    assert_eq!(lockstep.wait(t0 + ms(2)), None);
    // ...and with no earlier pace, only the delay does.
    let first = Gathering::new(gather, 2, None, t0);
    assert_eq!(first.wait(t0), Some(COMMIT_DELAY));
    assert_eq!(first.wait(t0 + COMMIT_DELAY), None);
}
