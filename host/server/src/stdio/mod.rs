//! The stdio transport: newline-delimited JSON-RPC over a reader and a writer the
//! caller passes in (the process's stdin and stdout, or an in-memory pipe in tests).
//!
//! One reader loop frames and routes every message without waiting on the backend;
//! listing, calls and subscriptions run as tasks, so calls run concurrently, answers
//! go out in the order they finish, and `notifications/cancelled` is read while calls
//! run. One writer task owns the writer: every message is one line, written whole.
//! Nothing else may touch stdout; logs go through `tracing`.
//!
//! The session is the process: `initialize` makes it a handshake-era connection (and
//! starts announcing tool-list changes on it), while stamped 2026-07-28 requests are
//! served statelessly alongside. End of input, like the shutdown signal, starts the
//! graceful shutdown of the private `shutdown` module.

mod lines;

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use wasmgate_core::{Caller, CancellationToken, LogLevel};
use wasmgate_protocol::codes::{INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR};
use wasmgate_protocol::server::parse_cancelled;
use wasmgate_protocol::{Id, LineBatch, Message, ProtocolVersion, Request, classify, error_response, parse_message};

use crate::backend::Backend;
use crate::config::ServerConfig;
use crate::engine::Around;
use crate::engine::ask::{Live, Replies};
use crate::engine::calls::InFlight;
use crate::engine::follow::{Followed, forward};
use crate::engine::watch::{Changes, Listen, announce, listen};
use crate::engine::{Caps, Engine, Routed};
use crate::error::ServeError;
use crate::shutdown::Lifecycle;
pub use lines::{Line, next_line};

/// Messages waiting for the writer; beyond this, tasks wait (backpressure on a slow client).
const OUTBOX: usize = 64;

/// Serves `backend` on one stdio connection until end of input or `shutdown`, then
/// shuts down gracefully (see [`ServerConfig::shutdown_grace`]).
///
/// # Errors
///
/// [`ServeError::Stdio`] when reading or writing fails.
pub async fn serve_stdio<R, W, S>(
    backend: Arc<dyn Backend>,
    mut reader: R,
    writer: W,
    config: ServerConfig,
    shutdown: S,
) -> Result<(), ServeError>
where
    R: AsyncBufRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
    S: Future<Output = ()> + Send,
{
    let grace = config.shutdown_grace;
    let max = config.limits.max_message_bytes;
    let (tx, rx) = mpsc::channel(OUTBOX);
    let writer = tokio::spawn(write_lines(writer, rx));
    let mut conn = Connection {
        engine: Arc::new(Engine::new(backend, config)),
        life: Lifecycle::default(),
        replies: Arc::default(),
        followed: Arc::default(),
        caller: Arc::new(local_user()),
        conversation: next_connection(),
        tx,
        in_flight: Arc::new(InFlight::default()),
        handshake: None,
        caps: Caps::default(),
        log_level: None,
    };
    tokio::pin!(shutdown);
    let read = loop {
        let line = tokio::select! {
            biased;
            () = &mut shutdown => break Ok(()),
            line = next_line(&mut reader, max) => line,
        };
        match line {
            Ok(None) => break Ok(()),
            Ok(Some(Line::Oversized { len })) => {
                let message = format!("Parse error: message is {len} bytes, over the limit of {max} bytes");
                conn.send(error_response(None, PARSE_ERROR, &message, None)).await;
            }
            Ok(Some(Line::Message(bytes))) => conn.handle(&bytes).await,
            Err(error) => break Err(ServeError::Stdio(error)),
        }
        if conn.tx.is_closed() {
            break Ok(());
        }
    };
    tracing::debug!("stdio: input ended or shutdown requested; draining");
    conn.life.drain(grace).await;
    drop(conn);
    let written = match tokio::time::timeout(grace, writer).await {
        Ok(Ok(written)) => written.map_err(ServeError::Stdio),
        Ok(Err(_)) | Err(_) => Ok(()),
    };
    read.and(written)
}

