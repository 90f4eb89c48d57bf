//! What a gateway serves besides tools, as the guard hands it to the server face:
//! [`Offers`] (which of resources, prompts, completion, subscriptions and logging there
//! are), a served [`Prompt`], and [`Refusal`], why a request for content got no answer.
//!
//! What these carry is already cleaned and framed (the guard's job); the server face
//! sends it as it is.

use serde_json::Value;

/// What is served besides tools; each one announced as a server capability.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offers {
    /// `resources/list`, `resources/templates/list`, `resources/read`.
    pub resources: bool,
    /// `prompts/list`, `prompts/get`.
    pub prompts: bool,
    /// `completion/complete`.
    pub completions: bool,
    /// `resources/subscribe` and `resources/unsubscribe` (handshake era), announced as
    /// `resources.subscribe`; needs `resources`.
    pub subscriptions: bool,
    /// Log messages of calls (`logging/setLevel` in the handshake era, the `logLevel` of
    /// a request's `_meta` in 2026-07-28).
    pub logging: bool,
}

/// A prompt as served (`prompts/get`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prompt {
    /// Its description, cleaned; absent when it reads like instructions.
    pub description: Option<String>,
    /// The `PromptMessage` objects (`role`, `content`), screened.
    pub messages: Vec<Value>,
}

/// Why a request other than a tool call got no answer. Exhaustive on purpose: the
/// server maps each kind to its wire error, and a new kind must be mapped there too.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// No resource is served at this URI: -32602 with `data.uri` since 2026-07-28,
    /// -32002 before it.
    #[error("Resource not found: {0}")]
    ResourceNotFound(String),
    /// The request names something not served (an unknown prompt, an argument the
    /// provider refused): -32602 with this text.
    #[error("{0}")]
    InvalidParams(String),
    /// Serving it failed (a provider down or misbehaving): -32603 with this text, which
    /// is stable and names no internals; details belong in the log.
    #[error("{0}")]
    Failed(String),
}
