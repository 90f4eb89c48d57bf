//! The client's two error types, split the way the failure contract (docs/ARCHITECTURE.md)
//! needs them.
//!
//! A tool that ran and failed (`isError: true`) is *not* an error here: it is an
//! `Ok(CallToolResult)` the model gets to read. Everything in [`ClientError`] means the
//! call did not produce a tool result at all (transport gone, protocol broken, timeout,
//! cancel, refusal), so the host decides what happens next. The variants carry
//! host-side detail (exit codes, HTTP statuses, raw server text); it is the adapter's
//! job to keep that out of the model's context.
//!
//! [`TransportError`] is what a [`Transport`](crate::Transport) reports; the client maps
//! it into [`ClientError`] with [`From`], so callers only ever match one enum.

use std::fmt;
use std::time::Duration;

use serde_json::Value;
use wasmgate_protocol::ErrorObject;

/// Why a transport stopped: reported to every call still pending, and by `close`.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseReason {
    /// The server process exited. `code` is its exit code, `signal` the signal that
    /// killed it (Unix), whichever applies.
    Exited {
        /// Exit code, if it exited normally.
        code: Option<i32>,
        /// Terminating signal, if it was killed.
        signal: Option<i32>,
    },
    /// The server closed its output (EOF on stdout) and its exit status is unknown.
    StreamEnded,
    /// Reading from or writing to the server failed (a broken pipe, a reset connection).
    Io(String),
    /// The server's output stopped being a sequence of JSON-RPC messages.
    Framing(String),
    /// The client closed the connection.
    ClosedByClient,
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Exited { code: Some(code), .. } => write!(f, "server exited with status {code}"),
            Self::Exited { signal: Some(signal), .. } => write!(f, "server was killed by signal {signal}"),
            Self::Exited { .. } => f.write_str("server exited"),
            Self::StreamEnded => f.write_str("server closed its output"),
            Self::Io(detail) => write!(f, "I/O failure: {detail}"),
            Self::Framing(detail) => write!(f, "framing failure: {detail}"),
            Self::ClosedByClient => f.write_str("closed by the client"),
        }
    }
}

/// A failure reported by a transport, either for the whole connection or for one exchange.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TransportError {
    /// The connection is gone.
    #[error("transport closed: {0}")]
    Closed(CloseReason),
    /// The transport could not be set up (bad URL, missing token variable, spawn failure).
    #[error("transport configuration: {0}")]
    Config(String),
    /// A stdio server could not be started under its confinement policy: a required
    /// mechanism is missing (the message names it) or a path cannot be granted.
    #[error("confinement: {0}")]
    Confinement(String),
    /// An I/O or network failure of one exchange (connection refused, reset, HTTP timeout).
    #[error("I/O failure: {0}")]
    Io(String),
    /// The HTTP server answered with a non-success status. `rpc` is the JSON-RPC error in
    /// the body, if the body was one; `body` a printable, truncated copy of the body.
    #[error("HTTP status {status}{}", rpc.as_ref().map(|e| format!(" (JSON-RPC error {}: {})", e.code, e.message)).unwrap_or_default())]
    Http {
        /// The HTTP status code.
        status: u16,
        /// A JSON-RPC error response found in the body. Boxed: its `data` is a JSON
        /// value, whose size depends on serde_json's features, and every `Result` of
        /// this crate carries this variant.
        rpc: Option<Box<ErrorObject>>,
        /// The start of the body, lossily decoded, for logs.
        body: String,
    },
    /// The server does not know the HTTP session any more (404 to a request carrying
    /// `Mcp-Session-Id`): the client has to initialize again.
    #[error("the server no longer knows the session (HTTP 404)")]
    SessionExpired,
    /// A message or response body was larger than the configured cap.
    #[error("message exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The cap that was hit.
        limit: usize,
    },
    /// No token could be had for an OAuth provider (the message says why and what to run).
    #[error("authorization: {0}")]
    Auth(String),
    /// The server finished the exchange (closed the response stream) without answering.
    #[error("the server ended the exchange without a response")]
    NoResponse,
}

