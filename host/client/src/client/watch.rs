//! Keeping open the stream that says the tool list changed, on every transport and era.
//!
//! The tool list is cached (a `tools/list` per model turn would be wasteful), and a
//! cache is only as good as the news of its staleness. Where that news comes from:
//!
//! * **stdio, handshake era**: the server writes `notifications/tools/list_changed` to
//!   the one pipe whenever it likes. Nothing to open.
//! * **Streamable HTTP, handshake era**: a notification that answers no request can only
//!   travel on the standalone GET stream. The watcher opens it (see
//!   `transport::http::stream`); a 405 means the server offers none, and nothing more is
//!   tried.
//! * **2026-07-28, any transport**: only on a `subscriptions/listen` stream opened with
//!   `toolsListChanged: true`; the server may send nobody a change it was not asked for.
//!   The stream is live once `notifications/subscriptions/acknowledged` arrives stamped
//!   with the request's id and honoring `toolsListChanged`.
//!
//! A stream is opened only when the server declares `tools.listChanged: true`, which is
//! exactly its promise to send these notifications, or, for the handshake era's GET
//! stream, when the client has an input handler: a server's requests for input that are
//! not tied to a call travel there too.
//!
//! The cache is trusted only while the watch is [`Off`](ToolsWatch::Off) or
//! [`Active`](ToolsWatch::Active). While it is (re)connecting, or after it failed for
//! good, the list is fetched again on every use: a safe default that costs requests,
//! never correctness. Becoming active again also makes the cache stale, since a change
//! may have happened while nobody was listening.
//!
//! A stream that ends, breaks, is refused, or is not acknowledged within the request
//! timeout is retried with doubling delays (`ToolsWatchConfig`), at most `max_attempts`
//! times in a row; a stream that stayed open `max_backoff` or longer resets the count.
//! A server that does not implement `subscriptions/listen` or will not honor
//! `toolsListChanged` is not retried. [`stop`] (from `close`) ends the stream: on HTTP by
//! closing it, on stdio with `notifications/cancelled` for the listen request.

use std::sync::{Arc, PoisonError, Weak};
use std::time::Instant;

use tokio::sync::oneshot;
use wasmgate_protocol::codes::METHOD_NOT_FOUND;
use wasmgate_protocol::{Id, LISTEN, SubscriptionFilter, declares_list_changed};

use super::Shared;
use super::router::{CANCEL_SEND_LIMIT, Reply};
use crate::error::{ClientError, TransportError};

/// How the client learns that the server's tool list changed.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolsWatch {
    /// No stream to keep: changes arrive anyway (stdio in the handshake era), the server
    /// does not declare `tools.listChanged` or offers no GET stream, or watching is
    /// disabled. The cache is trusted until a change notification or an unknown tool.
    Off,
    /// Opening or re-opening the stream. The tool list is fetched on every use meanwhile.
    Connecting,
    /// The stream is open: the cache is trusted until a change arrives on it.
    Active,
    /// Retries are used up, or the server will not send tool changes: the tool list is
    /// fetched on every use for the rest of the connection.
    Failed,
}

impl ToolsWatch {
    /// Whether a cached tool list may be served in this state.
    #[must_use]
    pub fn trusts_cache(self) -> bool {
        matches!(self, Self::Off | Self::Active)
    }
}

/// Which stream the server offers.
#[derive(Debug, Clone, Copy)]
enum Mode {
    Listen,
    GetStream,
}

/// How one attempt went.
#[derive(Debug)]
enum Outcome {
    /// The stream ended or could not be opened; `healthy` if it stayed open long enough
    /// to reset the failure count.
    Ended { healthy: bool },
    /// No point in retrying: settle in this state.
    Settled(ToolsWatch),
    /// The connection is gone.
    Closed,
}

/// Starts watching if the server promises tool-list changes and a stream is needed.
pub(crate) fn start(shared: &Arc<Shared>) {
    let Ok(session) = shared.session() else { return };
    let watch = shared.config.tools_watch.enabled && declares_list_changed(&session.capabilities, "tools");
    // A handshake-era server asks for input (elicitation, sampling, roots) on the GET
    // stream when the request is not tied to a call: a client that can answer listens.
    let answers = shared.config.input_handler.is_some() && !session.version().is_stateless();
    let mode = if !watch && !answers {
        None
    } else if session.version().is_stateless() {
        Some(Mode::Listen)
    } else {
        shared.transport.server_stream().map(|_| Mode::GetStream)
    };
    let Some(mode) = mode else { return };
    shared.tools_watch.send_replace(ToolsWatch::Connecting);
    let task = tokio::spawn(run(Arc::downgrade(shared), mode));
    *shared.watcher.lock().unwrap_or_else(PoisonError::into_inner) = Some(task.abort_handle());
}

