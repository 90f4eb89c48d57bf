//! The hash chain. Every record's `prev` is the SHA-256 (lowercase hex) of the previous record's
//! exact line bytes, without the newline; the first record's `prev` is the hash of [`GENESIS`].
//! Changing, removing, inserting or reordering any record breaks the chain at the record after it.
//!
//! A keyed chain ([`ChainKey`]) uses HMAC-SHA256 under a secret key instead of SHA-256, the
//! genesis included: whoever can write the log but not read the key cannot rebuild the chain
//! after changing a record. An anchor ([`Anchor`]) names a record by its `seq` and the SHA-256 of
//! its line, keyed chain or not: kept where the log's writer cannot reach it, it shows a log that
//! was cut short behind it, or rewritten up to it.

use std::fmt;
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// What the first record chains to.
pub const GENESIS: &[u8] = b"wasmgate-audit-v1";

/// The shortest key accepted, in bytes.
pub const MIN_KEY_BYTES: usize = 32;

/// The `prev` value of the first record of an unkeyed chain.
pub fn genesis_hash() -> String {
    line_hash(GENESIS)
}

/// The SHA-256 of one record line (without its newline).
pub fn line_hash(line: &[u8]) -> String {
    hex::encode(Sha256::digest(line))
}

/// The secret of a keyed chain.
#[derive(Clone, PartialEq, Eq)]
pub struct ChainKey(Vec<u8>);

impl fmt::Debug for ChainKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ChainKey([secret])")
    }
}

/// The largest key file read.
const MAX_KEY_FILE_BYTES: u64 = 4096;

/// Why a key was not taken.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Fewer bytes than `MIN_KEY_BYTES`.
    #[error(
        "the key is {len} bytes; use at least {MIN_KEY_BYTES} random bytes (for example `head -c 32 /dev/urandom > FILE`)"
    )]
    TooShort {
        /// Its length.
        len: usize,
    },
    /// The key file cannot be read.
    #[error("cannot read the key file {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The key file is not a regular file.
    #[error("the key file {} is not a regular file", path.display())]
    NotAFile {
        /// The file.
        path: PathBuf,
    },
    /// Others than its owner may read the key file.
    #[error("the key file {} can be read by others than its owner: `chmod 600 {}`", path.display(), path.display())]
    Readable {
        /// The file.
        path: PathBuf,
    },
    /// The key file is larger than any key.
    #[error("the key file {} is larger than {MAX_KEY_FILE_BYTES} bytes", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// The key in the file is not a key.
    #[error("{}", path.display())]
    InFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with its key.
        source: Box<KeyError>,
    },
}

impl ChainKey {
    /// A key of these bytes, at least `MIN_KEY_BYTES` long.
    ///
    /// # Errors
    ///
    /// [`KeyError::TooShort`].
    pub fn new(bytes: Vec<u8>) -> Result<Self, KeyError> {
        if bytes.len() < MIN_KEY_BYTES {
            return Err(KeyError::TooShort { len: bytes.len() });
        }
        Ok(Self(bytes))
    }

    /// Reads a key file: the whole file is the key. It must be a regular file that only its owner
    /// can read, since whoever reads it can rebuild the chain.
    ///
    /// # Errors
    ///
    /// A [`KeyError`]: what is wrong with the file, and what to do.
    pub fn load(path: &Path) -> Result<Self, KeyError> {
        use std::os::unix::fs::PermissionsExt as _;
        let file = || path.to_owned();
        let meta = std::fs::metadata(path).map_err(|source| KeyError::Read { path: file(), source })?;
        if !meta.is_file() {
            return Err(KeyError::NotAFile { path: file() });
        }
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(KeyError::Readable { path: file() });
        }
        if meta.len() > MAX_KEY_FILE_BYTES {
            return Err(KeyError::TooLarge { path: file() });
        }
        let bytes = std::fs::read(path).map_err(|source| KeyError::Read { path: file(), source })?;
        Self::new(bytes).map_err(|e| KeyError::InFile { path: file(), source: Box::new(e) })
    }

    /// A 32-byte key for `purpose`, derived from this secret (HMAC-SHA256 of the purpose):
    /// one secret file can key several things without one key standing for another.
    #[must_use]
    pub fn derive(&self, purpose: &str) -> [u8; 32] {
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&self.0) else { return [0; 32] };
        mac.update(purpose.as_bytes());
        mac.finalize().into_bytes().into()
    }

    fn mac(&self, bytes: &[u8]) -> String {
        // HMAC takes a key of any length, so this cannot fail.
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&self.0) else { return String::new() };
        mac.update(bytes);
        hex::encode(mac.finalize().into_bytes())
    }
}

/// How a log's records are linked: unkeyed (SHA-256) or keyed (HMAC-SHA256).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chain {
    key: Option<ChainKey>,
}

impl Chain {
    /// A chain under `key`, or unkeyed.
    #[must_use]
    pub fn new(key: Option<ChainKey>) -> Self {
        Self { key }
    }

    /// Its key, when it is keyed.
    #[must_use]
    pub fn key(&self) -> Option<&ChainKey> {
        self.key.as_ref()
    }

