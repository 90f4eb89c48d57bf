//! [`AuditLog`]: opening (and continuing) a log, appending records, closing it.

use crate::chain::{Chain, ChainKey, record_line};
use crate::clock::{Clock, SystemClock, rfc3339};
use crate::durability::Durability;
use crate::error::AuditError;
use crate::event::{Entry, Event};
use crate::pending::{Completion, Pending};
use crate::redact::Redaction;
use crate::segment::{AppendFailure, Segment, rotated, sync_parent};
use crate::tail::{check_start, recover};
use crate::writer::{Job, Pen, Shared, Stall, State, commit, joined, run};
use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

/// How a log behaves.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// When appends return; see [`Durability`].
    pub durability: Durability,
    /// Which argument values are redacted in `requested` records.
    pub redaction: Redaction,
    /// The secret of a keyed chain (HMAC-SHA256); `None` chains with SHA-256.
    pub key: Option<ChainKey>,
    /// The replica that writes the log, named in every record (`"replica"`), when
    /// several gateways share the work.
    pub replica: Option<String>,
    /// Rotate the file once it holds this many bytes (see the `segment` module); `None`
    /// never rotates.
    pub rotate_bytes: Option<u64>,
}

/// An open audit log. Share it between threads (`Arc<AuditLog>`); appends from all of them are
/// ordered, chained and group-committed by one writer thread (a lone submission, by its appender).
#[derive(Debug)]
pub struct AuditLog {
    shared: Arc<Shared>,
    redaction: Redaction,
    /// The writer thread, until the log is closed.
    writer: Mutex<Option<JoinHandle<()>>>,
}

impl AuditLog {
    /// Opens or creates the log at `path` with the system clock.
    pub fn open(path: &Path, options: Options) -> Result<AuditLog, AuditError> {
        AuditLog::open_with_clock(path, options, Arc::new(SystemClock))
    }

