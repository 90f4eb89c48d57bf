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

use crate::transport::BoxFuture;

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

/// The calls in flight, each with its own input handler and log receiver if it has
/// them. A handshake-era server's request for input, and any server's log message,
/// names no call; it belongs to a call only when that call is the one in flight (two
/// calls' questions cannot be told apart, and a question must never reach the person
/// behind another call).
#[derive(Debug, Default)]
pub(crate) struct CallsInFlight {
    calls: std::sync::Mutex<Calls>,
}

/// The last handle given out, and each call's handle, handler and log receiver.
#[derive(Default)]
struct Calls {
    last: u64,
    open: Vec<(u64, Option<Handler>, Option<super::config::LogFn>)>,
}

type Handler = std::sync::Arc<dyn InputHandler>;

impl fmt::Debug for Calls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Calls").field("last", &self.last).field("open", &self.open.len()).finish()
    }
}

impl CallsInFlight {
    pub(crate) fn register(&self, handler: Option<Handler>, log: Option<super::config::LogFn>) -> u64 {
        let mut calls = self.calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        calls.last += 1;
        let handle = calls.last;
        calls.open.push((handle, handler, log));
        handle
    }

    pub(crate) fn unregister(&self, handle: u64) {
        let mut calls = self.calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        calls.open.retain(|(h, ..)| *h != handle);
    }

    /// The handler of the one call in flight, if there is exactly one and it has one.
    pub(crate) fn only(&self) -> Option<Handler> {
        let calls = self.calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match calls.open.as_slice() {
            [(_, handler, _)] => handler.clone(),
            _ => None,
        }
    }

    /// The log receiver of the one call in flight, if there is exactly one and it has one.
    pub(crate) fn only_log(&self) -> Option<super::config::LogFn> {
        let calls = self.calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match calls.open.as_slice() {
            [(_, _, log)] => log.clone(),
            _ => None,
        }
    }
}
