//! The single writer thread and group commit.
//!
//! Appenders serialize their records, then, under one short lock, take the next `seq`, the time and
//! the previous hash, and push the finished lines onto a queue: so the queue is always in `seq`
//! order and the chain is computed once, by whoever appends. The writer thread takes everything
//! queued, writes it with one `write`, fsyncs once, and completes every waiter in the batch. While
//! it fsyncs, new records queue up and go out together in the next round; that is group commit,
//! and it is why the fsyncs per record fall as concurrency rises. Under `every-call` a submission
//! that finds nothing queued and the writer idle is written and synced by its own appender instead
//! ([`Pen`], [`commit`]): the same code, without two thread switches.
//!
//! A write that fails (a full disk) stalls the log: the file is cut back to its last whole
//! record, the waiters of the failed records get the error (their calls are refused), and
//! the records nobody waits for (outcomes, egress; under `batched`, all, since their
//! appends have returned) are kept and chained again after the last record written,
//! followed by a `warning` record that says when and why the log stopped and how many
//! records of refused calls it does not hold. The writer tries again every [`RETRY`], and
//! at once for each new record someone waits for; the first write that succeeds ends the
//! stall. An fsync failure, or a write that cannot be cut back, poisons
//! the log: every later append is refused until restart. (After a failed fsync Linux may
//! have dropped the dirty pages, so retrying could report success for records that are gone.)

use crate::chain::{Anchor, Chain, GENESIS, line_hash, record_line};
use crate::clock::{Clock, rfc3339};
use crate::durability::Durability;
use crate::error::AuditError;
use crate::event::{Entry, Event};
use crate::pending::Completion;
use crate::segment::{AppendFailure, Segment};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// One record on its way to disk.
#[derive(Debug)]
pub(crate) struct Job {
    pub line: Vec<u8>,
    pub seq: u64,
    /// Set on the last record of a submission; completing it completes the submission.
    pub done: Option<Arc<Completion>>,
    /// A record nobody waits for (a call's outcome): written at once, but synced with the
    /// next record someone waits for, or [`LAZY_SYNC`] after it was written, whichever
    /// comes first, so it costs no fsync of its own.
    pub lazy: bool,
    /// The `warning` record of a stall, written first when the log goes on.
    pub note: bool,
}

/// The longest a lazy record stays written but unsynced under `every-call` durability.
pub(crate) const LAZY_SYNC: Duration = Duration::from_millis(200);

/// While the log is stalled and nobody waits, how long the writer waits before it tries
/// to write the records it kept again.
pub(crate) const RETRY: Duration = Duration::from_secs(1);

/// The most records nobody waits for that a stall keeps; beyond them, records are
/// counted in the stall's `warning` record as lost.
pub(crate) const MAX_KEPT: usize = 10_000;

/// Under `every-call` durability, when the last batch carried submissions of several
/// appenders (calls are arriving concurrently), the writer gathers before its next
/// write and fsync, like PostgreSQL's `commit_delay` with `commit_siblings`: until as
/// many appenders as last time are queued, a quarter more once there are four or more,
/// until arrivals stop (see [`Gathering`]), or for at most this long. Without it,
/// arrivals paced by a slow upstream reach the log a few per fsync; with it, the
/// batches grow until the bound holds them. Two callers in step wait for each other
/// only, and a lone caller (one submission per batch) never waits.
pub(crate) const COMMIT_DELAY: Duration = Duration::from_millis(8);

/// The most waited-for submissions a gathering waits for.
const GATHER_MOST: usize = 32;

/// A gathering ends once no waited-for submission has come for this many times the
/// mean gap between the arrivals seen so far: the callers still to come are busy
/// elsewhere (every caller in step is already queued, say), so waiting longer would
/// only add latency. Generous, because arrivals paced by an upstream come in bursts
/// and stalls on a busy machine.
const QUIET_GAPS: u32 = 8;

