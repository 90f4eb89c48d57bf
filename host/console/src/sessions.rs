//! Sign-ins under way and sessions: random ids, bounded in number, expiring.
//!
//! * A sign-in under way is kept under its `state` for [`LOGIN_TTL`], with its PKCE
//!   verifier and the random value of the browser's `wasmgate_login` cookie; the
//!   callback takes it once. At most [`MAX_LOGINS`]; past them the oldest is dropped.
//! * A session is kept under the random id of its `wasmgate_console` cookie until it
//!   expires or its user signs out. At most [`MAX_SESSIONS`]; past them the one that
//!   expires first is dropped.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Map, Value};

/// How long a sign-in may take at the authorization server.
pub(crate) const LOGIN_TTL: Duration = Duration::from_secs(600);
/// The most sign-ins under way at once.
pub(crate) const MAX_LOGINS: usize = 256;
/// The most sessions at once.
pub(crate) const MAX_SESSIONS: usize = 1024;

/// A sign-in under way.
#[derive(Debug)]
pub(crate) struct Login {
    /// The PKCE verifier.
    pub verifier: String,
    /// The value of the browser's sign-in cookie.
    pub browser: String,
    expires: Instant,
}

/// A signed-in user.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    /// Their token's subject.
    pub subject: String,
    /// Their token's claims and subject, for the policy's `[console]`.
    pub facts: Map<String, Value>,
    /// The token every form of theirs carries.
    pub csrf: String,
    /// What the last action did, shown once.
    pub flash: Option<String>,
    expires: Instant,
}

#[derive(Debug, Default)]
struct Inner {
    logins: HashMap<String, Login>,
    sessions: HashMap<String, Session>,
}

/// Sign-ins under way and sessions.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    inner: Mutex<Inner>,
}

/// 32 random bytes, URL-safe.
pub(crate) fn random() -> String {
    let mut bytes = [0u8; 32];
    // Without the OS's random numbers no id can be trusted: an empty one matches nothing.
    if getrandom::fill(&mut bytes).is_err() {
        return String::new();
    }
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

impl Sessions {
    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps a sign-in under way under `state`.
    pub fn start_login(&self, state: String, verifier: String, browser: String) {
        let now = Instant::now();
        let mut inner = self.inner();
        inner.logins.retain(|_, login| login.expires > now);
        if inner.logins.len() >= MAX_LOGINS
            && let Some(oldest) = inner.logins.iter().min_by_key(|(_, l)| l.expires).map(|(k, _)| k.clone())
        {
            inner.logins.remove(&oldest);
        }
        inner.logins.insert(state, Login { verifier, browser, expires: now + LOGIN_TTL });
    }

    /// Takes the sign-in under `state`, if it is under way still.
    pub fn take_login(&self, state: &str) -> Option<Login> {
        self.inner().logins.remove(state).filter(|login| login.expires > Instant::now())
    }

    /// A new session for `subject`, lasting `ttl`: its id.
    pub fn open(&self, subject: String, facts: Map<String, Value>, ttl: Duration) -> String {
        let now = Instant::now();
        let id = random();
        let mut inner = self.inner();
        inner.sessions.retain(|_, session| session.expires > now);
        if inner.sessions.len() >= MAX_SESSIONS
            && let Some(first) = inner.sessions.iter().min_by_key(|(_, s)| s.expires).map(|(k, _)| k.clone())
        {
            inner.sessions.remove(&first);
        }
        let session = Session { subject, facts, csrf: random(), flash: None, expires: now + ttl };
        inner.sessions.insert(id.clone(), session);
        id
    }

    /// The session `id`, if it has not expired; its message is taken with it.
    pub fn get(&self, id: &str) -> Option<Session> {
        let mut inner = self.inner();
        let session = inner.sessions.get_mut(id)?;
        if session.expires <= Instant::now() {
            inner.sessions.remove(id);
            return None;
        }
        let shown = session.clone();
        session.flash = None;
        Some(shown)
    }

    /// Leaves `message` for the session's next page.
    pub fn flash(&self, id: &str, message: String) {
        if let Some(session) = self.inner().sessions.get_mut(id) {
            session.flash = Some(message);
        }
    }

    /// Ends the session `id`.
    pub fn close(&self, id: &str) {
        self.inner().sessions.remove(id);
    }

    /// How many sign-ins are under way and sessions open.
    #[cfg(test)]
    pub fn counts(&self) -> (usize, usize) {
        let inner = self.inner();
        (inner.logins.len(), inner.sessions.len())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn sign_ins_and_sessions_are_bounded_taken_once_and_expire() {
        let sessions = Sessions::default();
        for i in 0..MAX_LOGINS + 10 {
            sessions.start_login(format!("s{i}"), "v".into(), "b".into());
        }
        assert_eq!(sessions.counts().0, MAX_LOGINS, "past the bound the oldest are dropped");
        assert!(sessions.take_login("s0").is_none());
        let last = format!("s{}", MAX_LOGINS + 9);
        assert_eq!(sessions.take_login(&last).unwrap().verifier, "v");
        assert!(sessions.take_login(&last).is_none(), "a sign-in is taken once");

        let mut first = None;
        for i in 0..MAX_SESSIONS + 3 {
            let id = sessions.open(format!("u{i}"), Map::new(), Duration::from_secs(60 + i as u64));
            first.get_or_insert(id);
        }
        assert_eq!(sessions.counts().1, MAX_SESSIONS);
        assert!(sessions.get(first.as_deref().unwrap()).is_none(), "the session that expires first went");

        let id = sessions.open("alice".into(), Map::new(), Duration::from_secs(60));
        sessions.flash(&id, "done".into());
        assert_eq!(sessions.get(&id).unwrap().flash.as_deref(), Some("done"));
        assert_eq!(sessions.get(&id).unwrap().flash, None, "a message is shown once");
        sessions.close(&id);
        assert!(sessions.get(&id).is_none());

        let gone = sessions.open("bob".into(), Map::new(), Duration::ZERO);
        assert!(sessions.get(&gone).is_none(), "an expired session is no session");
        assert_ne!(random(), random());
        assert_eq!(random().len(), 43);
    }
}
