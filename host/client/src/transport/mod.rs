//! The transport seam: how JSON-RPC messages reach a server and come back.
//!
//! A transport only moves *frames*: it never parses JSON-RPC or MCP (the client does,
//! through `wasmgate-protocol`, with one set of limits for every transport). Outgoing,
//! it takes a `serde_json::Value` (request, notification or response) and delivers it;
//! incoming, it pushes [`Inbound`] events into one channel that the client's reader task
//! drains in order. Ordering matters: a transport that knows a request's exchange is over
//! (an HTTP response stream ended) reports that *after* the frames of that exchange, so
//! the client can tell "answered" from "ended without an answer".
//!
//! The trait is object-safe (boxed futures) so a client holds `Arc<dyn Transport>` and a
//! host can mix providers behind one type. The implementations:
//!
//! * `stdio`: a child process, newline-delimited JSON (`stdio_config` says what to run
//!   and how to bound it, `process` spawns and stops it, `lines` frames its stdout with a
//!   bounded buffer, `stderr` logs its stderr);
//! * `http`: Streamable HTTP with reqwest and rustls (`sse` parses event streams,
//!   `headers` builds the per-request MCP headers);
//! * `fake`: in memory, the test holds the server end ([`FakeTransport::pair`]).

use std::fmt;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;
use wasmgate_protocol::{Id, ProtocolVersion};

use crate::error::{CloseReason, TransportError};

mod fake;
pub(crate) mod headers;
mod http;
pub(crate) mod lines;
pub(crate) mod process;
mod sse;
pub(crate) mod stderr;
pub(crate) mod stdio;
mod stdio_config;

pub use fake::{FakeServer, FakeTransport};
pub(crate) use headers::encode_value as encode_header_value;
pub use http::{HttpConfig, HttpTransport};
pub use lines::{Line, LineReader};
pub use process::resolve_program;
pub use stderr::StderrTail;
pub use stdio::StdioTransport;
pub use stdio_config::{StdioConfig, StdioLimits};
pub(crate) use wasmgate_core::BoxFuture;

/// An open server stream (see [`Transport::server_stream`]): resolves when the stream
/// ends, `Ok` when the server closed it, `Err` when it broke or hit a cap. Dropping it
/// closes the stream.
pub type StreamEnd = BoxFuture<'static, Result<(), TransportError>>;

/// Capacity of the inbound channel: enough to absorb a burst of notifications, small
/// enough that a flooding server is slowed down by backpressure instead of buffered.
pub(crate) const INBOUND_CAPACITY: usize = 64;

/// Bytes of an oversized frame kept for attributing it to a request (see [`Inbound::Oversized`]).
pub const OVERSIZED_PREFIX_BYTES: usize = 4096;

/// What a transport hands to the client.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// One complete message as raw bytes: a stdio line without its line ending, an HTTP
    /// JSON body, or the data of one SSE event.
    Frame(Bytes),
    /// A frame longer than the transport's cap, discarded without being buffered whole.
    /// `prefix` holds its first bytes (at most [`OVERSIZED_PREFIX_BYTES`]), so the client can
    /// fail the request it answered instead of letting that request time out.
    Oversized {
        /// The start of the frame.
        prefix: Bytes,
        /// The frame's full length in bytes.
        len: usize,
    },
    /// The exchange of request `id` is over (HTTP): with an error, or
    /// [`TransportError::NoResponse`] as an end marker after its frames. The client fails
    /// the request if it is still waiting, and ignores the event otherwise.
    Exchange {
        /// The request whose exchange ended.
        id: Id,
        /// How it ended.
        error: TransportError,
    },
    /// The transport is gone; nothing more will arrive.
    Closed(CloseReason),
}

/// A way to exchange JSON-RPC messages with one MCP server.
pub trait Transport: Send + Sync + fmt::Debug + 'static {
    /// The receiving end of the transport's inbound channel. The client takes it once,
    /// when it connects; later calls return `None`.
    fn take_inbound(&mut self) -> Option<mpsc::Receiver<Inbound>>;

    /// Sends one message. For a request, `Ok` means it is on its way; the answer arrives
    /// as [`Inbound`] events.
    fn send(&self, message: Value) -> BoxFuture<'_, Result<(), TransportError>>;

    /// Sends a `tools/call` request with the `Mcp-Param-*` headers its tool's schema asks
    /// for (see [`mirrors_param_headers`](Self::mirrors_param_headers)). The default
    /// ignores the headers.
    fn send_with_headers(
        &self,
        message: Value,
        headers: Vec<(String, String)>,
    ) -> BoxFuture<'_, Result<(), TransportError>> {
        let _ = headers;
        self.send(message)
    }

    /// Whether this transport carries `x-mcp-header` parameters as HTTP headers, and so
    /// must drop tools whose annotations are invalid. True for Streamable HTTP.
    fn mirrors_param_headers(&self) -> bool {
        false
    }

    /// The client needs nothing more for request `id` (answered, cancelled or timed out).
    /// Stream-per-request transports drop that request's response stream, which in the
    /// 2026-07-28 era is also how a request is cancelled. The default does nothing.
    fn release(&self, id: &Id) {
        let _ = id;
    }

    /// Whether closing a request's response stream (see [`release`](Self::release)) is how
    /// this transport cancels a request under a stateless protocol version, instead of
    /// `notifications/cancelled`. True for Streamable HTTP.
    fn cancel_closes_stream(&self) -> bool {
        false
    }

    /// The protocol version the client negotiated (HTTP sends it as a header in the
    /// handshake era). The default does nothing.
    fn set_protocol_version(&self, version: ProtocolVersion) {
        let _ = version;
    }

    /// Opens the standalone stream on which a handshake-era server sends messages that
    /// answer no request (Streamable HTTP: a GET to the endpoint, answered with SSE).
    /// `None`: this transport has no such stream (stdio writes everything to one pipe).
    /// The outer future resolves once the server accepted (an [`StreamEnd`] to await)
    /// or refused (HTTP 405: it offers no stream); the stream's messages arrive as
    /// [`Inbound::Frame`]s like any other. The default is `None`.
    fn server_stream(&self) -> Option<BoxFuture<'static, Result<StreamEnd, TransportError>>> {
        None
    }

    /// Shuts the connection down and reports how the server ended (for a process: its
    /// exit status). Idempotent.
    fn close(&self) -> BoxFuture<'_, CloseReason>;
}
