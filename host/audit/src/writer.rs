//! The single writer thread and group commit.
//!
//! Appenders serialize their records, then, under one short lock, take the next `seq`, the time and
//! the previous hash, and push the finished lines onto a queue: so the queue is always in `seq`
//! order and the chain is computed once, by whoever appends. The writer thread takes everything
//! queued, writes it with one `write`, fsyncs once, and completes every waiter in the batch. While
//! it fsyncs, new records queue up and go out together in the next round; that is group commit,
//! and it is why the fsyncs per record fall as concurrency rises.
//!
//! Any write or fsync failure poisons the log: the failing batch's waiters get the error, and every
//! later append is refused. (After a failed fsync Linux may have dropped the dirty pages, so
//! retrying could report success for records that are gone.)

use crate::chain::{Anchor, GENESIS, line_hash};
use crate::durability::Durability;
use crate::error::AuditError;
use crate::pending::Completion;
use std::fs::File;
use std::io::Write;
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
}

/// The longest a lazy record stays written but unsynced under `every-call` durability.
pub(crate) const LAZY_SYNC: Duration = Duration::from_millis(200);

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
    /// Test seam: while set, the writer leaves the queue alone (so a test can queue many records
    /// and see them drained in one batch, without depending on timing).
    pub held: bool,
}

/// What the appenders and the writer share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub path: PathBuf,
    pub durability: Durability,
    pub state: Mutex<State>,
    /// Wakes the writer (work queued, hold released, closing) and test waiters (queue grew).
    pub changed: Condvar,
    pub fsyncs: AtomicU64,
    pub batches: AtomicU64,
    /// Under `off` durability, a handle to the log on which appenders write their own
    /// records (see `AuditLog::submit`); the writer thread then only waits for close.
    pub direct: Option<File>,
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

    pub fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave State half-updated in a way that matters
        // more than refusing to go on, and the writer must still be able to poison the log.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
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

/// The writer thread's body. Returns when the log closes (after flushing and syncing) or after a
/// failure once the log is closed.
pub(crate) fn run(shared: Arc<Shared>, mut file: File) {
    let max_delay = match shared.durability {
        Durability::Batched { max_delay_ms } => Duration::from_millis(max_delay_ms),
        Durability::EveryCall => LAZY_SYNC,
        Durability::Off => Duration::ZERO,
    };
    // When the oldest written-but-unsynced record was written (batched mode, or lazy
    // records under every-call).
    let mut unsynced_since: Option<Instant> = None;
    let mut previous_waiters = 0;
    // The mean gap between waited-for arrivals in the last gathering that saw any.
    let mut pace = None;
    // The last record written, which the next fsync makes durable.
    let mut written: Option<Head> = None;
    loop {
        let mut batch = {
            let mut st = shared.lock();
            loop {
                let due = unsynced_since.is_some_and(|t| t.elapsed() >= max_delay);
                if (!st.held && !st.queue.is_empty()) || due || (st.closing && unsynced_since.is_some()) {
                    break;
                }
                if st.closing && st.queue.is_empty() {
                    return;
                }
                st = match unsynced_since {
                    Some(t) => {
                        let left = max_delay.saturating_sub(t.elapsed());
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
            if st.held { Vec::new() } else { std::mem::take(&mut st.queue) }
        };
        previous_waiters = waiters(&batch);
        if let Some(first) = shared.lock().failed.clone() {
            // Nothing is queued after a failure (appends check first), but never write past one.
            let refused = AuditError::Poisoned { path: shared.path.clone(), first };
            batch.into_iter().filter_map(|j| j.done).for_each(|d| d.complete(Err(refused.clone())));
            continue;
        }
        if !batch.is_empty() {
            let bytes = joined(&batch);
            shared.batches.fetch_add(1, Ordering::Relaxed);
            if let Err(e) = file.write_all(&bytes) {
                shared.poison(&e.to_string(), batch);
                continue;
            }
            written = batch.last_mut().map(Job::take_head);
        }
        let sync_now = match shared.durability {
            Durability::Off => false,
            Durability::EveryCall if batch.iter().any(|j| !j.lazy) => true,
            Durability::EveryCall | Durability::Batched { .. } => {
                if !batch.is_empty() {
                    unsynced_since.get_or_insert_with(Instant::now);
                }
                let closing = shared.lock().closing;
                unsynced_since.is_some_and(|t| closing || t.elapsed() >= max_delay)
            }
        };
        if sync_now {
            unsynced_since = None;
            shared.fsyncs.fetch_add(1, Ordering::Relaxed);
            let syncing = Instant::now();
            let synced = file.sync_data();
            // The facade's: nothing is kept unless the host installs a recorder.
            metrics::histogram!("wasmgate_audit_fsync_duration_seconds").record(syncing.elapsed());
            if let Err(e) = synced {
                shared.poison(&format!("fsync failed: {e}"), batch);
                continue;
            }
            if let Some(head) = written.take() {
                shared.set_durable(head);
            }
        }
        for job in batch {
            if let Some(done) = job.done {
                done.complete(Ok(job.seq));
            }
        }
    }
}
