//! Handshake-era sessions: issued by `initialize` in the `Mcp-Session-Id` header, named
//! by every later request, ended by DELETE.
//!
//! A session id is 128 bits from the operating system's CSPRNG, hex-encoded: it is all
//! that ties a request to a negotiated version and to the calls `notifications/cancelled`
//! may reach, so it must not be guessable. Sessions are capped in number
//! ([`HttpConfig::max_sessions`](crate::HttpConfig::max_sessions)) and end when idle
//! ([`HttpConfig::session_idle_timeout`](crate::HttpConfig::session_idle_timeout): no
//! request, no call in flight, no open stream): a request's own session is checked when
//! it is looked up, and the whole table whenever a session is created, so abandoned
//! sessions cannot fill it; ending one stops its GET streams and cancels its calls.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use wasmgate_core::{Caller, CancellationToken};
use wasmgate_protocol::ProtocolVersion;
use wasmgate_protocol::codes::INVALID_REQUEST;

use super::limit::client_key;
use super::reply::refuse;
use crate::engine::ask::Replies;
use crate::engine::calls::InFlight;
use crate::shutdown::Lifecycle;

/// `Mcp-Session-Id`.
pub(crate) const SESSION_ID: &str = "mcp-session-id";

/// The session a request names, if its `Mcp-Session-Id` is visible ASCII; an error
/// when the header is sent twice, to be answered with [`repeated`].
pub(crate) fn named(headers: &HeaderMap) -> Result<Option<&str>, String> {
    Ok(super::headers::single(headers, SESSION_ID)?.and_then(|v| v.to_str().ok()))
}

/// The 400 of a request that repeats a header it may send once.
pub(crate) fn repeated(error: &str) -> Response {
    refuse(StatusCode::BAD_REQUEST, INVALID_REQUEST, &format!("Invalid request: {error}"))
}

/// One session.
#[derive(Debug)]
pub(crate) struct Session {
    /// The client that opened it (see `limit::client_key`).
    client: IpAddr,
    /// The caller that opened it, when callers are told apart (a token's subject): only
    /// that caller's requests find it.
    owner: Option<String>,
    /// The version `initialize` negotiated.
    pub(crate) version: ProtocolVersion,
    /// Its calls in flight, for `notifications/cancelled`.
    pub(crate) in_flight: Arc<InFlight>,
    /// Ends its streams: fired by DELETE or by the server's shutdown.
    pub(crate) stop: CancellationToken,
    /// Cancels its calls: fired by DELETE or when the shutdown grace period is over.
    pub(crate) abort: CancellationToken,
    /// Whether the client's `initialize` declared `elicitation`.
    pub(crate) caps: crate::engine::Caps,
    /// Requests sent to the client on its calls' streams, waiting for the responses it
    /// POSTs.
    pub(crate) replies: Arc<Replies>,
    /// The level `logging/setLevel` set, if it did.
    pub(crate) log_level: Mutex<Option<wasmgate_core::LogLevel>>,
    /// When a request last named it.
    last_used: Mutex<Instant>,
    /// Its open GET streams.
    streams: AtomicUsize,
    /// The resources it follows; updates go out on its GET streams.
    pub(crate) followed: crate::engine::follow::Followed,
}

impl Session {
    fn touch(&self) {
        *self.last_used.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    fn idle(&self, timeout: Duration) -> bool {
        self.in_flight.len() == 0
            && self.streams.load(Ordering::Acquire) == 0
            && self.last_used.lock().unwrap_or_else(PoisonError::into_inner).elapsed() > timeout
    }

    /// Counts an open GET stream until the returned guard drops.
    pub(crate) fn stream(self: &Arc<Self>) -> StreamGuard {
        self.streams.fetch_add(1, Ordering::AcqRel);
        StreamGuard(Arc::clone(self))
    }
}

/// An open GET stream of a session (see [`Session::stream`]).
#[derive(Debug)]
pub(crate) struct StreamGuard(Arc<Session>);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.0.streams.fetch_sub(1, Ordering::AcqRel);
        self.0.touch();
    }
}

/// Why no session was created.
#[derive(Debug)]
pub(crate) enum Refused {
    /// [`HttpConfig::max_sessions`](crate::HttpConfig::max_sessions) are open.
    Full,
    /// The client has [`HttpConfig::max_sessions_per_client`](crate::HttpConfig::max_sessions_per_client) open.
    ClientFull,
    /// The OS gave no random bytes.
    NoRandomness,
}

