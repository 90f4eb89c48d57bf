//! [`AuditLog`]: opening (and continuing) a log, appending records, closing it.

use crate::chain::{Chain, ChainKey, record_line};
use crate::clock::{Clock, SystemClock, rfc3339};
use crate::durability::Durability;
use crate::error::AuditError;
use crate::event::{Entry, Event};
use crate::pending::{Completion, Pending};
use crate::redact::Redaction;
use crate::tail::{check_genesis, recover};
use crate::writer::{Job, Shared, State, joined, run};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
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
}

/// An open audit log. Share it between threads (`Arc<AuditLog>`); appends from all of them are
/// ordered, chained and group-committed by one writer thread.
#[derive(Debug)]
pub struct AuditLog {
    shared: Arc<Shared>,
    clock: Arc<dyn Clock>,
    redaction: Redaction,
    chain: Chain,
    /// The log's own fields of every record, after `prev`: `,"replica":"NAME"` when a
    /// replica is named, else nothing.
    fields: String,
    writer: Option<JoinHandle<()>>,
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
        if tail.next_seq > 1 {
            check_genesis(&mut file, &chain).map_err(|reason| AuditError::Chain { path: path.to_owned(), reason })?;
        }
        let shared = Arc::new(Shared {
            path: path.to_owned(),
            durability: options.durability,
            state: Mutex::new(State {
                next_seq: tail.next_seq,
                prev: tail.prev,
                queue: Vec::new(),
                failed: None,
                closing: false,
                held: false,
            }),
            changed: Condvar::new(),
            fsyncs: Default::default(),
            batches: Default::default(),
            direct: match options.durability {
                Durability::Off => Some(file.try_clone().map_err(|e| open_err(&e))?),
                _ => None,
            },
            durable: Mutex::new(std::mem::take(&mut tail.head)),
        });
        let thread_shared = Arc::clone(&shared);
        let writer = std::thread::Builder::new()
            .name("wasmgate-audit".into())
            .spawn(move || run(thread_shared, file))
            .map_err(|e| open_err(&e))?;
        let log = AuditLog { shared, clock, redaction: options.redaction, chain, fields, writer: Some(writer) };
        if tail.truncated > 0 {
            let message = format!(
                "cut off an incomplete last record ({} bytes) left by a process stopped mid-write",
                tail.truncated
            );
            log.append(Entry::log(Event::Warning { message }))?;
        }
        Ok(log)
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
                    *arguments = self.redaction.apply(arguments);
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
            let time = rfc3339(self.clock.now());
            let count = bodies.len();
            let mut lines = Vec::with_capacity(count);
            for (i, body) in bodies.into_iter().enumerate() {
                let seq = st.next_seq;
                let line = record_line(seq, &time, &st.prev, &self.fields, &body);
                st.prev = self.chain.link(&line[..line.len() - 1]);
                st.next_seq += 1;
                let done = (i + 1 == count).then(|| Arc::clone(&completion));
                lines.push(Job { line, seq, done, lazy });
            }
            if let Some(file) = &self.shared.direct {
                // `off`: nothing waits for a disk, so the appender writes the records
                // itself, under the lock that orders them, rather than wake the writer
                // thread and wait to be woken back (two thread switches per record).
                self.shared.batches.fetch_add(1, Ordering::Relaxed);
                if let Err(e) = (&*file).write_all(&joined(&lines)) {
                    let message = e.to_string();
                    st.failed.get_or_insert_with(|| message.clone());
                    return Err(AuditError::Write { path: self.shared.path.clone(), message });
                }
                if let Some(last) = lines.last_mut() {
                    self.shared.set_durable(last.take_head());
                }
                return Ok(Pending::ready(Ok(st.next_seq - 1)));
            }
            st.queue.extend(lines);
            st.next_seq - 1
        };
        self.shared.changed.notify_all();
        Ok(match self.shared.durability {
            Durability::Batched { .. } => Pending::ready(Ok(last_seq)),
            _ => Pending::waiting(completion),
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

    /// Writes and syncs everything queued, stops the writer, and reports whether the log was healthy.
    pub fn close(mut self) -> Result<(), AuditError> {
        self.shutdown();
        match self.shared.lock().failed.clone() {
            Some(first) => Err(AuditError::Poisoned { path: self.shared.path.clone(), first }),
            None => Ok(()),
        }
    }

    fn shutdown(&mut self) {
        {
            let mut st = self.shared.lock();
            st.closing = true;
            st.held = false;
        }
        self.shared.changed.notify_all();
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
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

/// Makes a new file's directory entry durable.
fn sync_parent(path: &Path) -> std::io::Result<()> {
    let parent: PathBuf = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    File::open(parent)?.sync_all()
}
