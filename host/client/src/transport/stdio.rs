//! The stdio transport: a child process speaking newline-delimited JSON.
//!
//! Four tasks serve one server: a writer owns stdin and writes the lines senders queue
//! (those queued together in one write), a reader frames stdout into [`Inbound`] events
//! (with the bounded `LineReader`), a drain logs stderr within budgets, and a supervisor
//! owns the process and reports how it ended. The supervisor sends the single
//! [`Inbound::Closed`] only after the reader has delivered everything the server wrote,
//! so a response written just before exiting still reaches its caller, and every call
//! still pending after that fails at once with the exit status.

use bytes::Bytes;
use rustix::process::Signal;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWriteExt};
use tokio::process::ChildStdin;
use tokio::sync::{mpsc, oneshot, watch};
use wasmgate_confine::ConfinementReport;
use wasmgate_protocol::LineBatch;

use super::lines::{Line, LineReader};
use super::process::{self, Graces, ReaderEnd};
use super::stderr::{self, StderrBudget, StderrTail};
use super::stdio_config::StdioConfig;
use super::{BoxFuture, INBOUND_CAPACITY, Inbound, Transport};
use crate::error::{CloseReason, TransportError};

/// A running stdio server. Dropping it kills the server's process group.
#[derive(Debug)]
pub struct StdioTransport {
    name: String,
    pid: Option<u32>,
    /// Lines for the writer task, which owns the server's stdin; `None` once closed.
    outbox: std::sync::Mutex<Option<mpsc::Sender<Outgoing>>>,
    inbound: Option<mpsc::Receiver<Inbound>>,
    shutdown: std::sync::Mutex<Option<oneshot::Sender<()>>>,
    /// Set by the supervisor when the process is gone.
    finished: watch::Receiver<Option<CloseReason>>,
    /// What the kernel applied to the process (`None`: unconfined by config).
    confinement: Option<ConfinementReport>,
    /// Its last lines of stderr.
    tail: StderrTail,
}

impl StdioTransport {
    /// Starts the server.
    ///
    /// # Errors
    ///
    /// [`TransportError::Config`] if the program cannot be found or started, or if this
    /// is called outside a tokio runtime (the transport's tasks need one);
    /// [`TransportError::Confinement`] if its confinement policy cannot be met (a
    /// required mechanism is missing: the message names it) or a path cannot be granted.
    pub fn spawn(config: &StdioConfig) -> Result<Self, TransportError> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| TransportError::Config("StdioTransport::spawn needs a tokio runtime".into()))?;
        let process::Spawned { mut child, confinement, cgroup, members, proxy, transparent, dns, connects } =
            process::spawn(config)?;
        // Each connect the server makes waits for the watcher's answer: started before
        // anything else can fail. It ends once the server's processes are gone, or the
        // server has ended (the supervisor drops `ended`).
        let ended = match connects {
            Some(connects) => {
                // Weak: what the observer holds is written when the provider's last
                // holder lets go of it, which the watcher, ending a moment after the
                // server, must not delay.
                let observer =
                    config.egress.as_ref().and_then(|grant| grant.observer.as_ref()).map(std::sync::Arc::downgrade);
                let reporting = runtime.clone();
                let refused: wasmgate_confine::RefusedConnect = Box::new(move |destination| {
                    if let Some(observer) = observer.as_ref().and_then(std::sync::Weak::upgrade) {
                        // In the runtime: a flood of refusals withholds the server, which
                        // spawns its closing.
                        let _entered = reporting.enter();
                        observer(wasmgate_egress::refused_connect(destination));
                    }
                });
                let cannot = |e: std::io::Error| {
                    TransportError::Config(format!("cannot answer server {}'s connects: {e}", config.name))
                };
                let (watching, ended) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
                    .map_err(|e| cannot(std::io::Error::from(e)))?;
                connects.watch(refused, watching).map_err(cannot)?;
                Some(ended)
            }
            None => None,
        };
        let proxy = match (proxy, &config.egress) {
            (Some(listener), Some(grant)) => {
                let _guard = runtime.enter();
                wasmgate_egress::serve(config.name.clone(), listener, transparent, dns, grant.clone())
            }
            _ => None,
        };
        let pid = child.id();
        let missing = || TransportError::Config("the child's standard streams were not piped".into());
        let stdin = child.stdin.take().ok_or_else(missing)?;
        let stdout = child.stdout.take().ok_or_else(missing)?;
        let stderr = child.stderr.take().ok_or_else(missing)?;
        let limits = config.limits;

        let (tx, inbound) = mpsc::channel(INBOUND_CAPACITY);
        let (reader_end_tx, reader_end) = oneshot::channel();
        let (shutdown_tx, shutdown) = oneshot::channel();
        let (finished_tx, finished) = watch::channel(None);

        runtime.spawn(read_stdout(stdout, limits.max_line_bytes, tx.clone(), reader_end_tx));
        let (outbox, lines) = mpsc::channel(OUTBOX);
        runtime.spawn(write_stdin(stdin, lines));
        let budget = StderrBudget {
            line_bytes: limits.stderr_line_bytes,
            lines_per_second: limits.stderr_lines_per_second,
            total_bytes: limits.stderr_total_bytes,
        };
        let tail = StderrTail::default();
        runtime.spawn(stderr::drain(config.name.clone(), stderr, budget, tail.clone()));
        let graces = Graces { shutdown: limits.shutdown_grace, term: limits.term_grace, exit: limits.exit_grace };
        let name = config.name.clone();
        runtime.spawn(async move {
            let reason = process::supervise(child, reader_end, shutdown, graces, cgroup, members).await;
            drop(ended);
            if let Some(proxy) = proxy {
                proxy.abort();
            }
            tracing::debug!(server = %name, %reason, "stdio server ended");
            let _ = finished_tx.send(Some(reason.clone()));
            let _ = tx.send(Inbound::Closed(reason)).await;
        });
        tracing::debug!(server = %config.name, pid, "stdio server started");
        Ok(Self {
            name: config.name.clone(),
            pid,
            outbox: std::sync::Mutex::new(Some(outbox)),
            inbound: Some(inbound),
            shutdown: std::sync::Mutex::new(Some(shutdown_tx)),
            finished,
            confinement,
            tail,
        })
    }

    /// The last lines the server wrote to stderr (see [`StderrTail`]).
    #[must_use]
    pub fn stderr_tail(&self) -> StderrTail {
        self.tail.clone()
    }

    /// The confinement the server runs under, as the kernel applied it (`None`: its
    /// config turned confinement off). For `wasmgate tools` and the audit log.
    #[must_use]
    pub fn confinement(&self) -> Option<&ConfinementReport> {
        self.confinement.as_ref()
    }

    /// The server's process id (also its process group id), while known.
    #[must_use]
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }
}