/// The shortest quiet spell that ends a gathering, so a burst of arrivals a few
/// microseconds apart is not cut off by one late thread, nor steady arrivals by one
/// stall of the upstream or of the machine.
const MIN_QUIET: Duration = Duration::from_millis(2);

/// How the writer gathers before a write: for at most `delay`, until `enough`
/// waited-for submissions are queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gather {
    pub delay: Duration,
    pub enough: usize,
}

/// How to gather before writing, given how many waited-for submissions the previous
/// batch carried; `None`: write at once.
pub(crate) fn gather_for(durability: Durability, previous_waiters: usize) -> Option<Gather> {
    (durability == Durability::EveryCall && previous_waiters >= 2)
        .then(|| Gather { delay: COMMIT_DELAY, enough: (previous_waiters + previous_waiters / 4).min(GATHER_MOST) })
}

/// One gathering under way: when it began, how many waited-for submissions were
/// queued then and are queued now, and when the last one came.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Gathering {
    gather: Gather,
    started: Instant,
    /// Waited-for submissions queued when the gathering began.
    initial: usize,
    /// Waited-for submissions queued now.
    waiters: usize,
    last_arrival: Instant,
    /// The mean gap between arrivals in an earlier gathering, for judging quiet before
    /// this one has seen an arrival of its own.
    earlier_pace: Option<Duration>,
}

impl Gathering {
    pub fn new(gather: Gather, waiters: usize, earlier_pace: Option<Duration>, now: Instant) -> Self {
        Gathering { gather, started: now, initial: waiters, waiters, last_arrival: now, earlier_pace }
    }

    /// Notes that `waiters` are queued at `now`.
    pub fn saw(&mut self, waiters: usize, now: Instant) {
        if waiters > self.waiters {
            self.last_arrival = now;
        }
        self.waiters = waiters;
    }

    /// The mean gap between the arrivals of this gathering, if it has seen any.
    pub fn pace(&self) -> Option<Duration> {
        let arrivals = u32::try_from(self.waiters.saturating_sub(self.initial)).ok().filter(|n| *n > 0)?;
        Some(self.last_arrival.saturating_duration_since(self.started) / arrivals)
    }

    /// How much longer to wait at `now`; `None`: write now, because enough are queued,
    /// arrivals have stopped, or the delay is over.
    pub fn wait(&self, now: Instant) -> Option<Duration> {
        if self.waiters >= self.gather.enough {
            return None;
        }
        let quiet =
            self.pace().or(self.earlier_pace).map_or(self.gather.delay, |gap| (gap * QUIET_GAPS).max(MIN_QUIET));
        let until = (self.started + self.gather.delay).min(self.last_arrival + quiet);
        until.checked_duration_since(now).filter(|d| !d.is_zero())
    }
}

/// The records of `jobs`, in order, as one write.
pub(crate) fn joined(jobs: &[Job]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(jobs.iter().map(|j| j.line.len()).sum());
    jobs.iter().for_each(|j| bytes.extend_from_slice(&j.line));
    bytes
}

/// `line` (a record as [`record_line`] writes it) with another `seq` and `prev`, its time
/// and body kept; `None` if it is not laid out so.
pub(crate) fn rechain(line: &[u8], seq: u64, prev: &str) -> Option<Vec<u8>> {
    let time_at = line.windows(8).position(|w| w == b",\"time\":")?;
    let prev_at = line.windows(10).position(|w| w == b"\",\"prev\":\"")?;
    let hash_end = prev_at + 10 + line.get(prev_at + 10..)?.iter().position(|&b| b == b'"')?;
    let mut out = Vec::with_capacity(line.len() + 20);
    out.extend_from_slice(format!("{{\"seq\":{seq}").as_bytes());
    out.extend_from_slice(line.get(time_at..prev_at + 10)?);
    out.extend_from_slice(prev.as_bytes());
    out.extend_from_slice(line.get(hash_end..)?);
    Some(out)
}