/// Writes each message as one line until the channel closes. Messages already waiting
/// when a write starts go out in the same write ([`LineBatch`]), so answers to
/// pipelined requests share one wake-up of the client.
async fn write_lines<W: AsyncWrite + Unpin>(mut writer: W, mut rx: mpsc::Receiver<Value>) -> std::io::Result<()> {
    let mut batch = LineBatch::new();
    while let Some(message) = rx.recv().await {
        batch.clear();
        batch.push_message(&message)?;
        while batch.has_room() {
            let Ok(message) = rx.try_recv() else { break };
            batch.push_message(&message)?;
        }
        writer.write_all(batch.as_bytes()).await?;
        writer.flush().await?;
    }
    Ok(())
}

/// One stdio connection's state.
struct Connection {
    engine: Arc<Engine>,
    life: Lifecycle,
    tx: mpsc::Sender<Value>,
    in_flight: Arc<InFlight>,
    /// The version `initialize` negotiated, if the client opened the handshake way.
    handshake: Option<ProtocolVersion>,
    /// Whether the client's `initialize` declared `elicitation`: then an `ask` verdict
    /// is put to it while the call waits.
    caps: Caps,
    /// The level `logging/setLevel` set, if it did.
    log_level: Option<LogLevel>,
    /// Requests we sent the client (elicitation), waiting for their answers.
    replies: Arc<Replies>,
    /// The resources it follows (`resources/subscribe`).
    followed: Arc<Followed>,
    /// Who calls: over stdio, the local user who started the server.
    caller: Arc<Caller>,
    /// The conversation: this connection's own.
    conversation: Arc<str>,
}

/// A conversation name no other connection of this process has.
fn next_connection() -> Arc<str> {
    static CONNECTIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!("stdio {}", CONNECTIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)).into()
}

impl Connection {
    async fn send(&self, message: Value) {
        let _ = self.tx.send(message).await;
    }

    async fn handle(&mut self, bytes: &[u8]) {
        let value = match parse_message(bytes, self.engine.config.limits) {
            Ok(value) => value,
            Err(e) => {
                return self.send(error_response(None, e.jsonrpc_code(), &format!("Parse error: {e}"), None)).await;
            }
        };
        let id = value.get("id").and_then(|id| Id::from_value(id).ok());
        match classify(value) {
            Ok(Message::Request(request)) => self.request(request).await,
            Ok(Message::Notification(n)) if n.method == "notifications/cancelled" => {
                match parse_cancelled(n.params.as_ref()) {
                    Ok(cancelled) => {
                        tracing::debug!(id = %cancelled.request_id, reason = ?cancelled.reason, "cancelled by the client");
                        self.in_flight.cancel(&cancelled.request_id);
                    }
                    Err(e) => tracing::debug!(error = %e, "malformed notifications/cancelled ignored"),
                }
            }
            Ok(Message::Notification(n)) => tracing::debug!(method = %n.method, "notification"),
            Ok(Message::Response(response)) => self.replies.resolve(&response.id, Some(Value::Object(response.result))),
            Ok(Message::ErrorResponse(response)) => match response.id {
                Some(id) => self.replies.resolve(&id, None),
                None => tracing::debug!("an error response from the client without an id: ignored"),
            },
            Err(e) => {
                let message = format!("Invalid request: {e}");
                self.send(error_response(id.as_ref(), e.jsonrpc_code(), &message, None)).await;
            }
        }
    }

