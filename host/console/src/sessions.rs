//! Sign-ins under way and sessions.
//!
//! * A sign-in under way is the browser's to hold: its sign-in cookie carries
//!   the `state`, the PKCE verifier and when it ends ([`LOGIN_TTL`] from its start),
//!   sealed with a key of this process's ([`Seal`]). The gateway keeps no table of them,
//!   so nobody can push a person's sign-in out by starting many.
//! * A session is kept under the random id of its session cookie until it
//!   expires or its user signs out. At most [`MAX_SESSIONS`]; past them the one that
//!   expires first is dropped.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Map, Value};

/// How long a sign-in may take at the authorization server.
pub(crate) const LOGIN_TTL: Duration = Duration::from_secs(600);
/// The most sessions at once.
pub(crate) const MAX_SESSIONS: usize = 1024;
/// The most sessions of one subject at once: one person signing in again and again
/// cannot fill the table and so sign everyone else out.
pub(crate) const MAX_SESSIONS_PER_SUBJECT: usize = 16;

/// The key that seals the sign-ins under way (their cookies), drawn when the console
/// starts.
pub(crate) struct Seal {
    /// `None` without the OS's random numbers: then nothing is sealed, and nobody can
    /// sign in.
    key: Option<[u8; 32]>,
}

impl std::fmt::Debug for Seal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Seal").finish_non_exhaustive()
    }
}

impl Seal {
    pub(crate) fn new() -> Self {
        let mut key = [0u8; 32];
        Self { key: getrandom::fill(&mut key).is_ok().then_some(key) }
    }

    fn mac(key: &[u8; 32], state: &str, verifier: &str, ends: u64) -> String {
        let sealed = blake3::keyed_hash(key, format!("{state}\n{verifier}\n{ends}").as_bytes());
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sealed.as_bytes())
    }

    /// The cookie of a sign-in under way with `state` and `verifier` (URL-safe base64,
    /// as `oauth2` makes them), ending at `ends` (Unix seconds).
    pub(crate) fn seal(&self, state: &str, verifier: &str, ends: u64) -> Option<String> {
        let key = self.key.as_ref()?;
        Some(format!("{state}.{verifier}.{ends}.{}", Self::mac(key, state, verifier, ends)))
    }

    /// The PKCE verifier of the sign-in `cookie` holds, if this process sealed it, for
    /// `state`, and it has not ended by `now` (Unix seconds).
    pub(crate) fn open(&self, cookie: &str, state: &str, now: u64) -> Option<String> {
        use subtle::ConstantTimeEq as _;
        let key = self.key.as_ref()?;
        let (sealed_state, rest) = cookie.split_once('.')?;
        let (rest, mac) = rest.rsplit_once('.')?;
        let (verifier, ends) = rest.rsplit_once('.')?;
        let ends: u64 = ends.parse().ok()?;
        let expected = Self::mac(key, sealed_state, verifier, ends);
        let genuine = bool::from(expected.as_bytes().ct_eq(mac.as_bytes()));
        let same = bool::from(sealed_state.as_bytes().ct_eq(state.as_bytes()));
        (genuine && same && !state.is_empty() && ends > now).then(|| verifier.to_owned())
    }
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

    /// A new session for `subject`, lasting `ttl`: its id.
    pub fn open(&self, subject: String, facts: Map<String, Value>, ttl: Duration) -> String {
        let now = Instant::now();
        let id = random();
        let mut inner = self.inner();
        inner.sessions.retain(|_, session| session.expires > now);
        // The subject's own session that expires first goes when it has its fill, else
        // the one of all that expires first when the table is full.
        let own = inner.sessions.iter().filter(|(_, s)| s.subject == subject);
        let gone = if own.clone().count() >= MAX_SESSIONS_PER_SUBJECT {
            own.min_by_key(|(_, s)| s.expires).map(|(k, _)| k.clone())
        } else if inner.sessions.len() >= MAX_SESSIONS {
            inner.sessions.iter().min_by_key(|(_, s)| s.expires).map(|(k, _)| k.clone())
        } else {
            None
        };
        if let Some(gone) = gone {
            inner.sessions.remove(&gone);
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

    /// How many sessions are open.
    #[cfg(test)]
    pub fn count(&self) -> usize {
        self.inner().sessions.len()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_sign_in_is_opened_only_as_sealed_for_its_state_and_in_time() {
        let seal = Seal::new();
        let cookie = seal.seal("st4te", "ver-if_ier", 1_000).unwrap();
        assert_eq!(seal.open(&cookie, "st4te", 999).as_deref(), Some("ver-if_ier"));
        assert_eq!(seal.open(&cookie, "st4te", 1_000), None, "ended");
        assert_eq!(seal.open(&cookie, "other", 999), None, "another sign-in's state");
        assert_eq!(Seal::new().open(&cookie, "st4te", 999), None, "another process's key");
        for forged in [
            cookie.replace("ver-if_ier", "verifier"),
            cookie.replace(".1000.", ".2000."),
            cookie.replacen("st4te", "st4tf", 1),
            format!("{cookie}x"),
            "st4te.v.1000".into(),
            String::new(),
        ] {
            assert_eq!(seal.open(&forged, "st4te", 999), None, "{forged:?}");
        }
        assert_eq!(Seal { key: None }.seal("s", "v", 1), None, "no key, no sign-in");
    }

    #[test]
    fn sessions_are_bounded_and_expire() {
        let sessions = Sessions::default();
        let mut first = None;
        for i in 0..MAX_SESSIONS + 3 {
            let id = sessions.open(format!("u{i}"), Map::new(), Duration::from_secs(60 + i as u64));
            first.get_or_insert(id);
        }
        assert_eq!(sessions.count(), MAX_SESSIONS);
        assert!(sessions.get(first.as_deref().unwrap()).is_none(), "the session that expires first went");

        // One subject, again and again: only its own sessions go.
        let before = sessions.count();
        let others = sessions.open("dave".into(), Map::new(), Duration::from_secs(7_200));
        for _ in 0..100 {
            sessions.open("mallory".into(), Map::new(), Duration::from_secs(3_600));
        }
        assert!(sessions.get(&others).is_some(), "dave's session stays");
        let mallorys = sessions.inner().sessions.values().filter(|s| s.subject == "mallory").count();
        assert_eq!((sessions.count(), mallorys), (before, MAX_SESSIONS_PER_SUBJECT));

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