/// Submissions in `queue` someone waits for (not lazy).
fn waiters(queue: &[Job]) -> usize {
    queue.iter().filter(|j| j.done.is_some() && !j.lazy).count()
}

#[derive(Debug)]
pub(crate) struct State {
    pub next_seq: u64,
    pub prev: String,
    pub queue: Vec<Job>,
    /// The first failure, once the log is poisoned.
    pub failed: Option<String>,
    pub closing: bool,
    /// Under `off` durability, the file appenders write their own records to (see
    /// `AuditLog::submit`); the writer thread then only waits for close.
    pub direct: Option<Segment>,
    /// Under the other settings, the file and its write state, while nobody writes.
    pub pen: Option<Pen>,
    /// Since when, and why, writes fail, while they do.
    pub stall: Option<Stall>,
    /// Test seam: while set, the writer leaves the queue alone (so a test can queue many records
    /// and see them drained in one batch, without depending on timing).
    pub held: bool,
}

/// A stretch of failed writes: when it began, the first error, and the records not
/// written (of refused calls; kept ones beyond [`MAX_KEPT`]).
#[derive(Debug, Clone)]
pub(crate) struct Stall {
    pub since: String,
    pub error: String,
    pub refused: u64,
    pub lost: u64,
}

impl Stall {
    pub fn new(since: String, error: String) -> Self {
        Stall { since, error, refused: 0, lost: 0 }
    }

    /// The `warning` record's text.
    fn message(&self) -> String {
        let lost = match self.lost {
            0 => String::new(),
            n => format!(", and {n} records nobody waited for (call outcomes, egress) were lost"),
        };
        format!(
            "the audit log could not be written from {} ({}): {} records of calls refused meanwhile are not in it{lost}; \
             it goes on with this record",
            self.since, self.error, self.refused
        )
    }

    /// The body of the stall's `warning` record.
    pub fn body(&self) -> String {
        let entry = Entry::log(Event::Warning { message: self.message() }).bounded();
        serde_json::to_string(&entry).unwrap_or_else(|_| r#"{"event":"warning"}"#.to_owned())
    }
}

/// What the appenders and the writer share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub path: PathBuf,
    pub durability: Durability,
    pub chain: Chain,
    pub clock: Arc<dyn Clock>,
    /// The log's own fields of every record, after `prev`: `,"replica":"NAME"` when a
    /// replica is named, else nothing.
    pub fields: String,
    pub state: Mutex<State>,
    /// Wakes the writer (work queued, hold released, closing) and test waiters (queue grew).
    pub changed: Condvar,
    pub fsyncs: AtomicU64,
    pub batches: AtomicU64,
    /// The last record known to be on disk (synced; under `off`, written).
    pub durable: Mutex<Head>,
}

/// A record as the last on disk: its `seq` and its line, kept as written (moved, not
/// copied, from the batch) and hashed only when someone asks for the anchor; `seq` 0 and
/// no line for an empty log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Head {
    pub seq: u64,
    pub line: Vec<u8>,
}

impl Head {
    /// The record as an anchor.
    pub fn anchor(&self) -> Anchor {
        if self.seq == 0 {
            return Anchor { seq: 0, hash: line_hash(GENESIS) };
        }
        let line = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
        Anchor { seq: self.seq, hash: line_hash(line) }
    }
}

impl Job {
    /// This record as the last on disk, its line moved out: call it once the line is written.
    pub fn take_head(&mut self) -> Head {
        Head { seq: self.seq, line: std::mem::take(&mut self.line) }
    }
}

impl Shared {
    /// Marks `head` as the last record on disk.
    pub fn set_durable(&self, head: Head) {
        *self.durable.lock().unwrap_or_else(|e| e.into_inner()) = head;
    }

