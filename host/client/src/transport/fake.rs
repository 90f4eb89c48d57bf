//! An in-memory transport whose server end is held by a test.
//!
//! The client cannot tell it from a real transport: it gets frames (bytes) and lifecycle
//! events through the same [`Inbound`] channel. The test scripts the server with
//! [`FakeServer`]: it reads what the client sent as `Value`s, answers with values or raw
//! bytes (malformed lines included), ends exchanges, closes the connection, or simply
//! drops the server end, which the client sees as the transport going away mid-call.
//! Everything is a channel, so a test synchronises on messages, never on sleeps.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use wasmgate_protocol::{Id, error_response, result_response};

use super::{BoxFuture, INBOUND_CAPACITY, Inbound, Transport};
use crate::error::{CloseReason, TransportError};

impl FakeTransport {
    /// A connected pair: the transport for the client, the server end for the test.
    #[must_use]
    pub fn pair() -> (FakeTransport, FakeServer) {
        let (to_server, from_client) = mpsc::unbounded_channel();
        let (to_client, inbound) = mpsc::channel(INBOUND_CAPACITY);
        let released = Arc::new(Mutex::new(Vec::new()));
        let transport = FakeTransport {
            to_server,
            to_client: to_client.downgrade(),
            inbound: Some(inbound),
            released: Arc::clone(&released),
            cancel_closes_stream: false,
        };
        (transport, FakeServer { from_client, to_client, released })
    }
}

/// The client's end of a [`FakeTransport::pair`].
#[derive(Debug)]
pub struct FakeTransport {
    to_server: mpsc::UnboundedSender<Value>,
    /// Weak, so dropping the [`FakeServer`] closes the client's inbound channel.
    to_client: mpsc::WeakSender<Inbound>,
    inbound: Option<mpsc::Receiver<Inbound>>,
    released: Arc<Mutex<Vec<Id>>>,
    cancel_closes_stream: bool,
}

impl FakeTransport {
    /// Behave like Streamable HTTP for cancellation: under a stateless protocol version
    /// the client cancels by releasing the request's stream instead of notifying.
    #[must_use]
    pub fn emulating_http_cancel(mut self) -> Self {
        self.cancel_closes_stream = true;
        self
    }
}

impl Transport for FakeTransport {
    fn take_inbound(&mut self) -> Option<mpsc::Receiver<Inbound>> {
        self.inbound.take()
    }

    fn send(&self, message: Value) -> BoxFuture<'_, Result<(), TransportError>> {
        let sent = self.to_server.send(message).map_err(|_| TransportError::Closed(CloseReason::StreamEnded));
        Box::pin(async move { sent })
    }

    fn release(&self, id: &Id) {
        if let Ok(mut released) = self.released.lock() {
            released.push(id.clone());
        }
    }

    fn cancel_closes_stream(&self) -> bool {
        self.cancel_closes_stream
    }

    fn close(&self) -> BoxFuture<'_, CloseReason> {
        let to_client = self.to_client.upgrade();
        Box::pin(async move {
            if let Some(to_client) = to_client {
                let _ = to_client.send(Inbound::Closed(CloseReason::ClosedByClient)).await;
            }
            CloseReason::ClosedByClient
        })
    }
}

/// The test's end of a [`FakeTransport::pair`]: plays the MCP server.
#[derive(Debug)]
pub struct FakeServer {
    from_client: mpsc::UnboundedReceiver<Value>,
    to_client: mpsc::Sender<Inbound>,
    released: Arc<Mutex<Vec<Id>>>,
}

impl FakeServer {
    /// The next message the client sent, or `None` once the client's transport is gone.
    pub async fn recv(&mut self) -> Option<Value> {
        self.from_client.recv().await
    }

    /// A message the client already sent, if any, without waiting.
    pub fn try_recv(&mut self) -> Option<Value> {
        self.from_client.try_recv().ok()
    }

    /// Delivers one JSON message to the client.
    pub async fn send(&self, message: Value) {
        self.send_raw(message.to_string()).await;
    }

    /// Delivers one raw frame (for malformed input).
    pub async fn send_raw(&self, frame: impl Into<Bytes>) {
        self.send_inbound(Inbound::Frame(frame.into())).await;
    }

    /// Delivers any transport event.
    pub async fn send_inbound(&self, event: Inbound) {
        let _ = self.to_client.send(event).await;
    }

    /// Answers request `id` with `result` (which should be an object).
    pub async fn respond(&self, id: &Id, result: Value) {
        let result = match result {
            Value::Object(result) => result,
            _ => Map::new(),
        };
        self.send(result_response(id, result)).await;
    }

    /// Answers request `id` with a JSON-RPC error.
    pub async fn respond_error(&self, id: &Id, code: i64, message: &str) {
        self.send(error_response(Some(id), code, message, None)).await;
    }

    /// Reports that the transport closed, then drops the server end.
    pub async fn close(self, reason: CloseReason) {
        self.send_inbound(Inbound::Closed(reason)).await;
    }

    /// The ids the client released (answered, cancelled or timed out), in order.
    #[must_use]
    pub fn released(&self) -> Vec<Id> {
        self.released.lock().map(|r| r.clone()).unwrap_or_default()
    }
}
