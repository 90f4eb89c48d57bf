//! Requests in flight and the reader task that answers them.
//!
//! Every request goes through [`Shared::round_trip`]: register the id, send, then wait
//! for the first of the answer, the caller's cancel, or the time limit. What arrives is
//! routed by [`run`], one message at a time in arrival order:
//!
//! * a response to a waiting request completes it; one for a request that was cancelled
//!   or timed out is a *late* response (debug log), one for an answered request a
//!   *duplicate*, one for an id never sent *unknown* (both warned): all are dropped;
//! * a malformed frame is logged and dropped, and fails the request it answered when
//!   that can be told (the `frames` module). The connection survives: only a run of
//!   `max_consecutive_malformed` bad frames in a row, which means the stream is not
//!   JSON-RPC at all, is a framing failure that closes it;
//! * notifications go to the `notify` module (tool cache, subscriptions, progress);
//!   server requests get an answer (`ping`: empty result; input requests: the handler;
//!   anything else: method not found), sent from their own task so a slow answer never
//!   stalls routing; at most [`MAX_SERVER_REQUESTS_IN_FLIGHT`] such tasks at a time, and
//!   a request beyond that is dropped unanswered (a server that floods requests without
//!   reading the answers would otherwise make the tasks pile up without bound), with a
//!   warning at the 1st, 2nd, 4th, 8th... drop;
//! * when the transport closes, every waiting request fails at once with the reason.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use wasmgate_protocol::codes::{INTERNAL_ERROR, METHOD_NOT_FOUND};
use wasmgate_protocol::{
    INPUT_REQUEST_METHODS, Id, Message, Request, classify, error_response, parse_message, result_response,
};

use super::Shared;
use super::config::ProgressFn;
use super::frames::leading_id;
use super::input::{InputDeclined, InputRequest};
use crate::error::{ClientError, CloseReason};
use crate::transport::stderr::escape;
use crate::transport::{Inbound, OVERSIZED_PREFIX_BYTES};

/// How many finished ids are remembered to tell late and duplicate responses apart.
const RECENT_IDS: usize = 1024;

/// How long the client tries to deliver a `notifications/cancelled`.
pub(crate) const CANCEL_SEND_LIMIT: Duration = Duration::from_secs(1);

/// Gives up on a request whose [`Shared::round_trip`] future is dropped before it
/// ends (a caller's own timeout, a `select!` that took another branch). Without it the
/// pending entry, and over HTTP the request's open stream, would stay until the
/// connection closes, and the server would never hear that nobody waits.
struct Unanswered<'a> {
    shared: &'a Shared,
    id: &'a Id,
    method: &'a str,
    armed: bool,
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.shared.abandon(self.id, self.method, "no longer awaited");
        }
    }
}

/// Most server requests being answered at once. An answer waits on the transport, and a
/// server that sends requests without reading what we write blocks it; past this many,
/// further requests are dropped (with a warning), never queued.
pub(crate) const MAX_SERVER_REQUESTS_IN_FLIGHT: usize = 64;

/// A successful answer: the result object and the size of the frame it came in.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) result: Map<String, Value>,
    pub(crate) bytes: usize,
}

/// Where a request's answer goes, counted in [`awaiting_answers`] while it waits (but
/// for a subscription's listen, whose answer ends the subscription).
struct Waiter {
    tx: oneshot::Sender<Result<Reply, ClientError>>,
    _awaiting: Option<Awaiting>,
}

impl Waiter {
    fn send(self, outcome: Result<Reply, ClientError>) -> Result<(), Result<Reply, ClientError>> {
        self.tx.send(outcome)
    }
}

/// Requests of every client in this process that wait for an answer.
static AWAITING: AtomicUsize = AtomicUsize::new(0);

/// One request waiting for its answer, in [`AWAITING`] until it is dropped, however it
/// ends: answered, failed, abandoned, or its client dropped.
struct Awaiting;

impl Awaiting {
    fn new() -> Self {
        AWAITING.fetch_add(1, Ordering::Relaxed);
        Awaiting
    }
}

impl Drop for Awaiting {
    fn drop(&mut self) {
        AWAITING.fetch_sub(1, Ordering::Relaxed);
    }
}