/// Stops watching and ends the subscription, if one is open.
pub(crate) async fn stop(shared: &Shared) {
    if let Some(task) = shared.watcher.lock().unwrap_or_else(PoisonError::into_inner).take() {
        task.abort();
    }
    let Some(id) = shared.listening.lock().unwrap_or_else(PoisonError::into_inner).take() else { return };
    if let Some(cancel) = shared.give_up(&id, LISTEN, "the client is closing")
        && tokio::time::timeout(CANCEL_SEND_LIMIT, shared.transport.send(cancel)).await.is_err()
    {
        tracing::debug!(server = %shared.server, "could not cancel the subscription in time");
    }
}

async fn run(client: Weak<Shared>, mode: Mode) {
    let mut failures = 0u32;
    loop {
        let outcome = match mode {
            Mode::Listen => listen_once(&client).await,
            Mode::GetStream => get_once(&client).await,
        };
        let Some(shared) = client.upgrade() else { return };
        match outcome {
            Outcome::Closed => return,
            Outcome::Settled(state) => {
                shared.tools_watch.send_replace(state);
                return;
            }
            Outcome::Ended { healthy: true } => failures = 0,
            Outcome::Ended { healthy: false } => failures += 1,
        }
        if shared.closed_reason().is_some() {
            return;
        }
        let config = &shared.config.tools_watch;
        if failures >= config.attempts() {
            tracing::warn!(server = %shared.server, failures, "giving up on the tool change stream; tools are listed on every use");
            shared.tools_watch.send_replace(ToolsWatch::Failed);
            return;
        }
        shared.tools_watch.send_replace(ToolsWatch::Connecting);
        let delay = config.backoff(failures);
        tracing::debug!(server = %shared.server, failures, ?delay, "re-opening the tool change stream");
        drop(shared);
        tokio::time::sleep(delay).await;
    }
}

/// What the listen request came to before it was acknowledged.
enum Phase {
    Answered(Result<Reply, ClientError>),
    Acknowledged,
    Refused,
    Unacknowledged,
}

/// One `subscriptions/listen`, from sending it to its end.
async fn listen_once(client: &Weak<Shared>) -> Outcome {
    let Some(shared) = client.upgrade() else { return Outcome::Closed };
    let (id, mut answer) = match open_listen(&shared).await {
        Ok(opened) => opened,
        Err(error) => return ended_early(&shared, Err(error)),
    };
    let mut state = shared.tools_watch.subscribe();
    let (ack_timeout, healthy_after) = (shared.config.request_timeout, shared.config.tools_watch.max_backoff);
    drop(shared);
    let phase = tokio::select! {
        answered = &mut answer => Phase::Answered(answered.unwrap_or_else(|_| Err(gone()))),
        seen = state.wait_for(|s| *s != ToolsWatch::Connecting) => match seen.map(|s| *s) {
            Ok(ToolsWatch::Active) => Phase::Acknowledged,
            Ok(_) => Phase::Refused,
            Err(_) => Phase::Answered(Err(gone())),
        },
        () = tokio::time::sleep(ack_timeout) => Phase::Unacknowledged,
    };
    let Some(shared) = client.upgrade() else { return Outcome::Closed };
    match phase {
        Phase::Answered(result) => {
            shared.forget_listen(&id);
            ended_early(&shared, result)
        }
        Phase::Unacknowledged => {
            tracing::warn!(server = %shared.server, after = ?ack_timeout, "subscription not acknowledged; retrying");
            shared.forget_listen(&id);
            shared.abandon(&id, LISTEN, "not acknowledged in time");
            Outcome::Ended { healthy: false }
        }
        Phase::Refused => {
            shared.forget_listen(&id);
            shared.abandon(&id, LISTEN, "tool list changes were not honored");
            Outcome::Settled(ToolsWatch::Failed)
        }
        Phase::Acknowledged => {
            drop(shared);
            let since = Instant::now();
            let ended = answer.await.unwrap_or_else(|_| Err(gone()));
            let Some(shared) = client.upgrade() else { return Outcome::Closed };
            shared.forget_listen(&id);
            match ended {
                Err(ClientError::TransportClosed { .. }) => Outcome::Closed,
                Ok(_) => {
                    tracing::info!(server = %shared.server, "the server ended the subscription");
                    Outcome::Ended { healthy: since.elapsed() >= healthy_after }
                }
                Err(error) => {
                    tracing::info!(server = %shared.server, %error, "the subscription stream ended");
                    Outcome::Ended { healthy: since.elapsed() >= healthy_after }
                }
            }
        }
    }
}

