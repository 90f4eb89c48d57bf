//! The stdio transport: a child process speaking newline-delimited JSON.
//!
//! Four tasks serve one server: a writer owns stdin and writes the lines senders queue
//! (those queued together in one write), a reader frames stdout into [`Inbound`] events
//! (with the bounded `LineReader`), a drain logs stderr within budgets, and a supervisor
//! owns the process and reports how it ended. The supervisor sends the single
//! [`Inbound::Closed`] only after the reader has delivered everything the server wrote,
//! so a response written just before exiting still reaches its caller, and every call
//! still pending after that fails at once with the exit status.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use rustix::process::Signal;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWriteExt};
use tokio::process::ChildStdin;
use tokio::sync::{mpsc, oneshot, watch};
use wasmgate_confine::{Confinement, ConfinementReport};
use wasmgate_protocol::batch::LineBatch;

use super::lines::{Line, LineReader};
use super::process::{self, Graces, ReaderEnd};
use super::stderr::{self, StderrBudget, StderrTail};
use super::{BoxFuture, INBOUND_CAPACITY, Inbound, Transport};
use crate::error::{CloseReason, TransportError};

/// What to run and how to bound it.
#[derive(Debug, Clone)]
pub struct StdioConfig {
    /// The server's name, for logs.
    pub name: String,
    /// The program: a path, or a bare name looked up in `PATH` (the configured one if
    /// `env` has it, else the gateway's own).
    pub command: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// The complete environment of the server: nothing else is inherited.
    pub env: BTreeMap<OsString, OsString>,
    /// The working directory. Confined, it is the server's private directory and the
    /// only place it may write: created (mode 0700) if missing, and never `/`, `$HOME` or
    /// another broad directory (see `wasmgate_confine::provider_workdir`).
    pub cwd: PathBuf,
    /// Bounds and grace periods.
    pub limits: StdioLimits,
    /// The kernel confinement of the process (default: [`Confinement::default`]).
    /// `None` starts it unconfined, with a warning.
    pub confinement: Option<Confinement>,
    /// The hosts it may reach through the gateway's egress proxy (`wasmgate-egress`).
    /// With a grant, the confinement's network is [`Network::Proxied`](crate::Network)
    /// whatever it says, and `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` (and their lowercase
    /// forms) point at the proxy. `None`: no proxy.
    pub egress: Option<wasmgate_egress::EgressGrant>,
}

impl StdioConfig {
    /// A server with no arguments and an empty environment.
    #[must_use]
    pub fn new(name: impl Into<String>, command: impl Into<PathBuf>, cwd: impl Into<PathBuf>) -> Self {
        Self {
            name: name.into(),
            command: command.into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: cwd.into(),
            limits: StdioLimits::default(),
            confinement: Some(Confinement::default()),
            egress: None,
        }
    }

    /// Grants the server hosts through the gateway's egress proxy.
    #[must_use]
    pub fn egress(mut self, grant: wasmgate_egress::EgressGrant) -> Self {
        self.egress = Some(grant);
        self
    }

    /// Sets the confinement policy (`None`: unconfined).
    #[must_use]
    pub fn confinement(mut self, confinement: Option<Confinement>) -> Self {
        self.confinement = confinement;
        self
    }

    /// Adds an argument.
    #[must_use]
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Sets one environment variable of the server.
    #[must_use]
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }
}

/// Bounds of a stdio server.
#[derive(Debug, Clone, Copy)]
pub struct StdioLimits {
    /// Longest stdout line accepted (default: the protocol's 4 MiB message limit).
    pub max_line_bytes: usize,
    /// stderr lines are logged cut to this length (default 2 KiB).
    pub stderr_line_bytes: usize,
    /// At most this many stderr lines are logged per second (default 50).
    pub stderr_lines_per_second: u32,
    /// At most this much stderr is logged over the server's life (default 1 MiB).
    pub stderr_total_bytes: usize,
    /// On close: how long the server may take to exit after stdin closes (default 2 s).
    pub shutdown_grace: Duration,
    /// On close: how long after `SIGTERM` before `SIGKILL` (default 2 s).
    pub term_grace: Duration,
    /// When stdout closes or the process exits, how long to wait for the other (default 1 s).
    pub exit_grace: Duration,
}

impl Default for StdioLimits {
    fn default() -> Self {
        Self {
            max_line_bytes: wasmgate_protocol::MessageLimits::DEFAULT.max_message_bytes,
            stderr_line_bytes: 2048,
            stderr_lines_per_second: 50,
            stderr_total_bytes: 1024 * 1024,
            shutdown_grace: Duration::from_secs(2),
            term_grace: Duration::from_secs(2),
            exit_grace: Duration::from_secs(1),
        }
    }
}

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
        let process::Spawned { mut child, confinement, cgroup, members, proxy } = process::spawn(config)?;
        let proxy = match (proxy, &config.egress) {
            (Some(listener), Some(grant)) => {
                let _guard = runtime.enter();
                wasmgate_egress::serve(config.name.clone(), listener, grant.clone())
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