    /// The last record on disk.
    pub fn durable_head(&self) -> Head {
        self.durable.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave State half-updated in a way that matters
        // more than refusing to go on, and the writer must still be able to poison the log.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A write of `batch` failed with `error` and was cut back; `tail` is the last record
    /// in the file. Refuses the waiters of `batch` and of the queue (under `every-call`),
    /// keeps the records nobody waits for (under `batched`, those whose appends returned
    /// before the writes began to fail), and chains them again after `tail`, with the
    /// stall's `warning` record after the first of them that were queued before (or
    /// last): the `seq` of a kept record does not change unless a refused one came
    /// before it.
    fn stall(&self, error: &std::io::Error, batch: Vec<Job>, tail: &Head) {
        let refusal = AuditError::Stalled { path: self.path.clone(), message: error.to_string() };
        let mut st = self.lock();
        let now = rfc3339(self.clock.now());
        let closing = st.closing;
        let jobs: Vec<Job> = batch.into_iter().chain(std::mem::take(&mut st.queue)).collect();
        let stall = st.stall.get_or_insert_with(|| Stall::new(now.clone(), error.to_string()));
        let mut kept = Vec::new();
        let mut records = 0;
        for job in jobs {
            if job.note || (job.lazy && !closing && records < MAX_KEPT) {
                records += usize::from(!job.note);
                kept.push(job);
                continue;
            }
            match job.lazy {
                true => stall.lost += 1,
                false => stall.refused += 1,
            }
            if let Some(done) = job.done {
                done.complete(Err(refusal.clone()));
            }
        }
        if closing {
            return;
        }
        if !kept.iter().any(|j| j.note) {
            kept.push(Job { line: Vec::new(), seq: 0, done: None, lazy: true, note: true });
        }
        let body = stall.body();
        let (mut seq, mut prev) = match tail.seq {
            0 => (0, self.chain.genesis()),
            n => (n, self.chain.link(tail.line.strip_suffix(b"\n").unwrap_or(&tail.line))),
        };
        let mut queue = Vec::with_capacity(kept.len());
        for mut job in kept {
            let line = match job.note {
                true => Some(record_line(seq + 1, &now, &prev, &self.fields, &body)),
                false => rechain(&job.line, seq + 1, &prev),
            };
            let Some(line) = line else {
                stall.lost += 1;
                continue;
            };
            seq += 1;
            prev = self.chain.link(line.strip_suffix(b"\n").unwrap_or(&line));
            job.line = line;
            job.seq = seq;
            queue.push(job);
        }
        st.prev = prev;
        st.next_seq = seq + 1;
        st.queue = queue;
    }

    fn poison(&self, message: &str, batch: Vec<Job>) {
        let write_err = AuditError::Write { path: self.path.clone(), message: message.to_owned() };
        let rest = {
            let mut st = self.lock();
            st.failed.get_or_insert_with(|| message.to_owned());
            std::mem::take(&mut st.queue)
        };
        for job in batch.into_iter().chain(rest) {
            if let Some(done) = job.done {
                done.complete(Err(write_err.clone()));
            }
        }
    }
}

/// The log's file and what the last write left to do. It sits in the [`State`] while
/// nobody writes; whoever writes a batch takes it out for the write and puts it back:
/// the writer thread, or under `every-call` durability an appender whose submission is
/// all there is to write while the writer is idle (see `AuditLog::submit`), which
/// spares the call two thread switches.
#[derive(Debug)]
pub(crate) struct Pen {
    segment: Segment,
    /// How long a written record may stay unsynced (lazy records under `every-call`,
    /// every record under `batched`).
    max_delay: Duration,
    /// When the oldest written-but-unsynced record was written.
    unsynced_since: Option<Instant>,
    /// The last record written, which the next fsync makes durable.
    written: Option<Head>,
    /// When the last write failed, while the log is stalled.
    failed_at: Option<Instant>,
}

impl Pen {
    pub fn new(segment: Segment, durability: Durability) -> Self {
        let max_delay = match durability {
            Durability::Batched { max_delay_ms } => Duration::from_millis(max_delay_ms),
            Durability::EveryCall => LAZY_SYNC,
            Durability::Off => Duration::ZERO,
        };
        Pen { segment, max_delay, unsynced_since: None, written: None, failed_at: None }
    }
}

/// The writer thread's body. Under `off` durability (appenders write their own records)
/// it only waits for close. Returns when the log closes (after flushing and syncing) or
/// after a failure once the log is closed.
pub(crate) fn run(shared: Arc<Shared>) {
    if shared.durability == Durability::Off {
        let mut st = shared.lock();
        while !st.closing {
            st = shared.changed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        return;
    }
    let mut previous_waiters = 0;
    // The mean gap between waited-for arrivals in the last gathering that saw any.
    let mut pace = None;
    loop {
        let (mut pen, batch) = {
            let mut st = shared.lock();
            loop {
                let Some(pen) = st.pen.as_ref() else {
                    // An appender is writing its own submission: wait for the pen.
                    st = shared.changed.wait(st).unwrap_or_else(|e| e.into_inner());
                    continue;
                };
                let due = pen.unsynced_since.is_some_and(|t| t.elapsed() >= pen.max_delay);
                // Stalled, with nobody waiting (under `batched`, only an append made while
                // stalled waits): the kept records are tried again in a while.
                let waiting = waiters(&st.queue) > 0;
                let retry_in = pen
                    .failed_at
                    .filter(|_| st.stall.is_some() && !st.closing && !waiting)
                    .and_then(|t| RETRY.checked_sub(t.elapsed()))
                    .filter(|left| !left.is_zero());
                if (!st.held && !st.queue.is_empty() && retry_in.is_none())
                    || due
                    || (st.closing && pen.unsynced_since.is_some())
                {
                    break;
                }
                if st.closing && st.queue.is_empty() {
                    return;
                }
                let sync_in = pen.unsynced_since.map(|t| pen.max_delay.saturating_sub(t.elapsed()));
                st = match [sync_in, retry_in].into_iter().flatten().min() {
                    Some(left) => {
                        shared.changed.wait_timeout(st, left).map(|r| r.0).unwrap_or_else(|e| e.into_inner().0)
                    }
                    None => shared.changed.wait(st).unwrap_or_else(|e| e.into_inner()),
                };
            }
            if let Some(gather) = gather_for(shared.durability, previous_waiters).filter(|_| waiters(&st.queue) > 0) {
                let mut gathering = Gathering::new(gather, waiters(&st.queue), pace, Instant::now());
                while !st.held && !st.closing {
                    let Some(left) = gathering.wait(Instant::now()) else { break };
                    st = shared.changed.wait_timeout(st, left).map(|r| r.0).unwrap_or_else(|e| e.into_inner().0);
                    gathering.saw(waiters(&st.queue), Instant::now());
                }
                pace = gathering.pace().or(pace);
            }
            // Nobody takes the pen while records are queued, so it is still here.
            let Some(pen) = st.pen.take() else { continue };
            (pen, if st.held { Vec::new() } else { std::mem::take(&mut st.queue) })
        };
        previous_waiters = waiters(&batch);
        commit(&shared, &mut pen, batch);
        shared.lock().pen = Some(pen);
    }
}

/// Writes `batch` with `pen`, syncs it as the log's durability asks (and what was written
/// before it, when due), completes its waiters and rotates a full file; on a failed write,
/// stalls or poisons the log.
pub(crate) fn commit(shared: &Shared, pen: &mut Pen, mut batch: Vec<Job>) {
    if let Some(first) = shared.lock().failed.clone() {
        // Nothing is queued after a failure (appends check first), but never write past one.
        let refused = AuditError::Poisoned { path: shared.path.clone(), first };
        batch.into_iter().filter_map(|j| j.done).for_each(|d| d.complete(Err(refused.clone())));
        return;
    }
    if !batch.is_empty() {
        let bytes = joined(&batch);
        shared.batches.fetch_add(1, Ordering::Relaxed);
        match pen.segment.append(&bytes) {
            Ok(()) => {}
            Err(AppendFailure::Cut(error)) => {
                pen.failed_at = Some(Instant::now());
                let tail = pen.written.clone().unwrap_or_else(|| shared.durable_head());
                shared.stall(&error, batch, &tail);
                // What was written before is synced now, not retried with the stall.
                if pen.unsynced_since.take().is_some() {
                    shared.fsyncs.fetch_add(1, Ordering::Relaxed);
                    if let Err(e) = pen.segment.sync() {
                        shared.poison(&format!("fsync failed: {e}"), Vec::new());
                        return;
                    }
                    if let Some(head) = pen.written.take() {
                        shared.set_durable(head);
                    }
                }
                return;
            }
            Err(AppendFailure::Torn(message)) => {
                shared.poison(&message, batch);
                return;
            }
        }
        if pen.failed_at.take().is_some() {
            shared.lock().stall = None;
        }
        pen.written = batch.last_mut().map(Job::take_head);
    }
    let sync_now = match shared.durability {
        Durability::Off => false,
        Durability::EveryCall if batch.iter().any(|j| !j.lazy) => true,
        Durability::EveryCall | Durability::Batched { .. } => {
            if !batch.is_empty() {
                pen.unsynced_since.get_or_insert_with(Instant::now);
            }
            let closing = shared.lock().closing;
            pen.unsynced_since.is_some_and(|t| closing || t.elapsed() >= pen.max_delay)
        }
    };
    if sync_now {
        pen.unsynced_since = None;
        shared.fsyncs.fetch_add(1, Ordering::Relaxed);
        let syncing = Instant::now();
        let synced = pen.segment.sync();
        // The facade's: nothing is kept unless the host installs a recorder.
        metrics::histogram!("wasmgate_audit_fsync_duration_seconds").record(syncing.elapsed());
        if let Err(e) = synced {
            shared.poison(&format!("fsync failed: {e}"), batch);
            return;
        }
        if let Some(head) = pen.written.take() {
            shared.set_durable(head);
        }
    }
    let next_seq = batch.last().map(|j| j.seq + 1);
    for job in batch {
        if let Some(done) = job.done {
            done.complete(Ok(job.seq));
        }
    }
    if let Some(next_seq) = next_seq.filter(|_| pen.segment.full()) {
        // Rotation syncs what is written first.
        pen.unsynced_since = None;
        if let Err(e) = pen.segment.rotate(next_seq) {
            shared.poison(&format!("cannot rotate the log: {e}"), Vec::new());
            return;
        }
        if let Some(head) = pen.written.take() {
            shared.set_durable(head);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_record_chained_again_keeps_its_time_fields_and_body() {
        let line = record_line(
            7,
            "2026-01-01T00:00:00.000Z",
            &"a".repeat(64),
            ",\"replica\":\"r1\"",
            r#"{"event":"x","n":"\"prev\":\""}"#,
        );
        let again = rechain(&line, 12, &"b".repeat(64)).unwrap();
        let expected = record_line(
            12,
            "2026-01-01T00:00:00.000Z",
            &"b".repeat(64),
            ",\"replica\":\"r1\"",
            r#"{"event":"x","n":"\"prev\":\""}"#,
        );
        assert_eq!(String::from_utf8(again).unwrap(), String::from_utf8(expected).unwrap());
        assert_eq!(rechain(b"{\"seq\":1}\n", 2, "p"), None, "not a record line");
    }

    #[test]
    fn a_stalls_warning_counts_what_the_log_does_not_hold() {
        let mut stall = Stall::new("T".into(), "No space left on device (os error 28)".into());
        stall.refused = 3;
        assert!(stall.message().contains("from T (No space left on device (os error 28)): 3 records of calls refused"));
        assert!(!stall.message().contains("lost"));
        stall.lost = 2;
        assert!(stall.message().contains("and 2 records nobody waited for"));
        let body: serde_json::Value = serde_json::from_str(&stall.body()).unwrap();
        assert_eq!(body["event"], "warning");
    }
}