/// A line for the server and the sender waiting to hear it was written.
type Outgoing = (Vec<u8>, oneshot::Sender<Result<(), CloseReason>>);

/// Lines queued for the writer before senders wait.
const OUTBOX: usize = 64;

/// Owns the server's stdin: writes each queued line, and every line already queued
/// when a write starts in the same write ([`LineBatch`]), so requests pipelined to the
/// server share one wake-up of it. A line is written whole or not at all, even when its
/// sender gives up waiting. After a failed write, every later line is refused with the
/// same reason. Ends, closing stdin, when the transport closes.
async fn write_stdin(mut pipe: ChildStdin, mut lines: mpsc::Receiver<Outgoing>) {
    let mut batch = LineBatch::new();
    let mut waiting = Vec::new();
    let reason = loop {
        let Some((line, done)) = lines.recv().await else { return };
        batch.clear();
        batch.push_line(&line);
        waiting.push(done);
        while batch.has_room() {
            let Ok((line, done)) = lines.try_recv() else { break };
            batch.push_line(&line);
            waiting.push(done);
        }
        let written = async {
            pipe.write_all(batch.as_bytes()).await?;
            pipe.flush().await
        };
        let failed = written.await.err().map(|e| CloseReason::Io(format!("writing to the server: {e}")));
        for done in waiting.drain(..) {
            let _ = done.send(failed.clone().map_or(Ok(()), Err));
        }
        if let Some(reason) = failed {
            break reason;
        }
    };
    drop(pipe);
    while let Some((_, done)) = lines.recv().await {
        let _ = done.send(Err(reason.clone()));
    }
}

async fn read_stdout(
    stdout: impl AsyncRead + Unpin,
    max_line: usize,
    tx: mpsc::Sender<Inbound>,
    end: oneshot::Sender<ReaderEnd>,
) {
    let mut lines = LineReader::new(tokio::io::BufReader::new(stdout), max_line);
    let reason = loop {
        let event = match lines.next_line().await {
            Ok(Line::Frame(line)) => Inbound::Frame(Bytes::from(line)),
            Ok(Line::Oversized { prefix, len }) => Inbound::Oversized { prefix: Bytes::from(prefix), len },
            Ok(Line::Eof { partial: None }) => break CloseReason::StreamEnded,
            Ok(Line::Eof { partial: Some(len) }) => {
                break CloseReason::Framing(format!("stdout ended in the middle of a {len}-byte message"));
            }
            Err(e) => break CloseReason::Io(format!("reading the server's stdout: {e}")),
        };
        if tx.send(event).await.is_err() {
            break CloseReason::ClosedByClient;
        }
    };
    let _ = end.send(reason);
}

impl Transport for StdioTransport {
    fn take_inbound(&mut self) -> Option<mpsc::Receiver<Inbound>> {
        self.inbound.take()
    }

    fn send(&self, message: Value) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            if let Some(reason) = self.finished.borrow().clone() {
                return Err(TransportError::Closed(reason));
            }
            let mut line = message.to_string().into_bytes();
            line.push(b'\n');
            let outbox = self.outbox.lock().ok().and_then(|outbox| outbox.clone());
            let closed = || match self.finished.borrow().clone() {
                Some(reason) => TransportError::Closed(reason),
                None => TransportError::Closed(CloseReason::ClosedByClient),
            };
            let Some(outbox) = outbox else { return Err(closed()) };
            let (done, written) = oneshot::channel();
            outbox.send((line, done)).await.map_err(|_| closed())?;
            match written.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(reason)) => Err(TransportError::Closed(reason)),
                Err(_) => Err(closed()),
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, CloseReason> {
        Box::pin(async move {
            // The writer closes the server's stdin once the lines already queued are
            // written; one blocked on a full pipe is unblocked by the signals below.
            if let Ok(mut outbox) = self.outbox.lock() {
                outbox.take();
            }
            if let Some(shutdown) = self.shutdown.lock().ok().and_then(|mut s| s.take()) {
                let _ = shutdown.send(());
            }
            let mut finished = self.finished.clone();
            let reason = match finished.wait_for(Option::is_some).await {
                Ok(reason) => reason.clone().unwrap_or(CloseReason::StreamEnded),
                Err(_) => CloseReason::StreamEnded,
            };
            tracing::debug!(server = %self.name, %reason, "stdio server closed");
            reason
        })
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        if self.finished.borrow().is_none() {
            process::signal_group(self.pid, Signal::KILL);
        }
    }
}
