//! Answering a server that needs input: `input_required` results (2026-07-28) and, in
//! the handshake era, server-to-client requests.
//!
//! Both ask the same three things (`elicitation/create`, `sampling/createMessage`,
//! `roots/list`), so one caller-supplied [`InputHandler`] answers both. Without a handler,
//! or when it declines, a call that needs input ends in
//! [`ClientError::Unsupported`](crate::ClientError::Unsupported) (never an empty result),
//! and a server request is answered "method not found".

use std::fmt;

use serde_json::{Map, Value};

use wasmgate_core::BoxFuture;

/// One request for input.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequest {
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub method: String,
    /// Its params, as the server sent them (untrusted).
    pub params: Option<Map<String, Value>>,
}

/// Why a handler did not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputDeclined {
    /// The handler does not do this kind of request.
    #[error("not supported by the input handler")]
    Unsupported,
    /// The handler tried and failed (no user present, sampling refused, ...).
    #[error("input handler failed: {0}")]
    Failed(String),
    /// The request goes to the caller's side, which answers it with a later call (the
    /// 2026-07-28 `input_required` round trip carried on): the call ends in
    /// [`ClientError::InputDeferred`](crate::ClientError::InputDeferred).
    #[error("put off to the caller's next call")]
    Deferred,
}

/// A call that carries on from an `input_required` round: the answers to its input
/// requests and the server's `requestState`, sent with the first request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resume {
    /// `inputResponses`, by the keys the server asked under.
    pub responses: Map<String, Value>,
    /// The `requestState` the server sent with its requests.
    pub state: Option<String>,
}

/// Answers requests for input on the host's behalf.
pub trait InputHandler: Send + Sync + fmt::Debug {
    /// The result object for `request` (an `ElicitResult`, a `CreateMessageResult`, a
    /// `ListRootsResult`), or why there is none.
    fn answer(&self, request: InputRequest) -> BoxFuture<'_, Result<Value, InputDeclined>>;
}
