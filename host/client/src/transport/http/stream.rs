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

use reqwest::Response;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use tokio::task::AbortHandle;
use wasmgate_protocol::ProtocolVersion;

use super::Shared;
use crate::error::{CloseReason, TransportError, report};
use crate::transport::headers::{PROTOCOL_VERSION, SESSION_ID};
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

/// Aborts a task when dropped.
struct AbortOnDrop(AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Shared {
    /// Delivers every `message` event of an SSE body as a frame, within the caps.
    pub(super) async fn pump_sse(&self, mut response: Response) -> Result<(), TransportError> {
        let mut parser = SseParser::new(self.max_message);
        let (mut total, mut events) = (0usize, Vec::new());
        while let Some(chunk) = response.chunk().await.map_err(|e| TransportError::Io(report(&e)))? {
            total += chunk.len();
            if total > self.max_response {
                return Err(TransportError::TooLarge { limit: self.max_response });
            }
            parser.push(&chunk, &mut events).map_err(|e| TransportError::TooLarge { limit: e.limit })?;
            for data in events.drain(..) {
                self.deliver(Inbound::Frame(data)).await?;
            }
        }
        Ok(())
    }

    /// GETs the endpoint for the standalone stream; see the module docs.
    pub(super) async fn open_server_stream(self: Arc<Self>) -> Result<StreamEnd, TransportError> {
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
        let had_session = session.is_some();
        if let Some(session) = session {
            request = request.header(SESSION_ID, session);
        }
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
        let task = tokio::spawn(async move { reader.pump_sse(response).await });
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