type Answer = oneshot::Receiver<Result<Reply, ClientError>>;

/// Sends the listen request, registered (and known as the subscription) before it
/// leaves, so neither its acknowledgment nor its answer can outrun it.
async fn open_listen(shared: &Arc<Shared>) -> Result<(Id, Answer), ClientError> {
    let session = shared.session()?;
    let id = shared.next_id();
    let message = session.context.subscriptions_listen(&id, &SubscriptionFilter::tools())?;
    *shared.listening.lock().unwrap_or_else(PoisonError::into_inner) = Some(id.clone());
    let answer = shared.register_listen(&id)?;
    if let Err(error) = shared.transport.send(message).await {
        shared.forget_listen(&id);
        shared.fail_if_pending(&id, ClientError::Cancelled);
        return Err(error.into());
    }
    Ok((id, answer))
}

/// A listen request that ended before it was acknowledged.
fn ended_early(shared: &Shared, result: Result<Reply, ClientError>) -> Outcome {
    match result {
        Err(ClientError::TransportClosed { .. }) => Outcome::Closed,
        Err(ClientError::Rpc { code: METHOD_NOT_FOUND, message, .. }) => {
            tracing::warn!(server = %shared.server, %message, "the server declares tools.listChanged but has no subscriptions/listen");
            Outcome::Settled(ToolsWatch::Failed)
        }
        Err(error) => {
            tracing::info!(server = %shared.server, %error, "subscriptions/listen failed");
            Outcome::Ended { healthy: false }
        }
        Ok(_) => {
            tracing::info!(server = %shared.server, "subscriptions/listen ended before it was acknowledged");
            Outcome::Ended { healthy: false }
        }
    }
}

/// One handshake-era GET stream, from opening it to its end.
async fn get_once(client: &Weak<Shared>) -> Outcome {
    let Some(shared) = client.upgrade() else { return Outcome::Closed };
    let Some(open) = shared.transport.server_stream() else { return Outcome::Settled(ToolsWatch::Off) };
    let healthy_after = shared.config.tools_watch.max_backoff;
    drop(shared);
    let stream = match open.await {
        Ok(stream) => stream,
        Err(TransportError::Http { status: 405, .. }) => {
            if let Some(shared) = client.upgrade() {
                tracing::info!(server = %shared.server, "the server offers no GET stream (405)");
            }
            return Outcome::Settled(ToolsWatch::Off);
        }
        Err(TransportError::Closed(_)) => return Outcome::Closed,
        Err(TransportError::SessionExpired) => {
            let Some(shared) = client.upgrade() else { return Outcome::Closed };
            let Ok(session) = shared.session() else { return Outcome::Closed };
            if let Err(error) = super::connect::reinitialize(&shared, session.epoch).await {
                tracing::info!(server = %shared.server, %error, "could not initialize again for the GET stream");
            }
            return Outcome::Ended { healthy: false };
        }
        Err(error) => {
            if let Some(shared) = client.upgrade() {
                tracing::info!(server = %shared.server, %error, "the GET stream could not be opened");
            }
            return Outcome::Ended { healthy: false };
        }
    };
    let Some(shared) = client.upgrade() else { return Outcome::Closed };
    shared.tools_changed();
    shared.tools_watch.send_replace(ToolsWatch::Active);
    drop(shared);
    let since = Instant::now();
    let ended = stream.await;
    let Some(shared) = client.upgrade() else { return Outcome::Closed };
    match ended {
        Err(TransportError::Closed(_)) => Outcome::Closed,
        Ok(()) => {
            tracing::info!(server = %shared.server, "the server closed the GET stream");
            Outcome::Ended { healthy: since.elapsed() >= healthy_after }
        }
        Err(error) => {
            tracing::info!(server = %shared.server, %error, "the GET stream broke");
            Outcome::Ended { healthy: since.elapsed() >= healthy_after }
        }
    }
}

fn gone() -> ClientError {
    ClientError::TransportClosed { reason: crate::error::CloseReason::ClosedByClient }
}

impl Shared {
    /// The open `subscriptions/listen` request, if any.
    pub(crate) fn listening(&self) -> Option<Id> {
        self.listening.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// `id` is no longer the subscription (its acknowledgment and cancellation are ignored).
    fn forget_listen(&self, id: &Id) {
        let mut listening = self.listening.lock().unwrap_or_else(PoisonError::into_inner);
        if listening.as_ref() == Some(id) {
            *listening = None;
        }
        drop(listening);
        self.transport.release(id);
    }

    /// Makes the cached tool list stale.
    pub(crate) fn tools_changed(&self) {
        self.tools_generation.send_modify(|generation| *generation = generation.wrapping_add(1));
    }
}
