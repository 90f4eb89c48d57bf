//! The control socket of a running gateway: reloading its rules and providers (SIGHUP,
//! or `wasmgate reload`; what a reload does: `wasmgate_gateway::reload`) and reviewing
//! through it (`wasmgate review`; what a decision does: `wasmgate_gateway::review`).
//!
//! Each `wasmgate serve` listens on a Unix socket of its own,
//! `<state_dir>/control/<pid>.sock` (the state directory is its owner's only, so only
//! that user and root can connect), for one request line, and answers one line:
//!
//! * `reload`: `reloaded` (with the providers started and stopped and what needs a
//!   restart, if anything) or `refused: WHY`. `wasmgate reload` asks every gateway of
//!   the configuration this way, so whoever edits the files sees at once whether they
//!   were taken; SIGHUP does the same, with the outcome in the gateway's log. Either way
//!   the outcome is in the audit log (a `reload` record).
//! * `reviews`: what waits for review, as one line of JSON (`wasmgate_gateway::Reviews`),
//!   or `refused: WHY`.
//! * `decide {JSON}` (a `wasmgate_gateway::Decision`): `approved: WHAT`, `refused as
//!   asked: WHAT`, or `refused: WHY`.
//! * `approvals`: the calls waiting for a reviewer's answer (the policy's
//!   `ask_reviewers`), as one line of JSON (`wasmgate_guard::PendingAsk`s).
//! * `answer {"id": ..., "approve": true}`: `approved: ID`, `denied: ID`, or `refused:
//!   WHY` (nothing waits under that id, or it is the reviewer's own call).
//!
//! The reviewer a decision or an answer is made by is the user the kernel says is at the
//! other end of the socket (`local user alice (uid 1000)` in the audit log).

use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Args;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{UnixListener, UnixStream};
use wasmgate_gateway::{Decision, Gateway, GatewayBackend};
use wasmgate_guard::Reviewer;

use crate::open::ConfigArgs;

/// The request lines.
const RELOAD: &str = "reload";
const REVIEWS: &str = "reviews";
const DECIDE: &str = "decide ";
/// The request lines about asks routed to reviewers.
pub const APPROVALS: &str = "approvals";
const ANSWER: &str = "answer ";
/// The most bytes of a request line read, and of an answer but for `reviews`.
pub const MAX_LINE: u64 = 64 * 1024;
/// The most bytes of an answer to `reviews` read (definitions are bounded by the
/// client's limits on what a provider sends).
pub const MAX_REVIEWS_LINE: u64 = 64 * 1024 * 1024;
/// How long a client waits for a gateway's answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// What the control socket acts on: the gateway, its server face, and its
/// configuration file.
pub struct Controller {
    pub gateway: Arc<Gateway>,
    pub backend: Arc<GatewayBackend>,
    pub path: PathBuf,
}

impl Controller {
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

    /// The answer to one request line from the user `uid` (`None`: the kernel did not say).
    async fn answer(&self, request: &str, uid: Option<u32>) -> String {
        if request == RELOAD {
            return self.reload().await;
        }
        if request == REVIEWS {
            return match self.gateway.reviews(&self.path).await {
                Ok(reviews) => serde_json::to_string(&reviews).unwrap_or_else(|e| format!("refused: {e}")),
                Err(error) => format!("refused: {}", error.one_line()),
            };
        }
        if request == APPROVALS {
            let pending = self.gateway.guard.reviewers().pending_anywhere().await;
            return serde_json::to_string(&pending).unwrap_or_else(|e| format!("refused: {e}"));
        }
        if let Some(answer) = request.strip_prefix(ANSWER) {
            return self.answer_ask(answer, uid).await;
        }
        let Some(decision) = request.strip_prefix(DECIDE) else {
            return "refused: the requests are `reload`, `reviews`, `decide {JSON}`, `approvals` and `answer {JSON}`"
                .to_owned();
        };
        let decision: Decision = match serde_json::from_str(decision) {
            Ok(decision) => decision,
            Err(e) => return format!("refused: not a decision: {e}"),
        };
        let Some(uid) = uid else {
            return "refused: the kernel does not say who is asking, and a decision needs a reviewer".to_owned();
        };
        match self.backend.decide(&self.gateway, &self.path, &decision, &local_reviewer(uid).shown).await {
            Ok(outcome) => outcome,
            Err(error) => format!("refused: {}", one_line(&error.to_string())),
        }
    }