/// Why a client operation did not produce a result.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClientError {
    /// `tools/call` named a tool the server does not have (JSON-RPC error -32602 whose
    /// text says so; see `client::call` for the exact rule). The tool list is marked stale.
    #[error("the server has no tool {name:?}: {message}")]
    UnknownTool {
        /// The tool that was called.
        name: String,
        /// The server's error message.
        message: String,
    },
    /// No answer within the configured time; the request was cancelled upstream.
    #[error("{method} timed out after {after:?}")]
    Timeout {
        /// The request's method.
        method: String,
        /// The time limit that expired.
        after: Duration,
    },
    /// The caller cancelled; remote effects of the request are unknown.
    #[error("cancelled by the caller")]
    Cancelled,
    /// The connection is gone (process exit, broken pipe, close).
    #[error("transport closed: {reason}")]
    TransportClosed {
        /// Why, including the exit status when there is one.
        reason: CloseReason,
    },
    /// The server sent something that is not a valid answer.
    #[error("malformed message from the server: {detail}")]
    MalformedMessage {
        /// What was wrong.
        detail: String,
    },
    /// Client and server have no protocol version in common.
    #[error("no common protocol version: the server offered {offered:?}")]
    UnsupportedVersion {
        /// The versions the server named.
        offered: Vec<String>,
    },
    /// Neither era's opening worked.
    #[error("cannot connect to MCP server {server:?}; tried: {}", tried.join("; "))]
    ConnectFailed {
        /// The server's configured name.
        server: String,
        /// One line per attempt: what was sent and what came back.
        tried: Vec<String>,
    },
    /// The server needs something this client cannot do (an `input_required` result with
    /// no handler, or one the handler declined).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The call's input handler put the server's requests off to the caller's next call
    /// ([`InputDeclined::Deferred`](crate::InputDeclined::Deferred)): the server's
    /// `input_required` result, and the answers the handler did give (to requests it did
    /// not put off), for the caller to carry to that call ([`Resume`](crate::Resume)).
    #[error("input put off to the caller: {}", asked(required))]
    InputDeferred {
        /// The server's requests and state.
        required: Box<wasmgate_protocol::InputRequired>,
        /// Answers already given, by key.
        answered: serde_json::Map<String, serde_json::Value>,
    },
    /// The caller asked for a request the protocol cannot carry (a prompt argument that
    /// is not a string, a completion reference that is neither a prompt nor a resource
    /// template): nothing was sent.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The server answered with a JSON-RPC error.
    #[error("JSON-RPC error {code}: {message}")]
    Rpc {
        /// The error code.
        code: i64,
        /// The error message (server text, untrusted).
        message: String,
        /// The error data, as sent.
        data: Option<Value>,
    },
    /// The HTTP server refused the request without a JSON-RPC error body.
    #[error("HTTP status {status}: {body}")]
    Http {
        /// The HTTP status code.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// Another transport failure of this request.
    #[error(transparent)]
    Transport(TransportError),
    /// A configured cap was exceeded (tools, bytes, pages, input rounds).
    #[error("{what} exceeds the limit of {limit}")]
    LimitExceeded {
        /// What was counted.
        what: String,
        /// The cap.
        limit: usize,
    },
}

impl From<TransportError> for ClientError {
    fn from(error: TransportError) -> Self {
        match error {
            TransportError::Closed(reason) => Self::TransportClosed { reason },
            TransportError::Http { rpc: Some(rpc), .. } => {
                let ErrorObject { code, message, data } = *rpc;
                Self::Rpc { code, message, data }
            }
            TransportError::Http { status, rpc: None, body } => Self::Http { status, body },
            TransportError::TooLarge { limit } => {
                Self::MalformedMessage { detail: format!("message exceeds the limit of {limit} bytes") }
            }
            TransportError::NoResponse => {
                Self::MalformedMessage { detail: "the server ended the exchange without a response".into() }
            }
            other => Self::Transport(other),
        }
    }
}

impl From<wasmgate_protocol::ProtocolError> for ClientError {
    fn from(error: wasmgate_protocol::ProtocolError) -> Self {
        Self::MalformedMessage { detail: error.to_string() }
    }
}

/// The methods an `input_required` result asks for, for messages.
pub(crate) fn asked(required: &wasmgate_protocol::InputRequired) -> String {
    let methods: Vec<&str> = required
        .input_requests
        .iter()
        .flat_map(|requests| requests.values())
        .filter_map(|request| request.get("method").and_then(serde_json::Value::as_str))
        .collect();
    if methods.is_empty() { "requestState only".into() } else { methods.join(", ") }
}
