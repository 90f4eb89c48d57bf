//! The hash chain. Every record's `prev` is the SHA-256 (lowercase hex) of the previous record's
//! exact line bytes, without the newline; the first record's `prev` is the hash of [`GENESIS`].
//! Changing, removing, inserting or reordering any record breaks the chain at the record after it.

use sha2::{Digest, Sha256};

/// What the first record chains to.
pub const GENESIS: &[u8] = b"wasmgate-audit-v1";

/// The `prev` value of the first record.
pub fn genesis_hash() -> String {
    line_hash(GENESIS)
}

/// The hash of one record line (without its newline).
pub fn line_hash(line: &[u8]) -> String {
    hex::encode(Sha256::digest(line))
}

/// A full record line (with its newline): `seq`, `time` and `prev` first, then the entry's body,
/// which is a serialized JSON object.
pub(crate) fn record_line(seq: u64, time: &str, prev: &str, body: &str) -> Vec<u8> {
    let rest = body.strip_prefix('{').unwrap_or("}");
    let sep = if rest.starts_with('}') { "" } else { "," };
    format!("{{\"seq\":{seq},\"time\":\"{time}\",\"prev\":\"{prev}\"{sep}{rest}\n").into_bytes()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_record_line_is_one_json_object_with_the_chain_fields_first() {
        let line = record_line(7, "1970-01-01T00:00:00.000Z", "ab", r#"{"event":"started"}"#);
        let text = String::from_utf8(line).unwrap();
        assert_eq!(text, "{\"seq\":7,\"time\":\"1970-01-01T00:00:00.000Z\",\"prev\":\"ab\",\"event\":\"started\"}\n");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["seq"], 7);
        assert_eq!(record_line(1, "t", "p", "{}"), b"{\"seq\":1,\"time\":\"t\",\"prev\":\"p\"}\n");
    }

    #[test]
    fn the_genesis_hash_is_fixed() {
        assert_eq!(genesis_hash(), line_hash(b"wasmgate-audit-v1"));
        assert_eq!(genesis_hash().len(), 64);
    }
}
