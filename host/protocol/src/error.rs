//! The one error type of the crate.
//!
//! Every rejection names *what* was wrong and *where*, because the gateway
//! logs these for operators and turns them into JSON-RPC error responses: a
//! vague "bad message" would hide whether a server is buggy or hostile. The
//! variants fall into three layers, checked in this order:
//!
//! 1. bytes: [`TooLarge`](ProtocolError::TooLarge), [`NotUtf8`](ProtocolError::NotUtf8),
//!    [`TooDeep`](ProtocolError::TooDeep), [`InvalidJson`](ProtocolError::InvalidJson),
//!    [`DuplicateKey`](ProtocolError::DuplicateKey);
//! 2. JSON-RPC envelope: [`Batch`](ProtocolError::Batch) to [`BadError`](ProtocolError::BadError);
//! 3. MCP payloads: [`MissingField`](ProtocolError::MissingField) onwards, where `at` is a
//!    path such as `result.tools[3].inputSchema`.
//!
//! The enum is `#[non_exhaustive]` so new checks can be added without breaking callers.

use crate::codes;

/// Why a message (or a part of one) was rejected.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// The raw message is longer than [`MessageLimits::max_message_bytes`](crate::MessageLimits).
    #[error("message is {size} bytes, over the limit of {limit} bytes")]
    TooLarge {
        /// Length of the raw message in bytes.
        size: usize,
        /// The configured limit.
        limit: usize,
    },
    /// The raw message is not UTF-8 (JSON text must be, RFC 8259 section 8.1).
    #[error("message is not valid UTF-8 (invalid byte sequence at offset {valid_up_to})")]
    NotUtf8 {
        /// Offset of the first invalid byte sequence.
        valid_up_to: usize,
    },
    /// Arrays and objects nest deeper than [`MessageLimits::max_depth`](crate::MessageLimits).
    #[error("message nests arrays/objects deeper than the limit of {limit} levels")]
    TooDeep {
        /// The configured limit.
        limit: usize,
    },
    /// The text is not one valid JSON value (syntax error, trailing data, NaN, ...).
    #[error("invalid JSON: {0}")]
    InvalidJson(String),
    /// An object names the same key twice; parsers disagree on which one wins.
    #[error("duplicate object key {key:?}")]
    DuplicateKey {
        /// The repeated key, unescaped.
        key: String,
    },

    /// The message is a JSON array: a JSON-RPC batch, which MCP does not use.
    #[error(
        "JSON-RPC batches (top-level arrays) are not supported: MCP removed them in 2025-06-18 and wasmgate never sends one"
    )]
    Batch,
    /// The message is not a JSON object.
    #[error("message must be a JSON object, found {found}")]
    NotAnObject {
        /// JSON type that was found instead.
        found: &'static str,
    },
    /// `"jsonrpc"` is missing or is not exactly `"2.0"`.
    #[error("bad \"jsonrpc\" member: {0}")]
    BadVersion(String),
    /// The envelope has a member JSON-RPC 2.0 does not define.
    #[error("unknown top-level member {0:?} (allowed: jsonrpc, id, method, params, result, error)")]
    UnknownMember(String),
    /// `"id"` is not a string or an integer that fits in i64 (or is null where not allowed).
    #[error("bad \"id\": {0}")]
    BadId(String),
    /// `"method"` is present but not a non-empty string.
    #[error("bad \"method\": {0}")]
    BadMethod(String),
    /// Neither `method`, `result`, `error` nor `id`: not any kind of message.
    #[error("message has no \"method\", \"result\" or \"error\" member")]
    MissingMethod,
    /// `"params"` is present but not an object (MCP params are always objects).
    #[error("bad \"params\": {0}")]
    BadParams(String),
    /// A request or notification also carries `result`/`error`.
    #[error("message mixes request and response members: {0}")]
    MixedKinds(String),
    /// A response carries both `result` and `error`.
    #[error("response has both \"result\" and \"error\"")]
    BothResultAndError,
    /// A message has an `id` but neither `method`, `result` nor `error`.
    #[error("response has neither \"result\" nor \"error\"")]
    NeitherResultNorError,
    /// `"result"` is not an object (every MCP result is one).
    #[error("bad \"result\": {0}")]
    BadResult(String),
    /// The `"error"` member is not `{code: integer, message: string, data?: any}`.
    #[error("bad \"error\" object: {0}")]
    BadError(String),

    /// A required MCP field is absent.
    #[error("missing required field {at}")]
    MissingField {
        /// Path of the field, e.g. `result.tools[0].name`.
        at: String,
    },
    /// An MCP field has the wrong JSON type.
    #[error("{at} must be {expected}")]
    WrongType {
        /// Path of the field.
        at: String,
        /// What the schema requires, e.g. `"a string"`.
        expected: &'static str,
    },
    /// An MCP field has the right type but a value the spec forbids.
    #[error("{at} is invalid: {reason}")]
    InvalidValue {
        /// Path of the field.
        at: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A list is longer than the configured cap.
    #[error("{at} has {count} entries, over the limit of {limit}")]
    TooMany {
        /// Path of the list.
        at: String,
        /// Entries found.
        count: usize,
        /// The configured limit.
        limit: usize,
    },
    /// Two entries of a list claim the same name (e.g. two tools called `delete`).
    #[error("{at} contains the name {name:?} more than once")]
    DuplicateName {
        /// Path of the list.
        at: String,
        /// The repeated name.
        name: String,
    },
    /// `resultType` has a value this crate does not know; the spec says it MUST be treated as invalid.
    #[error("unknown resultType {0:?}")]
    UnknownResultType(String),
    /// A protocol version string that is not one of [`ProtocolVersion`](crate::ProtocolVersion).
    #[error("unknown or unsupported protocol version {0:?}")]
    UnsupportedVersion(String),
    /// An operation that only exists in the other protocol era (e.g. `initialize` under 2026-07-28).
    #[error("{what} does not exist in protocol version {version}")]
    WrongEra {
        /// The operation.
        what: &'static str,
        /// The protocol version in use.
        version: &'static str,
    },
}

