//! The stdio transport: a child process speaking newline-delimited JSON.
//!
//! Three tasks serve one server: a reader frames stdout into [`Inbound`] events (with
//! the bounded `LineReader`), a drain logs stderr within budgets, and a supervisor
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
use tokio::sync::{Mutex, mpsc, oneshot, watch};
use wasmgate_confine::{Confinement, ConfinementReport};

use super::lines::{Line, LineReader};
use super::process::{self, Graces, ReaderEnd};
use super::stderr::{self, StderrBudget};
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
        }
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
            max_line_bytes: wasmgate_protocol::Limits::DEFAULT.max_message_bytes,
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
    /// `None` once closed; a mutex so concurrent sends never interleave lines.
    stdin: Mutex<Option<ChildStdin>>,
    inbound: Option<mpsc::Receiver<Inbound>>,
    shutdown: std::sync::Mutex<Option<oneshot::Sender<()>>>,
    /// Set by the supervisor when the process is gone.
    finished: watch::Receiver<Option<CloseReason>>,
    shutdown_grace: Duration,
    /// What the kernel applied to the process (`None`: unconfined by config).
    confinement: Option<ConfinementReport>,
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
        let process::Spawned { mut child, confinement, cgroup } = process::spawn(config)?;
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
        let budget = StderrBudget {
            line_bytes: limits.stderr_line_bytes,
            lines_per_second: limits.stderr_lines_per_second,
            total_bytes: limits.stderr_total_bytes,
        };
        runtime.spawn(stderr::drain(config.name.clone(), stderr, budget));
        let graces = Graces { shutdown: limits.shutdown_grace, term: limits.term_grace, exit: limits.exit_grace };
        let name = config.name.clone();
        runtime.spawn(async move {
            let reason = process::supervise(child, reader_end, shutdown, graces, cgroup).await;
            tracing::debug!(server = %name, %reason, "stdio server ended");
            let _ = finished_tx.send(Some(reason.clone()));
            let _ = tx.send(Inbound::Closed(reason)).await;
        });
        tracing::debug!(server = %config.name, pid, "stdio server started");
        Ok(Self {
            name: config.name.clone(),
            pid,
            stdin: Mutex::new(Some(stdin)),
            inbound: Some(inbound),
            shutdown: std::sync::Mutex::new(Some(shutdown_tx)),
            finished,
            shutdown_grace: limits.shutdown_grace,
            confinement,
        })
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
            let mut stdin = self.stdin.lock().await;
            let Some(pipe) = stdin.as_mut() else {
                return Err(TransportError::Closed(CloseReason::ClosedByClient));
            };
            let written = async {
                pipe.write_all(&line).await?;
                pipe.flush().await
            };
            written.await.map_err(|e| TransportError::Closed(CloseReason::Io(format!("writing to the server: {e}"))))
        })
    }

    fn close(&self) -> BoxFuture<'_, CloseReason> {
        Box::pin(async move {
            // A send blocked on a full pipe holds the lock; the signals below unblock it.
            if let Ok(mut stdin) = tokio::time::timeout(self.shutdown_grace, self.stdin.lock()).await {
                stdin.take();
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
