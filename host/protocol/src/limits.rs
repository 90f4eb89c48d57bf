//! Bytes to JSON: the first line of defence against a hostile peer.
//!
//! [`parse_message`] turns one framed message (a stdio line, an HTTP body) into a
//! `serde_json::Value`, doing the cheap checks before the expensive one:
//!
//! 1. size, on the raw length, so a 10 MB string costs nothing to refuse;
//! 2. UTF-8, so the error names the offset instead of a parser position;
//! 3. nesting depth and duplicate keys, with the iterative `scan` pass,
//!    so recursion never sees deep input;
//! 4. the real parse (serde_json), which rejects everything else that is not exactly one
//!    JSON value: trailing data, `NaN`/`Infinity`, numbers that overflow f64, lone
//!    surrogates, control characters in strings, a byte-order mark.
//!
//! It is one of the two fuzzing entry points, with [`classify`];
//! [`decode`] chains them.

use serde_json::Value;

use crate::jsonrpc::{Message, classify};
use crate::{ProtocolError, scan};

/// Resource limits applied to every incoming message before it is parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageLimits {
    /// Maximum raw size in bytes.
    ///
    /// Default 4 MiB: tool results legitimately carry base64 images, audio and embedded
    /// resources (base64 inflates binary by 4/3, so this admits about 3 MB of binary
    /// content), while a parsed `Value` can take several times its text size in memory,
    /// so a bound of a few MiB keeps a single message from costing more than tens of MB.
    pub max_message_bytes: usize,
    /// Maximum number of arrays/objects open at once (`{}` is depth 1, a scalar depth 0).
    ///
    /// Default 64: MCP envelopes need about 6 levels and real JSON Schemas in
    /// `inputSchema` rarely exceed 20. It must stay below serde_json's internal limit of
    /// 128; above it, deep input is still refused, but as [`ProtocolError::InvalidJson`].
    pub max_depth: usize,
}

impl MessageLimits {
    /// The defaults (4 MiB, 64 levels).
    pub const DEFAULT: Self = Self { max_message_bytes: 4 * 1024 * 1024, max_depth: 64 };
}

impl Default for MessageLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Parses one raw message into JSON, enforcing `limits` first.
///
/// # Errors
///
/// In order of checking: [`TooLarge`](ProtocolError::TooLarge),
/// [`NotUtf8`](ProtocolError::NotUtf8), [`TooDeep`](ProtocolError::TooDeep),
/// [`InvalidJson`](ProtocolError::InvalidJson), [`DuplicateKey`](ProtocolError::DuplicateKey).
pub fn parse_message(bytes: &[u8], limits: MessageLimits) -> Result<Value, ProtocolError> {
    if bytes.len() > limits.max_message_bytes {
        return Err(ProtocolError::TooLarge { size: bytes.len(), limit: limits.max_message_bytes });
    }
    let text = std::str::from_utf8(bytes).map_err(|e| ProtocolError::NotUtf8 { valid_up_to: e.valid_up_to() })?;
    let report = scan::scan(text, limits.max_depth)?;
    let value: Value = serde_json::from_str(text).map_err(|e| ProtocolError::InvalidJson(e.to_string()))?;
    if let Some(key) = report.duplicate_key {
        return Err(ProtocolError::DuplicateKey { key });
    }
    Ok(value)
}

/// [`parse_message`] then [`classify`]: raw bytes to a JSON-RPC [`Message`].
///
/// # Errors
///
/// Any error of either step.
pub fn decode(bytes: &[u8], limits: MessageLimits) -> Result<Message, ProtocolError> {
    classify(parse_message(bytes, limits)?)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn size_is_checked_before_anything_else() {
        let limits = MessageLimits { max_message_bytes: 4, max_depth: 64 };
        assert_eq!(parse_message(b"\xff\xff\xff\xff\xff", limits), Err(ProtocolError::TooLarge { size: 5, limit: 4 }));
        assert!(parse_message(b"1234", limits).is_ok());
    }

    #[test]
    fn depth_equal_to_the_limit_is_accepted() {
        let limits = MessageLimits { max_message_bytes: 1024, max_depth: 3 };
        assert!(parse_message(b"[[[]]]", limits).is_ok());
        assert_eq!(parse_message(b"[[[[]]]]", limits), Err(ProtocolError::TooDeep { limit: 3 }));
    }

    #[test]
    fn default_depth_fits_under_serde_json_recursion_limit() {
        let text = format!("{}{}", "[".repeat(64), "]".repeat(64));
        assert!(parse_message(text.as_bytes(), MessageLimits::DEFAULT).is_ok());
    }

    #[test]
    fn duplicate_key_is_reported_only_for_valid_json() {
        assert!(matches!(
            parse_message(br#"{"a":1,"a":2"#, MessageLimits::DEFAULT),
            Err(ProtocolError::InvalidJson(_))
        ));
        assert_eq!(
            parse_message(br#"{"a":1,"a":2}"#, MessageLimits::DEFAULT),
            Err(ProtocolError::DuplicateKey { key: "a".into() })
        );
    }
}