impl ProtocolError {
    /// The JSON-RPC error code to answer with when this error is about an incoming message.
    ///
    /// Byte-level and JSON syntax problems are [`PARSE_ERROR`](codes::PARSE_ERROR), envelope
    /// problems [`INVALID_REQUEST`](codes::INVALID_REQUEST), everything about MCP payloads
    /// [`INVALID_PARAMS`](codes::INVALID_PARAMS) (or
    /// [`UNSUPPORTED_PROTOCOL_VERSION`](codes::UNSUPPORTED_PROTOCOL_VERSION)).
    #[must_use]
    pub fn jsonrpc_code(&self) -> i64 {
        match self {
            Self::TooLarge { .. }
            | Self::NotUtf8 { .. }
            | Self::TooDeep { .. }
            | Self::InvalidJson(_)
            | Self::DuplicateKey { .. } => codes::PARSE_ERROR,
            Self::Batch
            | Self::NotAnObject { .. }
            | Self::BadVersion(_)
            | Self::UnknownMember(_)
            | Self::BadId(_)
            | Self::BadMethod(_)
            | Self::MissingMethod
            | Self::BadParams(_)
            | Self::MixedKinds(_)
            | Self::BothResultAndError
            | Self::NeitherResultNorError
            | Self::BadResult(_)
            | Self::BadError(_) => codes::INVALID_REQUEST,
            Self::UnsupportedVersion(_) => codes::UNSUPPORTED_PROTOCOL_VERSION,
            Self::MissingField { .. }
            | Self::WrongType { .. }
            | Self::InvalidValue { .. }
            | Self::TooMany { .. }
            | Self::DuplicateName { .. }
            | Self::UnknownResultType(_)
            | Self::WrongEra { .. } => codes::INVALID_PARAMS,
        }
    }
}