    async fn request(&mut self, request: Request) {
        let (engine, tx) = (Arc::clone(&self.engine), self.tx.clone());
        match self.engine.route(request, self.handshake) {
            Routed::Reply(answer) | Routed::Refuse(answer) | Routed::UnknownMethod(answer, _) => {
                self.send(answer).await
            }
            Routed::Initialized { answer, version, caps } => {
                self.caps = caps;
                self.send(answer).await;
                if self.handshake.replace(version).is_none() {
                    let changes = Changes::of(engine.backend.as_ref());
                    let stopping = self.life.stopping.clone();
                    self.life.tasks.spawn(forward(self.followed.updates(), tx.clone(), stopping.clone()));
                    self.life.tasks.spawn(announce(changes, tx, stopping));
                }
            }
            Routed::SetLevel { level, answer } => {
                self.log_level = Some(level);
                self.send(answer).await;
            }
            Routed::Subscribe { id, version, uri } => {
                // Answered when the upstream has subscribed: counted in flight meanwhile,
                // like a call, so a client cannot have them pile up without end.
                if let Some(refusal) = self.over_limit(&id) {
                    return self.send(refusal).await;
                }
                let Some(ticket) = self.in_flight.start(&id, &self.life.abort) else {
                    return self.send(duplicate(&id)).await;
                };
                let followed = Arc::clone(&self.followed);
                self.life.tasks.spawn(async move {
                    let answer = engine.subscribe(&followed, &id, version, uri).await;
                    if !ticket.cancelled_by_client() {
                        let _ = tx.send(answer).await;
                    }
                });
            }
            Routed::Unsubscribe { uri, answer } => {
                self.followed.unsubscribe(&uri);
                self.send(answer).await;
            }
            Routed::Run { id, version, mut job } => {
                job.log_at(self.log_level);
                if let Some(refusal) = self.over_limit(&id) {
                    return self.send(refusal).await;
                }
                let Some(ticket) = self.in_flight.start(&id, &self.life.abort) else {
                    return self.send(duplicate(&id)).await;
                };
                let live = (self.handshake.is_some() && self.caps.any()).then(|| {
                    let (out, replies) = (self.tx.clone(), Arc::clone(&self.replies));
                    let (timeout, cancel) = (engine.config.ask_timeout, ticket.token());
                    Arc::new(Live { out, replies, timeout, cancel, caps: self.caps })
                });
                let caller = Some(Arc::clone(&self.caller));
                let conversation = Arc::clone(&self.conversation);
                self.life.tasks.spawn(async move {
                    let conversation = Some(Arc::clone(&conversation));
                    let around = Around { notify: Some(tx.clone()), live, caller, conversation };
                    let answer = engine.run(&id, version, job, ticket.token(), around).await;
                    if !ticket.cancelled_by_client() {
                        let _ = tx.send(answer).await;
                    }
                });
            }
            Routed::Listen { id, version, filter } => {
                // A subscription lasts until it is cancelled or input ends: without the
                // bound, a client could open them without end.
                if let Some(refusal) = self.over_limit(&id) {
                    return self.send(refusal).await;
                }
                let Some(ticket) = self.in_flight.start(&id, &CancellationToken::new()) else {
                    return self.send(duplicate(&id)).await;
                };
                let (backend, stopping) = (Arc::clone(&engine.backend), self.life.stopping.clone());
                self.life.tasks.spawn(async move {
                    listen(Listen { id, version, filter }, backend, tx, stopping, ticket.token()).await;
                    drop(ticket);
                });
            }
        }
    }
}

impl Connection {
    /// The refusal of request `id` when calls and subscriptions in flight are at
    /// [`ServerConfig::max_calls_in_flight`].
    fn over_limit(&self, id: &Id) -> Option<Value> {
        (self.in_flight.len() >= self.engine.config.max_calls_in_flight).then(|| {
            let message = "Too many requests in flight on this connection; retry when one has finished";
            error_response(Some(id), INTERNAL_ERROR, message, None)
        })
    }
}

fn duplicate(id: &Id) -> Value {
    error_response(Some(id), INVALID_REQUEST, &format!("Invalid request: id {id} is already in flight"), None)
}

/// The local user, as the caller of a stdio connection: whoever started the server
/// (`$USER`, or `$LOGNAME`; `local` when neither is set).
fn local_user() -> Caller {
    let name = ["USER", "LOGNAME"].iter().find_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()));
    Caller { subject: name.unwrap_or_else(|| "local".into()), claims: serde_json::Map::new() }
}