    /// Answers a pending ask as the local user `uid`: `approved: ID`, `denied: ID`, or
    /// `refused: WHY`.
    async fn answer_ask(&self, answer: &str, uid: Option<u32>) -> String {
        let answer: AskAnswer = match serde_json::from_str(answer) {
            Ok(answer) => answer,
            Err(e) => return format!("refused: not an answer: {e}"),
        };
        let Some(uid) = uid else {
            return "refused: the kernel does not say who is asking, and an answer needs a reviewer".to_owned();
        };
        match self.gateway.guard.reviewers().answer_anywhere(&answer.id, answer.approve, &local_reviewer(uid)).await {
            Ok(()) if answer.approve => format!("approved: {}", answer.id),
            Ok(()) => format!("denied: {}", answer.id),
            Err(error) => format!("refused: {error}"),
        }
    }
}

/// A reviewer's answer to a pending ask (`answer {JSON}`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AskAnswer {
    /// The ask's id, as `approvals` shows it.
    pub id: String,
    /// Let the call run, or deny it.
    pub approve: bool,
}

/// The request line answering a pending ask.
pub fn answer_request(answer: &AskAnswer) -> String {
    format!("{ANSWER}{}", serde_json::to_string(answer).unwrap_or_default())
}

/// `text` on one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The most bytes of `/etc/passwd` read to name a user.
const MAX_PASSWD_BYTES: u64 = 4 * 1024 * 1024;

/// The local user `uid` as a reviewer: named by their login name from `/etc/passwd`
/// (`uid N` when it has none), shown as `local user NAME (uid N)`. The gateway's own
/// user also carries the names it gives its stdio caller (`$USER`, `$LOGNAME`,
/// `local`), so they cannot answer the calls they make over stdio.
pub fn local_reviewer(uid: u32) -> Reviewer {
    let mut passwd = String::new();
    let read = std::fs::File::open("/etc/passwd")
        .and_then(|file| std::io::Read::read_to_string(&mut std::io::Read::take(file, MAX_PASSWD_BYTES), &mut passwd));
    let name = read.ok().and_then(|_| {
        passwd.lines().find_map(|line| {
            let mut fields = line.split(':');
            let name = fields.next()?;
            let id = fields.nth(1)?;
            (id.parse::<u32>().ok() == Some(uid) && !name.is_empty()).then(|| name.to_owned())
        })
    });
    let (name, shown) = match name {
        Some(name) => (name.clone(), format!("local user {name} (uid {uid})")),
        None => (format!("uid {uid}"), format!("local user (uid {uid})")),
    };
    let mut names = vec![name];
    if uid == rustix::process::geteuid().as_raw() {
        let stdio = ["USER", "LOGNAME"].iter().filter_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()));
        names.extend(stdio.chain(std::iter::once("local".to_owned())));
    }
    Reviewer { names, shown }
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
pub fn on_hangup(mut hangup: tokio::signal::unix::Signal, controller: Arc<Controller>) {
    tokio::spawn(async move {
        while hangup.recv().await.is_some() {
            let outcome = controller.reload().await;
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
pub fn listen(state_dir: &Path, controller: Arc<Controller>) -> Option<Control> {
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
            let controller = Arc::clone(&controller);
            tokio::spawn(async move {
                let uid = stream.peer_cred().ok().map(|cred| cred.uid());
                let (read, mut write) = stream.into_split();
                let mut line = String::new();
                let mut reader = BufReader::new(read.take(MAX_LINE));
                let read = reader.read_line(&mut line);
                let answer = match tokio::time::timeout(ANSWER_TIMEOUT, read).await {
                    Ok(Ok(n)) if line.ends_with('\n') || (n as u64) < MAX_LINE => {
                        controller.answer(line.trim(), uid).await
                    }
                    Ok(Ok(_)) => format!("refused: a request is one line of at most {MAX_LINE} bytes"),
                    Ok(Err(e)) => format!("refused: {e}"),
                    Err(_) => format!("refused: no request within {} s", ANSWER_TIMEOUT.as_secs()),
                };
                let _ = write.write_all(format!("{answer}\n").as_bytes()).await;
            });
        }
    });
    Some(Control { path })
}

/// The control sockets of `state_dir`'s gateways, in order.
fn sockets(state_dir: &Path) -> Vec<PathBuf> {
    let mut sockets: Vec<PathBuf> = match std::fs::read_dir(control_dir(state_dir)) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "sock"))
            .collect(),
        Err(_) => Vec::new(),
    };
    sockets.sort();
    sockets
}