/// How many requests, of every client in this process, wait for a server's answer now
/// (a subscription's long-lived listen is not one): `wasmgate serve` does not spin
/// while it waits on an upstream, whose process may need the core it would spin on.
#[must_use]
pub fn awaiting_answers() -> usize {
    AWAITING.load(Ordering::Relaxed)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Finished {
    Answered,
    Abandoned,
}

/// The in-flight table.
#[derive(Default)]
pub(crate) struct Table {
    pending: HashMap<Id, Waiter>,
    recent: VecDeque<(Id, Finished)>,
    recent_ids: HashSet<Id>,
    progress: HashMap<Id, ProgressFn>,
    closed: Option<CloseReason>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("pending", &self.pending.len())
            .field("progress", &self.progress.len())
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

impl Table {
    fn remember(&mut self, id: Id, how: Finished) {
        if self.recent.len() >= RECENT_IDS
            && let Some((old, _)) = self.recent.pop_front()
        {
            self.recent_ids.remove(&old);
        }
        self.recent_ids.insert(id.clone());
        self.recent.push_back((id, how));
    }

    fn finished(&self, id: &Id) -> Option<Finished> {
        if !self.recent_ids.contains(id) {
            return None;
        }
        self.recent.iter().rev().find(|(seen, _)| seen == id).map(|(_, how)| *how)
    }
}

/// The reader task. Holds the client weakly, so dropping every handle ends it.
pub(crate) async fn run(client: Weak<Shared>, mut inbound: mpsc::Receiver<Inbound>) {
    let mut malformed_run = 0usize;
    while let Some(event) = inbound.recv().await {
        let Some(shared) = client.upgrade() else { return };
        let well_formed = match event {
            Inbound::Frame(frame) => shared.on_frame(&frame),
            Inbound::Oversized { prefix, len } => {
                shared.on_oversized(&prefix, len);
                false
            }
            Inbound::Exchange { id, error } => {
                shared.fail_if_pending(&id, error.into());
                true
            }
            Inbound::Closed(reason) => {
                shared.fail_all(reason);
                return;
            }
        };
        malformed_run = if well_formed { 0 } else { malformed_run + 1 };
        if malformed_run > shared.config.max_consecutive_malformed {
            let reason = CloseReason::Framing(format!("{malformed_run} malformed messages in a row"));
            tracing::warn!(server = %shared.server, %reason, "closing the connection");
            shared.fail_all(reason);
            let transport = Arc::clone(&shared.transport);
            tokio::spawn(async move { transport.close().await });
            return;
        }
    }
    if let Some(shared) = client.upgrade() {
        shared.fail_all(CloseReason::StreamEnded);
    }
}

impl Shared {
    pub(crate) fn next_id(&self) -> Id {
        Id::Int(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn closed_reason(&self) -> Option<CloseReason> {
        self.table().closed.clone()
    }

    /// Sends `message` (a request with id `id`, and `headers` for transports that mirror
    /// tool parameters) and waits for its answer, the cancel, or
    /// `timeout`. A cancelled or timed-out request is cancelled upstream.
    pub(crate) async fn round_trip(
        &self,
        method: &str,
        id: Id,
        message: Value,
        headers: Vec<(String, String)>,
        timeout: Duration,
        cancel: Option<&CancellationToken>,
    ) -> Result<Reply, ClientError> {
        let answer = self.register(&id)?;
        let mut unanswered = Unanswered { shared: self, id: &id, method, armed: true };
        let exchange = async {
            self.transport.send_with_headers(message, headers).await?;
            answer.await.unwrap_or_else(|_| {
                Err(ClientError::TransportClosed { reason: self.closed_reason().unwrap_or(CloseReason::StreamEnded) })
            })
        };
        let never = CancellationToken::new();
        let cancel = cancel.unwrap_or(&never);
        let outcome = tokio::select! {
            biased;
            outcome = exchange => outcome,
            () = cancel.cancelled() => Err(ClientError::Cancelled),
            () = tokio::time::sleep(timeout) => Err(ClientError::Timeout { method: method.to_owned(), after: timeout }),
        };
        unanswered.armed = false;
        match &outcome {
            Err(ClientError::Cancelled) => self.abandon(&id, method, "cancelled by the caller"),
            Err(ClientError::Timeout { .. }) => self.abandon(&id, method, "timed out"),
            _ => {
                self.table().pending.remove(&id);
                self.transport.release(&id);
            }
        }
        outcome
    }

    /// Registers request `id` as waiting for an answer, unless the connection is gone.
    pub(crate) fn register(&self, id: &Id) -> Result<oneshot::Receiver<Result<Reply, ClientError>>, ClientError> {
        self.register_as(id, Some(Awaiting::new()))
    }

    /// Registers a subscription's listen request `id`, which is answered only when the
    /// subscription ends: not counted in [`awaiting_answers`].
    pub(crate) fn register_listen(
        &self,
        id: &Id,
    ) -> Result<oneshot::Receiver<Result<Reply, ClientError>>, ClientError> {
        self.register_as(id, None)
    }

    fn register_as(
        &self,
        id: &Id,
        awaiting: Option<Awaiting>,
    ) -> Result<oneshot::Receiver<Result<Reply, ClientError>>, ClientError> {
        let mut table = self.table();
        if let Some(reason) = &table.closed {
            return Err(ClientError::TransportClosed { reason: reason.clone() });
        }
        let (tx, rx) = oneshot::channel();
        table.pending.insert(id.clone(), Waiter { tx, _awaiting: awaiting });
        Ok(rx)
    }

    /// Gives up on request `id`: later answers are ignored, and the server is told
    /// (see [`give_up`](Self::give_up)) from a task of its own.
    ///
    /// The send is bounded by [`CANCEL_SEND_LIMIT`]: a stdio server that stopped reading
    /// its input would otherwise keep one task per abandoned request until close.
    pub(crate) fn abandon(&self, id: &Id, method: &str, reason: &str) {
        let Some(message) = self.give_up(id, method, reason) else { return };
        // Outside a runtime (a request future dropped after its runtime ended) the
        // request is forgotten all the same; only the notice is not sent.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let transport = Arc::clone(&self.transport);
        runtime.spawn(async move {
            match tokio::time::timeout(CANCEL_SEND_LIMIT, transport.send(message)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::debug!(error = %e, "could not send notifications/cancelled"),
                Err(_) => tracing::debug!("the server is not reading: notifications/cancelled not sent"),
            }
        });
    }

    /// Forgets request `id` (later answers are late) and releases its stream, which on
    /// HTTP in the stateless era is the cancellation; returns the
    /// `notifications/cancelled` still to send otherwise. The opening requests are never
    /// cancelled: the spec forbids cancelling `initialize`, and a probe may be answered by
    /// a server that has not been initialized.
    pub(crate) fn give_up(&self, id: &Id, method: &str, reason: &str) -> Option<Value> {
        {
            let mut table = self.table();
            table.pending.remove(id);
            table.remember(id.clone(), Finished::Abandoned);
        }
        self.transport.release(id);
        let session = self.session().ok()?;
        let closes_stream = session.version().is_stateless() && self.transport.cancel_closes_stream();
        if closes_stream || matches!(method, "initialize" | "server/discover") {
            return None;
        }
        tracing::debug!(server = %self.server, %id, reason, "cancelling request");
        Some(session.context.cancelled(id, Some(reason)))
    }

    pub(crate) fn watch_progress(&self, token: &Id, callback: ProgressFn) {
        self.table().progress.insert(token.clone(), callback);
    }

    pub(crate) fn unwatch_progress(&self, token: &Id) {
        self.table().progress.remove(token);
    }

    pub(crate) fn progress_callback(&self, token: &Id) -> Option<ProgressFn> {
        self.table().progress.get(token).cloned()
    }

    /// Fails every waiting request and refuses new ones.
    pub(crate) fn fail_all(&self, reason: CloseReason) {
        let waiters: Vec<Waiter> = {
            let mut table = self.table();
            if table.closed.is_none() {
                table.closed = Some(reason.clone());
            }
            table.pending.drain().map(|(_, waiter)| waiter).collect()
        };
        if !waiters.is_empty() {
            tracing::debug!(server = %self.server, %reason, failed = waiters.len(), "failing requests in flight");
        }
        for waiter in waiters {
            let _ = waiter.send(Err(ClientError::TransportClosed { reason: reason.clone() }));
        }
    }

    pub(crate) fn fail_if_pending(&self, id: &Id, error: ClientError) {
        let waiter = {
            let mut table = self.table();
            let waiter = table.pending.remove(id);
            if waiter.is_some() {
                table.remember(id.clone(), Finished::Answered);
            }
            waiter
        };
        if let Some(waiter) = waiter {
            let _ = waiter.send(Err(error));
        }
    }

    fn complete(&self, id: Id, outcome: Result<Reply, ClientError>) {
        let waiter = {
            let mut table = self.table();
            match table.pending.remove(&id) {
                Some(waiter) => {
                    table.remember(id, Finished::Answered);
                    waiter
                }
                None => {
                    match table.finished(&id) {
                        Some(Finished::Abandoned) => {
                            tracing::debug!(server = %self.server, %id, "late response to a cancelled request ignored");
                        }
                        Some(Finished::Answered) => {
                            if let Some(count) = self.noise.duplicate_responses.count() {
                                tracing::warn!(server = %self.server, %id, count, "duplicate response dropped");
                            }
                        }
                        None => {
                            if let Some(count) = self.noise.stray_responses.count() {
                                tracing::warn!(server = %self.server, %id, count, "response with an unknown id dropped");
                            }
                        }
                    }
                    return;
                }
            }
        };
        let _ = waiter.send(outcome);
    }

    /// Routes one frame; false if it was malformed.
    fn on_frame(self: &Arc<Self>, frame: &Bytes) -> bool {
        let value = match parse_message(frame, self.config.limits) {
            Ok(value) => value,
            Err(error) => {
                let prefix = &frame[..frame.len().min(OVERSIZED_PREFIX_BYTES)];
                self.reject(leading_id(prefix), &error.to_string(), prefix);
                return false;
            }
        };
        // The id a broken *response* answers; requests' ids are the server's own.
        let answers = match value.get("method") {
            None => value.get("id").and_then(|id| Id::from_value(id).ok()),
            Some(_) => None,
        };
        match classify(value) {
            Ok(message) => {
                self.dispatch(message, frame.len());
                true
            }
            Err(error) => {
                self.reject(answers, &error.to_string(), &frame[..frame.len().min(256)]);
                false
            }
        }
    }

    fn on_oversized(&self, prefix: &[u8], len: usize) {
        let detail = format!("a {len}-byte message is over the size limit");
        self.reject(leading_id(prefix), &detail, &prefix[..prefix.len().min(256)]);
    }

    fn reject(&self, answers: Option<Id>, detail: &str, sample: &[u8]) {
        if let Some(count) = self.noise.malformed.count() {
            let start = escape(&sample[..sample.len().min(256)]);
            tracing::warn!(server = %self.server, detail, %start, count, "malformed message dropped");
        }
        if let Some(id) = answers {
            self.fail_if_pending(&id, ClientError::MalformedMessage { detail: detail.to_owned() });
        }
    }

    fn dispatch(self: &Arc<Self>, message: Message, bytes: usize) {
        match message {
            Message::Response(response) => self.complete(response.id, Ok(Reply { result: response.result, bytes })),
            Message::ErrorResponse(response) => {
                let error = response.error;
                let rpc = ClientError::Rpc { code: error.code, message: error.message, data: error.data };
                match response.id {
                    Some(id) => self.complete(id, Err(rpc)),
                    None => {
                        if let Some(count) = self.noise.idless_errors.count() {
                            tracing::warn!(server = %self.server, error = %rpc, count, "error response without an id dropped");
                        }
                    }
                }
            }
            Message::Notification(notification) => self.on_notification(notification),
            Message::Request(request) => self.on_server_request(request),
        }
    }

    fn on_server_request(self: &Arc<Self>, request: Request) {
        let Ok(permit) = Arc::clone(&self.server_requests).try_acquire_owned() else {
            if let Some(dropped) = self.noise.server_requests_dropped.count() {
                tracing::warn!(
                    server = %self.server,
                    method = %request.method,
                    dropped,
                    "server request dropped: {MAX_SERVER_REQUESTS_IN_FLIGHT} earlier ones are still being answered"
                );
            }
            return;
        };
        let shared = Arc::clone(self);
        tokio::spawn(async move {
            let _permit = permit;
            let Request { id, method, params } = request;
            let handler = shared
                .calls_in_flight
                .only()
                .or_else(|| shared.config.input_handler.clone())
                .filter(|_| INPUT_REQUEST_METHODS.contains(&&*method));
            let reply = match (method.as_str(), handler) {
                ("ping", _) => result_response(&id, Map::new()),
                (_, Some(handler)) => match handler.answer(InputRequest { method: method.clone(), params }).await {
                    Ok(Value::Object(result)) => result_response(&id, result),
                    Ok(_) => error_response(Some(&id), INTERNAL_ERROR, "the client's answer is not an object", None),
                    Err(InputDeclined::Unsupported) => {
                        error_response(Some(&id), METHOD_NOT_FOUND, "Method not found", None)
                    }
                    Err(InputDeclined::Failed(why)) => error_response(Some(&id), INTERNAL_ERROR, &why, None),
                    Err(InputDeclined::Deferred) => error_response(
                        Some(&id),
                        INTERNAL_ERROR,
                        "the client can answer this only with a later call, and this request cannot wait for one",
                        None,
                    ),
                },
                _ => {
                    tracing::debug!(server = %shared.server, %method, "server request not supported");
                    error_response(Some(&id), METHOD_NOT_FOUND, "Method not found", None)
                }
            };
            if let Err(e) = shared.transport.send(reply).await {
                tracing::debug!(server = %shared.server, error = %e, "could not answer a server request");
            }
        });
    }
}
