//! [`Cluster`]: what a server shares with the other replicas of one gateway behind a
//! load balancer, and what it keeps to itself.
//!
//! Shared: the key that signs request states (so a state issued by one replica is
//! redeemed by another) and, in a [`SharedStore`], which states were spent (so each is
//! redeemed once between them all). Kept: handshake-era sessions, which hold live
//! streams; a session's id starts with its replica's name, so a load balancer can send
//! every request of a session to the replica that opened it (see docs/DEPLOY.md), and a
//! request that reaches another replica is told where it belongs.

use std::sync::Arc;

use wasmgate_core::SharedStore;

/// One replica's part in a cluster of gateways.
#[derive(Debug, Clone)]
pub struct Cluster {
    /// This replica's name: the start of every session id it issues, and how a request
    /// sent to the wrong replica is told which one it belongs to. Letters, digits, `-`
    /// and `_` ([`valid_replica`]).
    pub replica: String,
    /// The key that signs request states, the same on every replica.
    pub approval_key: [u8; 32],
    /// Where spent states are remembered.
    pub store: Arc<dyn SharedStore>,
    /// Whether the load balancer keeps a handshake-era session on one replica (by the
    /// `Mcp-Session-Id` header). Without it, `initialize` is refused with an error that
    /// says to use 2026-07-28, which needs no session.
    pub affinity: bool,
}

/// The longest replica name.
pub const MAX_REPLICA_CHARS: usize = 32;

/// Whether `name` can name a replica: 1 to `MAX_REPLICA_CHARS` ASCII letters, digits,
/// `-` and `_` (it goes into session ids and audit records as it is).
#[must_use]
pub fn valid_replica(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_REPLICA_CHARS
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The replica a session id names, when it names one (`REPLICA.HEX`).
pub(crate) fn replica_of(session: &str) -> Option<&str> {
    session.split_once('.').map(|(replica, _)| replica).filter(|r| valid_replica(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replica_name_is_short_and_plain_and_a_session_id_names_its_replica() {
        for good in ["r1", "gw-a_2", &"x".repeat(MAX_REPLICA_CHARS)] {
            assert!(valid_replica(good), "{good}");
        }
        for bad in ["", "a.b", "r 1", "r/1", "é", &"x".repeat(MAX_REPLICA_CHARS + 1)] {
            assert!(!valid_replica(bad), "{bad}");
        }
        assert_eq!(replica_of("r2.00ff"), Some("r2"));
        assert_eq!(replica_of("00ff"), None);
        assert_eq!(replica_of("a b.00ff"), None);
    }
}