    /// Whether the chain is keyed.
    #[must_use]
    pub fn is_keyed(&self) -> bool {
        self.key.is_some()
    }

    /// The `prev` of the first record.
    #[must_use]
    pub fn genesis(&self) -> String {
        self.link(GENESIS)
    }

    /// The `prev` of the record after `line` (without its newline).
    #[must_use]
    pub fn link(&self, line: &[u8]) -> String {
        match &self.key {
            Some(key) => key.mac(line),
            None => line_hash(line),
        }
    }
}

/// A record named by its `seq` and the SHA-256 of its line: `wasmgate-audit-anchor:SEQ:HASH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchor {
    /// The record's `seq` (0: the empty log).
    pub seq: u64,
    /// The SHA-256 of its line (`GENESIS`'s for the empty log).
    pub hash: String,
}

const ANCHOR_PREFIX: &str = "wasmgate-audit-anchor";

impl fmt::Display for Anchor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{ANCHOR_PREFIX}:{}:{}", self.seq, self.hash)
    }
}

/// A text that is not an anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not an anchor: expected `{ANCHOR_PREFIX}:SEQ:HASH`, as `wasmgate audit anchor` prints")]
pub struct NotAnAnchor;

impl std::str::FromStr for Anchor {
    type Err = NotAnAnchor;

    fn from_str(text: &str) -> Result<Self, NotAnAnchor> {
        let bad = || NotAnAnchor;
        let mut parts = text.trim().split(':');
        let (Some(ANCHOR_PREFIX), Some(seq), Some(hash), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let seq = seq.parse().map_err(|_| bad())?;
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return Err(bad());
        }
        Ok(Anchor { seq, hash: hash.to_owned() })
    }
}

/// A full record line (with its newline): `seq`, `time` and `prev` first, then `fields` (the log's
/// own, each with a leading comma: `,"replica":"r1"`, or nothing), then the entry's body, which is a
/// serialized JSON object.
pub(crate) fn record_line(seq: u64, time: &str, prev: &str, fields: &str, body: &str) -> Vec<u8> {
    let rest = body.strip_prefix('{').unwrap_or("}");
    let sep = if rest.starts_with('}') { "" } else { "," };
    format!("{{\"seq\":{seq},\"time\":\"{time}\",\"prev\":\"{prev}\"{fields}{sep}{rest}\n").into_bytes()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_record_line_is_one_json_object_with_the_chain_fields_first() {
        let line = record_line(7, "1970-01-01T00:00:00.000Z", "ab", "", r#"{"event":"started"}"#);
        let text = String::from_utf8(line).unwrap();
        assert_eq!(text, "{\"seq\":7,\"time\":\"1970-01-01T00:00:00.000Z\",\"prev\":\"ab\",\"event\":\"started\"}\n");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["seq"], 7);
        assert_eq!(record_line(1, "t", "p", "", "{}"), b"{\"seq\":1,\"time\":\"t\",\"prev\":\"p\"}\n");
        let replica = record_line(1, "t", "p", ",\"replica\":\"r1\"", r#"{"event":"started"}"#);
        assert_eq!(replica, b"{\"seq\":1,\"time\":\"t\",\"prev\":\"p\",\"replica\":\"r1\",\"event\":\"started\"}\n");
    }

    #[test]
    fn the_genesis_hash_is_fixed() {
        assert_eq!(genesis_hash(), line_hash(b"wasmgate-audit-v1"));
        assert_eq!(genesis_hash().len(), 64);
        assert_eq!(Chain::default().genesis(), genesis_hash());
    }

    #[test]
    fn a_keyed_chain_links_differently_for_every_key_and_never_as_the_unkeyed_one() {
        let key = |b: u8| Chain::new(Some(ChainKey::new(vec![b; 32]).unwrap()));
        let (a, b) = (key(1), key(2));
        assert_ne!(a.genesis(), genesis_hash());
        assert_ne!(a.genesis(), b.genesis());
        assert_ne!(a.link(b"{}"), Chain::default().link(b"{}"));
        assert_eq!(a.link(b"{}"), key(1).link(b"{}"));
        assert_eq!(a.link(b"{}").len(), 64);
    }

    #[test]
    fn a_short_or_shared_key_is_refused() {
        assert!(ChainKey::new(vec![0; 31]).unwrap_err().to_string().contains("at least 32"));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, [7u8; 32]).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert!(ChainKey::load(&path).unwrap_err().to_string().contains("chmod 600"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(ChainKey::load(&path).unwrap(), ChainKey::new(vec![7; 32]).unwrap());
        assert!(format!("{:?}", ChainKey::load(&path).unwrap()).contains("secret"));
    }

    #[test]
    fn an_anchor_reads_back_what_it_prints_and_nothing_else() {
        let anchor = Anchor { seq: 42, hash: genesis_hash() };
        assert_eq!(anchor.to_string().parse::<Anchor>().unwrap(), anchor);
        for bad in
            ["", "42:abc", "wasmgate-audit-anchor:x:00", "wasmgate-audit-anchor:1:XYZ", "wasmgate-audit-anchor:1:ab:c"]
        {
            assert!(bad.parse::<Anchor>().is_err(), "{bad}");
        }
    }
}