/// The open sessions.
#[derive(Debug)]
pub(crate) struct Sessions {
    open: Mutex<HashMap<String, Arc<Session>>>,
    max: usize,
    per_client: usize,
    idle_timeout: Duration,
    /// This replica's name, which starts every session id it issues, in a cluster.
    replica: Option<String>,
}

impl Sessions {
    pub(crate) fn new(max: usize, per_client: usize, idle_timeout: Duration) -> Self {
        Self { open: Mutex::new(HashMap::new()), max, per_client, idle_timeout, replica: None }
    }

    /// Sessions whose ids start with `replica`'s name.
    pub(crate) fn of_replica(self, replica: Option<String>) -> Self {
        Self { replica, ..self }
    }

    /// What to tell a client whose session `id` is not here: that it is unknown (the
    /// client starts a new one), and, when it names another replica, that the load
    /// balancer sent it to the wrong one.
    pub(crate) fn not_found(&self, id: &str) -> String {
        match (crate::cluster::replica_of(id), &self.replica) {
            (Some(theirs), Some(ours)) if theirs != ours => format!(
                "Session not found: it was opened on replica {theirs}, and this is replica {ours}. The load balancer \
                 must send every request of a session to the replica that opened it (route by Mcp-Session-Id; see \
                 docs/DEPLOY.md), or use protocol version 2026-07-28, which needs no session"
            ),
            _ => "Session not found".to_owned(),
        }
    }

    /// Ends every idle session in `open`.
    fn expire(&self, open: &mut HashMap<String, Arc<Session>>) {
        open.retain(|_, session| !self.ended_if_idle(session));
    }

    /// Whether `session` has been idle too long, in which case it is stopped and the
    /// caller drops it from the table.
    fn ended_if_idle(&self, session: &Session) -> bool {
        let idle = session.idle(self.idle_timeout);
        if idle {
            tracing::debug!("an idle session expired");
            stop(session);
        }
        idle
    }

    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new session for the client at `peer`, speaking `version` (with a client that
    /// can be asked what `caps` says), and its id.
    pub(crate) fn create(
        &self,
        peer: IpAddr,
        owner: Option<&Caller>,
        version: ProtocolVersion,
        caps: crate::engine::Caps,
        life: &Lifecycle,
    ) -> Result<String, Refused> {
        let client = client_key(peer);
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|_| Refused::NoRandomness)?;
        let id = match &self.replica {
            Some(replica) => format!("{replica}.{}", hex::encode(bytes)),
            None => hex::encode(bytes),
        };
        let session = Session {
            client,
            owner: owner.map(|caller| caller.subject.clone()),
            version,
            in_flight: Arc::new(InFlight::default()),
            stop: life.stopping.child_token(),
            abort: life.abort.child_token(),
            caps,
            replies: Arc::default(),
            log_level: Mutex::default(),
            last_used: Mutex::new(Instant::now()),
            streams: AtomicUsize::new(0),
            followed: crate::engine::follow::Followed::default(),
        };
        let mut open = self.open();
        self.expire(&mut open);
        if open.len() >= self.max {
            return Err(Refused::Full);
        }
        if open.values().filter(|s| s.client == client).count() >= self.per_client {
            return Err(Refused::ClientFull);
        }
        open.insert(id.clone(), Arc::new(session));
        Ok(id)
    }

    /// The session `id` of `caller`, marked as used now; `None` when there is none, it
    /// expired, or another caller opened it (as if there were none: an id says nothing
    /// to whoever did not open it). Only this session is checked, not the whole table:
    /// that is swept when a session is created, which is when abandoned ones could fill it.
    pub(crate) fn get(&self, id: &str, caller: Option<&Caller>) -> Option<Arc<Session>> {
        let mut open = self.open();
        let session = open.get(id).filter(|s| s.owned_by(caller)).cloned()?;
        if self.ended_if_idle(&session) {
            open.remove(id);
            return None;
        }
        session.touch();
        Some(session)
    }

    /// Ends the session `id` of `caller`; `false` if it has none of that id.
    pub(crate) fn end(&self, id: &str, caller: Option<&Caller>) -> bool {
        let mut open = self.open();
        if !open.get(id).is_some_and(|s| s.owned_by(caller)) {
            return false;
        }
        let Some(session) = open.remove(id) else { return false };
        drop(open);
        stop(&session);
        true
    }
}

