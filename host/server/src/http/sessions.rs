//! Handshake-era sessions: issued by `initialize` in the `Mcp-Session-Id` header, named
//! by every later request, ended by DELETE.
//!
//! A session id is 128 bits from the operating system's CSPRNG, hex-encoded: it is all
//! that ties a request to a negotiated version and to the calls `notifications/cancelled`
//! may reach, so it must not be guessable. Sessions are capped in number
//! ([`HttpConfig::max_sessions`](crate::HttpConfig::max_sessions)); ending one stops its
//! GET streams and cancels its calls.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use wasmgate_agent::CancellationToken;
use wasmgate_protocol::ProtocolVersion;

use crate::engine::ask::Replies;
use crate::engine::calls::InFlight;
use crate::shutdown::Lifecycle;

/// `Mcp-Session-Id`.
pub(crate) const SESSION_ID: &str = "mcp-session-id";

/// One session.
#[derive(Debug)]
pub(crate) struct Session {
    /// The version `initialize` negotiated.
    pub(crate) version: ProtocolVersion,
    /// Its calls in flight, for `notifications/cancelled`.
    pub(crate) in_flight: Arc<InFlight>,
    /// Ends its streams: fired by DELETE or by the server's shutdown.
    pub(crate) stop: CancellationToken,
    /// Cancels its calls: fired by DELETE or when the shutdown grace period is over.
    pub(crate) abort: CancellationToken,
    /// Whether the client's `initialize` declared `elicitation`.
    pub(crate) elicits: bool,
    /// Requests sent to the client on its calls' streams, waiting for the responses it
    /// POSTs.
    pub(crate) replies: Arc<Replies>,
}

/// Why no session was created.
#[derive(Debug)]
pub(crate) enum Refused {
    /// [`HttpConfig::max_sessions`](crate::HttpConfig::max_sessions) are open.
    Full,
    /// The OS gave no random bytes.
    NoRandomness,
}

/// The open sessions.
#[derive(Debug)]
pub(crate) struct Sessions {
    open: Mutex<HashMap<String, Arc<Session>>>,
    max: usize,
}

impl Sessions {
    pub(crate) fn new(max: usize) -> Self {
        Self { open: Mutex::new(HashMap::new()), max }
    }

    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new session speaking `version` (with a client that `elicits` or not), and its id.
    pub(crate) fn create(&self, version: ProtocolVersion, elicits: bool, life: &Lifecycle) -> Result<String, Refused> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|_| Refused::NoRandomness)?;
        let id = hex::encode(bytes);
        let session = Session {
            version,
            in_flight: Arc::new(InFlight::default()),
            stop: life.stopping.child_token(),
            abort: life.abort.child_token(),
            elicits,
            replies: Arc::default(),
        };
        let mut open = self.open();
        if open.len() >= self.max {
            return Err(Refused::Full);
        }
        open.insert(id.clone(), Arc::new(session));
        Ok(id)
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.open().get(id).cloned()
    }

    /// Ends the session `id`; `false` if there was none.
    pub(crate) fn end(&self, id: &str) -> bool {
        let Some(session) = self.open().remove(id) else { return false };
        session.stop.cancel();
        session.abort.cancel();
        true
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn sessions_are_unguessable_capped_and_ended_by_id() {
        let (sessions, life) = (Sessions::new(2), Lifecycle::default());
        let a = sessions.create(ProtocolVersion::V2025_11_25, false, &life).unwrap();
        let b = sessions.create(ProtocolVersion::V2025_06_18, false, &life).unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(matches!(sessions.create(ProtocolVersion::V2025_11_25, false, &life), Err(Refused::Full)));
        let session = sessions.get(&a).unwrap();
        assert!(sessions.end(&a));
        assert!(session.stop.is_cancelled() && session.abort.is_cancelled());
        assert!(sessions.get(&a).is_none() && !sessions.end(&a));
        assert!(sessions.create(ProtocolVersion::V2025_11_25, false, &life).is_ok());
    }
}
