//! Reloading a running gateway's rules and providers: SIGHUP, or `wasmgate reload`
//! (what a reload does: `wasmgate_gateway::reload`).
//!
//! Each `wasmgate serve` listens on a Unix socket of its own,
//! `<state_dir>/control/<pid>.sock` (the state directory is its owner's only), for one
//! line: `reload`. It answers `reloaded` (with the providers started and stopped and
//! what needs a restart, if anything) or `refused: WHY`, one line. `wasmgate reload` asks every gateway of the configuration
//! this way, so whoever edits the files sees at once whether they were taken; SIGHUP
//! does the same, with the outcome in the gateway's log. Either way the outcome is in
//! the audit log (a `reload` record).

use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Args;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{UnixListener, UnixStream};
use wasmgate_gateway::{Gateway, GatewayBackend};

use crate::open::ConfigArgs;

/// The request line.
const RELOAD: &str = "reload";
/// The most bytes of a request or an answer line read.
const MAX_LINE: u64 = 64 * 1024;
/// How long `wasmgate reload` waits for a gateway's answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// What a gateway needs to reload: itself, its server face, and its configuration file.
pub struct Reloader {
    pub gateway: Arc<Gateway>,
    pub backend: Arc<GatewayBackend>,
    pub path: PathBuf,
}

impl Reloader {
    /// Reloads, tells clients what changed, and answers with one line.
    pub async fn reload(&self) -> String {
        match self.gateway.reload(&self.path).await {
            Ok(reloaded) => {
                self.backend.reloaded(&self.gateway, &reloaded).await;
                let mut answer = "reloaded".to_owned();
                if !reloaded.started.is_empty() {
                    answer.push_str(&format!("; started {}", reloaded.started.join(", ")));
                }
                if !reloaded.stopped.is_empty() {
                    answer.push_str(&format!("; stopped {}", reloaded.stopped.join(", ")));
                }
                if !reloaded.restart.is_empty() {
                    answer.push_str(&format!("; these apply when it starts again: {}", reloaded.restart.join("; ")));
                }
                answer
            }
            Err(error) => format!("refused: {}", error.one_line()),
        }
    }
}

/// The directory of the control sockets of `state_dir`'s gateways.
fn control_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("control")
}

/// Watches for SIGHUP from now on (so that one never ends the process, as it would by
/// default), for [`on_hangup`].
///
/// # Errors
///
/// When the signal cannot be watched.
pub fn hangups() -> anyhow::Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).context("cannot watch for SIGHUP")
}

/// Reloads on every SIGHUP of `hangup`.
pub fn on_hangup(mut hangup: tokio::signal::unix::Signal, reloader: Arc<Reloader>) {
    tokio::spawn(async move {
        while hangup.recv().await.is_some() {
            let outcome = reloader.reload().await;
            tracing::info!(outcome = %outcome, "SIGHUP");
        }
    });
}

/// The control socket of this process; removed when dropped.
pub struct Control {
    path: PathBuf,
}

impl Drop for Control {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Listens on this process's control socket under `state_dir`. A socket that cannot be
/// made is logged and skipped: SIGHUP still reloads.
pub fn listen(state_dir: &Path, reloader: Arc<Reloader>) -> Option<Control> {
    let dir = control_dir(state_dir);
    let made = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir);
    let path = dir.join(format!("{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let listener = match made.and_then(|()| UnixListener::bind(&path)) {
        Ok(listener) => listener,
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "no control socket: `wasmgate reload` cannot reach this gateway (SIGHUP still reloads)");
            return None;
        }
    };
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let reloader = Arc::clone(&reloader);
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut line = String::new();
                let mut reader = BufReader::new(read.take(MAX_LINE));
                let read = reader.read_line(&mut line);
                let answer = match tokio::time::timeout(ANSWER_TIMEOUT, read).await {
                    Ok(Ok(_)) if line.trim() == RELOAD => reloader.reload().await,
                    _ => "refused: the only request is `reload`".to_owned(),
                };
                let _ = write.write_all(format!("{answer}\n").as_bytes()).await;
            });
        }
    });
    Some(Control { path })
}

#[derive(Debug, Args)]
pub struct ReloadArgs {
    #[command(flatten)]
    config: ConfigArgs,
}

/// `wasmgate reload`: asks every running gateway of the configuration to read its
/// rules again, and prints each answer. False (exit status 2) when one refused.
pub async fn run(args: ReloadArgs) -> anyhow::Result<bool> {
    let config = args.config.load()?;
    let dir = control_dir(&config.state_dir);
    let mut sockets: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "sock"))
            .collect(),
        Err(_) => Vec::new(),
    };
    sockets.sort();
    let mut reached = 0;
    let mut all_taken = true;
    for socket in sockets {
        let pid = socket.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let mut stream = match UnixStream::connect(&socket).await {
            Ok(stream) => stream,
            Err(_) => {
                // Left by a gateway that did not end cleanly.
                let _ = std::fs::remove_file(&socket);
                continue;
            }
        };
        reached += 1;
        let asked = async {
            stream.write_all(format!("{RELOAD}\n").as_bytes()).await?;
            let mut line = String::new();
            BufReader::new(stream.take(MAX_LINE)).read_line(&mut line).await?;
            Ok::<String, std::io::Error>(line.trim_end().to_owned())
        };
        let answer = match tokio::time::timeout(ANSWER_TIMEOUT, asked).await {
            Ok(Ok(answer)) if !answer.is_empty() => answer,
            Ok(Ok(_)) => "refused: no answer".to_owned(),
            Ok(Err(e)) => format!("refused: {e}"),
            Err(_) => format!("refused: no answer within {} s", ANSWER_TIMEOUT.as_secs()),
        };
        all_taken &= !answer.starts_with("refused");
        println!("gateway {pid}: {answer}");
    }
    if reached == 0 {
        bail!(
            "no running gateway of {} answered (looked for control sockets in {}); start one with `wasmgate serve`",
            config.path.display(),
            dir.display()
        );
    }
    Ok(all_taken)
}