impl Session {
    /// Whether `caller` opened it (any caller may, where callers are not told apart).
    fn owned_by(&self, caller: Option<&Caller>) -> bool {
        self.owner.as_deref() == caller.map(|c| c.subject.as_str())
    }
}

/// Stops a session's GET streams and cancels its calls.
fn stop(session: &Session) {
    session.stop.cancel();
    session.abort.cancel();
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::engine::Caps;

    const LOCAL: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    #[test]
    fn sessions_are_unguessable_capped_and_ended_by_id() {
        let (sessions, life) = (Sessions::new(2, 2, Duration::from_secs(3600)), Lifecycle::default());
        let a = sessions.create(LOCAL, None, ProtocolVersion::V2025_11_25, Caps::default(), &life).unwrap();
        let b = sessions.create(LOCAL, None, ProtocolVersion::V2025_06_18, Caps::default(), &life).unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(matches!(
            sessions.create(LOCAL, None, ProtocolVersion::V2025_11_25, Caps::default(), &life),
            Err(Refused::Full)
        ));
        let session = sessions.get(&a, None).unwrap();
        assert!(sessions.end(&a, None));
        assert!(session.stop.is_cancelled() && session.abort.is_cancelled());
        assert!(sessions.get(&a, None).is_none() && !sessions.end(&a, None));
        assert!(sessions.create(LOCAL, None, ProtocolVersion::V2025_11_25, Caps::default(), &life).is_ok());
    }

    #[test]
    fn idle_sessions_expire_but_not_while_a_call_or_a_stream_is_open() {
        let (sessions, life) = (Sessions::new(3, 3, Duration::from_millis(1)), Lifecycle::default());
        let idle = sessions.create(LOCAL, None, ProtocolVersion::V2025_11_25, Caps::default(), &life).unwrap();
        let calling = sessions.create(LOCAL, None, ProtocolVersion::V2025_11_25, Caps::default(), &life).unwrap();
        let streaming = sessions.create(LOCAL, None, ProtocolVersion::V2025_11_25, Caps::default(), &life).unwrap();
        let parent = CancellationToken::new();
        let call =
            sessions.get(&calling, None).unwrap().in_flight.start(&wasmgate_protocol::Id::Int(1), &parent).unwrap();
        let stream = sessions.get(&streaming, None).unwrap().stream();
        let idle_session = sessions.get(&idle, None).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        // The table was full; creating expires the idle one and makes room.
        let fresh = sessions.create(LOCAL, None, ProtocolVersion::V2025_11_25, Caps::default(), &life).unwrap();
        assert!(idle_session.stop.is_cancelled() && idle_session.abort.is_cancelled());
        assert!(sessions.get(&idle, None).is_none(), "expired");
        assert!(sessions.get(&calling, None).is_some(), "a call in flight keeps its session");
        assert!(sessions.get(&streaming, None).is_some(), "an open stream keeps its session");
        drop((call, stream));
        std::thread::sleep(Duration::from_millis(5));
        assert!(
            sessions.get(&calling, None).is_none()
                && sessions.get(&streaming, None).is_none()
                && sessions.get(&fresh, None).is_none()
        );
    }

    #[test]
    fn one_client_cannot_take_every_session() {
        let (sessions, life) = (Sessions::new(4, 2, Duration::from_secs(3600)), Lifecycle::default());
        let first = sessions.create(LOCAL, None, ProtocolVersion::V2025_11_25, Caps::default(), &life).unwrap();
        // 127.0.0.2 is the same client as 127.0.0.1 (every loopback address is one).
        let other_loopback = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 2));
        sessions.create(other_loopback, None, ProtocolVersion::V2025_11_25, Caps::default(), &life).unwrap();
        let third = sessions.create(LOCAL, None, ProtocolVersion::V2025_11_25, Caps::default(), &life);
        assert!(matches!(third, Err(Refused::ClientFull)), "{third:?}");
        let remote = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 7));
        sessions.create(remote, None, ProtocolVersion::V2025_11_25, Caps::default(), &life).unwrap();
        assert!(sessions.end(&first, None));
        sessions.create(LOCAL, None, ProtocolVersion::V2025_11_25, Caps::default(), &life).unwrap();
    }
}
