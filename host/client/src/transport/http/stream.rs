//! Reading event streams: SSE answers to POSTs, and the handshake era's GET stream.
//!
//! Handshake-era Streamable HTTP (2025-03-26 to 2025-11-25) lets a client GET the MCP
//! endpoint with `Accept: text/event-stream` (and its `Mcp-Session-Id`) to open a stream
//! on which the server sends messages that answer no request: that is where
//! `notifications/tools/list_changed` arrives. The server either answers with an event
//! stream or with 405, meaning it offers none. (2026-07-28 removed the GET stream in
//! favour of `subscriptions/listen`, whose stream is an ordinary POST answer.)
//!
//! Both kinds of stream are read by one bounded loop: no event larger than the message
//! cap, no stream larger than the response cap, and the read (idle) timeout of the
//! client. The GET stream's reader runs in its own task, tracked by the transport so
//! `close` ends it, and tied to the [`StreamEnd`] handed out so that dropping that (the
//! client stopping its watch) ends it too. Reconnecting is the caller's business.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{RequestBuilder, Response};
use tokio::task::AbortHandle;
use wasmgate_core::report;
use wasmgate_protocol::{Id, ProtocolVersion};

use super::Shared;

use crate::error::{CloseReason, TransportError};
use crate::transport::headers::{LAST_EVENT_ID, PROTOCOL_VERSION, SESSION_ID};
use crate::transport::sse::SseParser;
use crate::transport::{Inbound, StreamEnd};

/// Whether a response is an event stream (`text/event-stream`, parameters allowed).
pub(super) fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/event-stream"))
}

/// How often one request's stream is resumed.
pub(super) const MAX_RESUMES: u32 = 5;
/// The wait before resuming when the server set no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// The longest wait before resuming, whatever `retry` the server set.
const MAX_RETRY: Duration = Duration::from_secs(30);

/// How a request's event stream ended.
#[derive(Debug, Default)]
pub(super) struct Pumped {
    /// The response to the request came.
    pub(super) answered: bool,
    /// The last event id, and the `retry` time, if the stream can be resumed.
    pub(super) resume: Option<(String, Option<u64>)>,
}

/// Whether the frame `data` is the response (or error) to request `id`.
fn answers(data: &[u8], id: &Id) -> bool {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else { return false };
    let is_response = value.get("result").is_some() || value.get("error").is_some();
    is_response && value.get("id").and_then(|v| Id::from_value(v).ok()).as_ref() == Some(id)
}

/// Aborts a task when dropped.
struct AbortOnDrop(AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Shared {
    /// Delivers every `message` event of an SSE body as a frame, within the caps. With
    /// `answer_to`, notes whether the response to that request came (looked at only on a
    /// stream that sets event ids, the only kind that can be resumed).
    pub(super) async fn pump_sse(
        &self,
        mut response: Response,
        answer_to: Option<&Id>,
    ) -> Result<Pumped, TransportError> {
        let mut parser = SseParser::new(self.max_message);
        let (mut total, mut events, mut answered) = (0usize, Vec::new(), false);
        while let Some(chunk) = response.chunk().await.map_err(|e| TransportError::Io(report(&e)))? {
            total += chunk.len();
            if total > self.max_response {
                return Err(TransportError::TooLarge { limit: self.max_response });
            }
            parser.push(&chunk, &mut events).map_err(|e| TransportError::TooLarge { limit: e.limit })?;
            for data in events.drain(..) {
                if let Some(id) = answer_to.filter(|_| !answered && parser.last_event_id().is_some()) {
                    answered = answers(&data, id);
                }
                self.deliver(Inbound::Frame(data)).await?;
            }
        }
        let resume = parser.last_event_id().map(|id| (id.to_owned(), parser.retry_ms()));
        Ok(Pumped { answered, resume })
    }

    /// The GET of the endpoint as an event stream, with the session and version headers,
    /// and `Last-Event-ID` when it resumes a stream; and whether it names a session.
    pub(super) fn stream_request(&self, last_event_id: Option<&str>) -> Result<(RequestBuilder, bool), TransportError> {
        let (session, version, closed) = {
            let state = self.state();
            (state.session.clone(), state.version, state.closed)
        };
        if closed {
            return Err(TransportError::Closed(CloseReason::ClosedByClient));
        }
        let mut request = self.client.get(self.url.clone()).header(ACCEPT, "text/event-stream");
        if let Some(version) = version.filter(|v| !v.is_stateless() && *v >= ProtocolVersion::V2025_06_18) {
            request = request.header(PROTOCOL_VERSION, version.as_str());
        }
        if let Some(last) = last_event_id {
            request = request.header(LAST_EVENT_ID, last);
        }
        let had_session = session.is_some();
        if let Some(session) = session {
            request = request.header(SESSION_ID, session);
        }
        Ok((request, had_session))
    }

    /// Resumes a request's stream that ended before its response (handshake era,
    /// SEP-1699): after the `retry` time the server set (at most [`MAX_RETRY`]), a GET
    /// with `Last-Event-ID`, whose events are delivered like the first stream's; at most
    /// [`MAX_RESUMES`] times.
    pub(super) async fn resume(&self, id: &Id, mut pumped: Pumped) -> Result<(), TransportError> {
        let stateless = self.state().version.is_none_or(ProtocolVersion::is_stateless);
        for _ in 0..MAX_RESUMES {
            let Some((last, retry)) = pumped.resume.take().filter(|_| !pumped.answered && !stateless) else {
                return Ok(());
            };
            let wait = retry.map_or(DEFAULT_RETRY, Duration::from_millis).min(MAX_RETRY);
            tokio::time::sleep(wait).await;
            tracing::debug!(server = %self.name, %id, "resuming the request's event stream");
            let (request, had_session) = self.stream_request(Some(&last))?;
            let response = self.send_authorized(request).await?;
            let status = response.status();
            if !status.is_success() {
                return Err(self.refusal(status, response, had_session).await);
            }
            if !is_event_stream(&response) {
                return Err(TransportError::NoResponse);
            }
            let next = self.pump_sse(response, Some(id)).await?;
            // A resumed stream that sets no id of its own resumes from the same place.
            pumped = Pumped { answered: next.answered, resume: next.resume.or(Some((last, retry))) };
        }
        Ok(())
    }

    /// GETs the endpoint for the standalone stream; see the module docs.
    pub(super) async fn open_server_stream(self: Arc<Self>) -> Result<StreamEnd, TransportError> {
        let (request, had_session) = self.stream_request(None)?;
        let response = self.send_authorized(request).await?;
        let status = response.status();
        if !status.is_success() {
            return Err(self.refusal(status, response, had_session).await);
        }
        if !is_event_stream(&response) {
            let kind = response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("none");
            let body = format!("the GET stream was answered with content type {kind:?}, not an event stream");
            return Err(TransportError::Http { status: status.as_u16(), rpc: None, body });
        }
        tracing::debug!(server = %self.name, "HTTP GET stream open");
        let reader = Arc::clone(&self);
        let task = tokio::spawn(async move { reader.pump_sse(response, None).await.map(|_| ()) });
        {
            let mut state = self.state();
            if state.closed {
                task.abort();
                return Err(TransportError::Closed(CloseReason::ClosedByClient));
            }
            if let Some(previous) = state.server_stream.replace(task.abort_handle()) {
                previous.abort();
            }
        }
        Ok(Box::pin(async move {
            let _close_on_drop = AbortOnDrop(task.abort_handle());
            task.await.unwrap_or(Err(TransportError::Closed(CloseReason::ClosedByClient)))
        }))
    }
}