    /// Opens or creates the log at `path`. An existing log is continued after its last complete
    /// record; a torn last record is cut off and a `warning` record says so. Fails (and so refuses
    /// every call) when the file cannot be created, opened, locked or read back.
    pub fn open_with_clock(path: &Path, options: Options, clock: Arc<dyn Clock>) -> Result<AuditLog, AuditError> {
        let open_err = |e: &dyn std::fmt::Display| AuditError::Open { path: path.to_owned(), message: e.to_string() };
        let existed = path.exists();
        // The log holds call arguments: a new one is readable by its owner only.
        let mut file =
            OpenOptions::new().read(true).append(true).create(true).mode(0o600).open(path).map_err(|e| open_err(&e))?;
        let meta = file.metadata().map_err(|e| open_err(&e))?;
        if meta.is_dir() {
            return Err(open_err(&"it is a directory"));
        }
        if meta.is_file() {
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => return Err(AuditError::InUse { path: path.to_owned() }),
                Err(TryLockError::Error(e)) => return Err(open_err(&e)),
            }
        }
        if !existed {
            sync_parent(path).map_err(|e| open_err(&e))?;
        }
        let fields = match options.replica.as_deref().map(serde_json::to_string).transpose() {
            Ok(name) => name.map(|name| format!(",\"replica\":{name}")).unwrap_or_default(),
            Err(e) => return Err(open_err(&e)),
        };
        let chain = Chain::new(options.key.clone());
        let mut tail =
            recover(&mut file, &chain).map_err(|reason| AuditError::Corrupt { path: path.to_owned(), reason })?;
        let empty = tail.next_seq == 1;
        // A log rotated before goes on from the last record of its newest rotated file.
        let aside = rotated(path).map_err(|e| open_err(&e))?;
        let before = match aside.last() {
            Some((_, last)) => {
                let mut last_file = File::open(last).map_err(|e| open_err(&e))?;
                let before = recover(&mut last_file, &chain)
                    .map_err(|reason| AuditError::Corrupt { path: last.clone(), reason })?;
                if empty {
                    // No record of the current file shows the key it goes on with: the
                    // rotated file's must.
                    crate::tail::check_keyed(&mut last_file, &chain, aside.len() == 1)
                        .map_err(|reason| AuditError::Chain { path: path.to_owned(), reason })?;
                    tail = crate::tail::Tail { truncated: tail.truncated, ..before.clone() };
                }
                Some((last, before))
            }
            None => None,
        };
        let first_seq = if empty {
            tail.next_seq
        } else {
            let (expected, after) = match &before {
                Some((last, before)) => (before.prev.clone(), Some(last.as_path())),
                None => (chain.genesis(), None),
            };
            check_start(&mut file, &chain, &expected, after)
                .map_err(|reason| AuditError::Chain { path: path.to_owned(), reason })?
        };
        let len = file.metadata().map_err(|e| open_err(&e))?.len();
        let segment = Segment::new(path, file, len, first_seq, options.rotate_bytes.filter(|_| meta.is_file()));
        let (direct, pen) = match options.durability {
            Durability::Off => (Some(segment), None),
            durability => (None, Some(Pen::new(segment, durability))),
        };
        let shared = Arc::new(Shared {
            path: path.to_owned(),
            durability: options.durability,
            chain,
            clock,
            fields,
            state: Mutex::new(State {
                next_seq: tail.next_seq,
                prev: tail.prev,
                queue: Vec::new(),
                failed: None,
                closing: false,
                direct,
                pen,
                stall: None,
                held: false,
            }),
            changed: Condvar::new(),
            fsyncs: Default::default(),
            batches: Default::default(),
            durable: Mutex::new(std::mem::take(&mut tail.head)),
        });
        let thread_shared = Arc::clone(&shared);
        let writer = std::thread::Builder::new()
            .name("wasmgate-audit".into())
            .spawn(move || run(thread_shared))
            .map_err(|e| open_err(&e))?;
        let log = AuditLog { shared, redaction: options.redaction, writer: Mutex::new(Some(writer)) };
        if tail.truncated > 0 {
            let message = format!(
                "cut off an incomplete last record ({} bytes) left by a process stopped mid-write",
                tail.truncated
            );
            log.append(Entry::log(Event::Warning { message }))?;
        }
        Ok(log)
    }

    /// `arguments` redacted as this log writes a call's arguments (its
    /// [`Redaction`]), for showing them elsewhere.
    #[must_use]
    pub fn redact(&self, arguments: &serde_json::Value) -> serde_json::Value {
        self.redaction.apply(arguments)
    }

    /// The log file.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Queues `entries` as consecutive records and returns at once; wait on the [`Pending`] before
    /// running the call. Records submitted together always share one write and one fsync, so a
    /// call's `requested` and `started` records cost one fsync on its critical path.
    pub fn submit(&self, entries: impl IntoIterator<Item = Entry>) -> Result<Pending, AuditError> {
        self.queue(entries, false)
    }

    /// Queues `entries` for a caller that will not wait (a call's outcome): under
    /// `every-call` durability they are written at once but cost no fsync of their own;
    /// they become durable with the next record someone waits for, or within 200 ms.
    /// A crash can lose them, never a start record. Under the other settings this is
    /// [`submit`](Self::submit) without the [`Pending`].
    ///
    /// # Errors
    ///
    /// As [`submit`](Self::submit): a poisoned or closed log, or an entry that cannot be
    /// serialized.
    pub fn record_later(&self, entries: impl IntoIterator<Item = Entry>) -> Result<(), AuditError> {
        self.queue(entries, true).map(drop)
    }

    fn queue(&self, entries: impl IntoIterator<Item = Entry>, lazy: bool) -> Result<Pending, AuditError> {
        let bodies: Vec<String> = entries
            .into_iter()
            .map(|mut e| {
                // Redacted first: the bounds may cut a name a rule matches, or move a value
                // a pointer names.
                if let Event::Requested { arguments, .. } = &mut e.event {
                    self.redaction.apply_in_place(arguments);
                    e.arguments_sha256 = Some(crate::chain::line_hash(arguments.to_string().as_bytes()));
                }
                let e = e.bounded();
                serde_json::to_string(&e).map_err(|err| self.write_err(&err))
            })
            .collect::<Result<_, _>>()?;
        if bodies.is_empty() {
            return Ok(Pending::ready(Ok(self.shared.lock().next_seq.saturating_sub(1))));
        }
        let completion = Arc::new(Completion::default());
        let last_seq = {
            let mut st = self.shared.lock();
            if let Some(first) = &st.failed {
                return Err(AuditError::Poisoned { path: self.shared.path.clone(), first: first.clone() });
            }
            if st.closing {
                return Err(AuditError::Closed { path: self.shared.path.clone() });
            }
            // `batched`: an append returns before its write, and its record is kept to be
            // written later if the write fails. Not while writes fail: the appender then
            // waits for its write, and its call is refused when that fails, as under
            // `every-call`, so that no call runs unrecorded on a full disk.
            let returns_at_once = matches!(self.shared.durability, Durability::Batched { .. }) && st.stall.is_none();
            let lazy = lazy || returns_at_once;
            let time = rfc3339(self.shared.clock.now());
            let count = bodies.len();
            let mut lines = Vec::with_capacity(count + 1);
            if st.direct.is_some()
                && let Some(stall) = &st.stall
            {
                // `off`: the appender writes, so it writes the stall's warning first.
                let note = stall.body();
                lines.push(self.chain_line(&mut st, &time, &note, None, false));
            }
            for (i, body) in bodies.into_iter().enumerate() {
                let done = (i + 1 == count).then(|| Arc::clone(&completion));
                lines.push(self.chain_line(&mut st, &time, &body, done, lazy));
            }
            if let Some(segment) = st.direct.as_mut() {
                // `off`: nothing waits for a disk, so the appender writes the records
                // itself, under the lock that orders them, rather than wake the writer
                // thread and wait to be woken back (two thread switches per record).
                self.shared.batches.fetch_add(1, Ordering::Relaxed);
                let written = segment.append(&joined(&lines));
                let full = written.is_ok() && segment.full();
                let next_seq = st.next_seq;
                let rotated = match full {
                    true => st.direct.as_mut().map(|segment| segment.rotate(next_seq)),
                    false => None,
                };
                return match (written, rotated) {
                    (Ok(()), None | Some(Ok(()))) => {
                        st.stall = None;
                        if let Some(last) = lines.last_mut() {
                            self.shared.set_durable(last.take_head());
                        }
                        Ok(Pending::ready(Ok(st.next_seq - 1)))
                    }
                    (Ok(()), Some(Err(e))) => Err(self.poison(&mut st, format!("cannot rotate the log: {e}"))),
                    (Err(AppendFailure::Cut(e)), _) => {
                        // Nothing of it stayed: the chain goes on from the last record written.
                        let head = self.shared.durable_head();
                        st.next_seq = head.seq + 1;
                        st.prev = match head.seq {
                            0 => self.shared.chain.genesis(),
                            _ => self.shared.chain.link(head.line.strip_suffix(b"\n").unwrap_or(&head.line)),
                        };
                        let stall = st.stall.get_or_insert_with(|| Stall::new(time.clone(), e.to_string()));
                        // `off` keeps nothing to write later: records nobody waits for (an
                        // outcome) are lost, and counted so; the others' calls are refused.
                        match lazy {
                            true => stall.lost += count as u64,
                            false => stall.refused += count as u64,
                        }
                        Err(AuditError::Stalled { path: self.shared.path.clone(), message: e.to_string() })
                    }
                    (Err(AppendFailure::Torn(message)), _) => Err(self.poison(&mut st, message)),
                };
            }
            // `every-call`, with nothing else to write and the writer idle: the appender
            // writes and syncs its own submission, sparing the call the writer thread's
            // wake-up and its own (two thread switches). Any other time, or when writes
            // are failing, the writer takes it with whatever else is queued.
            let alone = self.shared.durability == Durability::EveryCall
                && !lazy
                && st.queue.is_empty()
                && st.stall.is_none()
                && !st.held
                && !st.closing;
            if let Some(mut pen) = st.pen.take_if(|_| alone) {
                drop(st);
                commit(&self.shared, &mut pen, lines);
                let mut st = self.shared.lock();
                st.pen = Some(pen);
                // The writer waits for the pen only when records were queued meanwhile (a
                // failed write queues the stall's warning) or to close; left asleep otherwise.
                let wake = !st.queue.is_empty() || st.closing;
                drop(st);
                if wake {
                    self.shared.changed.notify_all();
                }
                return Ok(Pending::waiting(completion));
            }
            st.queue.extend(lines);
            returns_at_once.then_some(st.next_seq - 1)
        };
        self.shared.changed.notify_all();
        Ok(match last_seq {
            Some(seq) => Pending::ready(Ok(seq)),
            None => Pending::waiting(completion),
        })
    }

    /// Appends one record and waits until it is durable; returns its `seq`.
    pub fn append(&self, entry: Entry) -> Result<u64, AuditError> {
        self.submit([entry])?.wait()
    }

    /// The last record on disk, as an [`Anchor`](crate::Anchor): synced (under `off`
    /// durability, written). Kept somewhere the gateway's host cannot rewrite (the
    /// shared store of a cluster), it shows later whether the log was cut short.
    pub fn durable_head(&self) -> crate::Anchor {
        self.shared.durable.lock().unwrap_or_else(|e| e.into_inner()).anchor()
    }

    /// How many fsyncs the writer has issued (for tests and benchmarks).
    pub fn fsyncs(&self) -> u64 {
        self.shared.fsyncs.load(Ordering::Relaxed)
    }

    /// How many batches the writer has written.
    pub fn batches(&self) -> u64 {
        self.shared.batches.load(Ordering::Relaxed)
    }

    /// Whether an earlier failure stopped the log.
    pub fn is_poisoned(&self) -> bool {
        self.shared.lock().failed.is_some()
    }

    /// Whether writes fail now (a full disk): calls are refused until one succeeds.
    pub fn is_stalled(&self) -> bool {
        self.shared.lock().stall.is_some()
    }

    /// Writes and syncs everything queued, stops the writer, and reports whether the log was
    /// healthy: an error when it was poisoned, or when it closed while it could not be
    /// written (a full disk), with the records that are not in it. Any holder of a shared
    /// log (`Arc<AuditLog>`) may close it: appends after it are refused, and closing it
    /// again reports the same.
    pub fn close(&self) -> Result<(), AuditError> {
        self.shutdown();
        let mut st = self.shared.lock();
        // The file goes, and its lock with it: the log can be opened again at once.
        (st.pen, st.direct) = (None, None);
        if let Some(first) = st.failed.clone() {
            return Err(AuditError::Poisoned { path: self.shared.path.clone(), first });
        }
        match &st.stall {
            Some(stall) => Err(AuditError::ClosedStalled {
                path: self.shared.path.clone(),
                message: stall.error.clone(),
                unwritten: stall.refused + stall.lost,
            }),
            None => Ok(()),
        }
    }

    fn shutdown(&self) {
        {
            let mut st = self.shared.lock();
            st.closing = true;
            st.held = false;
        }
        self.shared.changed.notify_all();
        let writer = self.writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(w) = writer {
            let _ = w.join();
        }
    }

    /// Chains `body` as the next record: takes its `seq` and moves `prev` on.
    fn chain_line(&self, st: &mut State, time: &str, body: &str, done: Option<Arc<Completion>>, lazy: bool) -> Job {
        let seq = st.next_seq;
        let line = record_line(seq, time, &st.prev, &self.shared.fields, body);
        st.prev = self.shared.chain.link(&line[..line.len() - 1]);
        st.next_seq += 1;
        Job { line, seq, done, lazy, note: false }
    }

    /// Stops the log after `message`, a failure it cannot go on from.
    fn poison(&self, st: &mut State, message: String) -> AuditError {
        st.failed.get_or_insert_with(|| message.clone());
        AuditError::Write { path: self.shared.path.clone(), message }
    }

    fn write_err(&self, e: &dyn std::fmt::Display) -> AuditError {
        AuditError::Write { path: self.shared.path.clone(), message: e.to_string() }
    }

    /// Test seam: hold the writer so that appends queue up.
    #[cfg(test)]
    pub(crate) fn hold_writer(&self, held: bool) {
        self.shared.lock().held = held;
        self.shared.changed.notify_all();
    }

    /// Test seam: wait until `n` records are queued.
    #[cfg(test)]
    pub(crate) fn wait_queued(&self, n: usize) {
        let mut st = self.shared.lock();
        while st.queue.len() < n {
            st = self.shared.changed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        self.shutdown();
    }
}