/// A running gateway's control socket, connected.
pub struct Connection {
    /// The gateway's process id, as its socket names it.
    pub pid: String,
    socket: PathBuf,
}

impl Connection {
    /// Every running gateway of `config` that accepts a connection, or an error saying
    /// none does and how to start one.
    ///
    /// # Errors
    ///
    /// No gateway of `config` answered.
    pub async fn running(config: &wasmgate_gateway::Config) -> anyhow::Result<Vec<Connection>> {
        let gateways = Self::all(&config.state_dir).await;
        if gateways.is_empty() {
            bail!(
                "no running gateway of {} answered (looked for control sockets in {}); start one with `wasmgate serve`",
                config.path.display(),
                control_dir(&config.state_dir).display()
            );
        }
        Ok(gateways)
    }

    /// Every running gateway of `state_dir` that accepts a connection. A socket nobody
    /// listens on (the connection refused) was left by a gateway that did not end
    /// cleanly: it is removed. One that fails otherwise (a gateway too busy to accept)
    /// is left alone.
    pub async fn all(state_dir: &Path) -> Vec<Connection> {
        let mut found = Vec::new();
        for socket in sockets(state_dir) {
            match UnixStream::connect(&socket).await {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    let _ = std::fs::remove_file(&socket);
                    continue;
                }
                Err(e) => {
                    tracing::warn!(socket = %socket.display(), error = %e, "a gateway's control socket cannot be reached");
                    continue;
                }
            }
            let pid = socket.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            found.push(Connection { pid, socket });
        }
        found
    }

    /// The gateway's answer to `request` (one line), read up to `max` bytes; an error
    /// when it cannot be asked or gives no answer in time.
    pub async fn ask(&self, request: &str, max: u64) -> anyhow::Result<String> {
        let asked = async {
            let mut stream = UnixStream::connect(&self.socket).await?;
            stream.write_all(format!("{request}\n").as_bytes()).await?;
            let mut line = String::new();
            BufReader::new(stream.take(max)).read_line(&mut line).await?;
            Ok::<String, std::io::Error>(line.trim_end().to_owned())
        };
        match tokio::time::timeout(ANSWER_TIMEOUT, asked).await {
            Ok(Ok(answer)) if !answer.is_empty() => Ok(answer),
            Ok(Ok(_)) => bail!("gateway {} gave no answer", self.pid),
            Ok(Err(e)) => Err(e).with_context(|| format!("cannot ask gateway {}", self.pid)),
            Err(_) => bail!("gateway {} gave no answer within {} s", self.pid, ANSWER_TIMEOUT.as_secs()),
        }
    }
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
    let gateways = Connection::running(&config).await?;
    let mut all_taken = true;
    for gateway in gateways {
        let answer = gateway.ask(RELOAD, MAX_LINE).await.unwrap_or_else(|e| format!("refused: {e:#}"));
        all_taken &= !answer.starts_with("refused");
        println!("gateway {}: {answer}", gateway.pid);
    }
    Ok(all_taken)
}

/// The request line of `decision`.
pub fn decide_request(decision: &Decision) -> String {
    format!("{DECIDE}{}", serde_json::to_string(decision).unwrap_or_default())
}

/// The request line asking what waits for review.
pub const REVIEWS_REQUEST: &str = REVIEWS;
