//! An OAuth 2.1 authorization server, as far as a resource server sees one: Ed25519 keys
//! made here, their JWKS served on loopback, and access tokens signed with them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::signature::{Ed25519KeyPair, KeyPair as _};
use serde_json::{Value, json};

use crate::loopback::{Loopback, Response};

/// The issuer's name in its tokens.
pub const ISSUER: &str = "https://as.example";
/// The gateway's resource URL: its tokens' audience.
pub const RESOURCE: &str = "https://gw.example/mcp";

/// Seconds since the Unix epoch.
#[must_use]
pub fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// An Ed25519 key made here: what it signs with, and its public JWK.
pub struct SigningKey {
    kid: String,
    signing: EncodingKey,
    /// Its public key as a JWK (`kid`, `alg` EdDSA).
    pub jwk: Value,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey").finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A new key named `kid`.
    #[must_use]
    pub fn new(kid: &str) -> Self {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&ring::rand::SystemRandom::new()).unwrap();
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        let x = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(pair.public_key().as_ref());
        let jwk = json!({"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "alg": "EdDSA", "use": "sig"});
        Self { kid: kid.to_owned(), signing: EncodingKey::from_ed_der(pkcs8.as_ref()), jwk }
    }

    /// `claims` signed with this key, under its own `kid`.
    #[must_use]
    pub fn sign(&self, claims: &Value) -> String {
        self.sign_as(&self.kid, claims)
    }

    /// `claims` signed with this key, its header naming `kid` (which may not be its own).
    #[must_use]
    pub fn sign_as(&self, kid: &str, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, claims, &self.signing).unwrap()
    }
}

/// A JWKS served on loopback; the keys it serves can change, and its fetches are counted.
pub struct Jwks {
    /// Where it is served.
    pub uri: String,
    keys: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
    _server: Loopback,
}

impl std::fmt::Debug for Jwks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jwks").finish_non_exhaustive()
    }
}

impl Jwks {
    /// Serves `keys` (JWKs) until dropped.
    pub async fn serve(keys: Vec<Value>) -> Self {
        let keys = Arc::new(Mutex::new(keys));
        let fetches = Arc::new(AtomicUsize::new(0));
        let (served, counted) = (Arc::clone(&keys), Arc::clone(&fetches));
        let server = Loopback::start(move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
            Response::json(&json!({"keys": *served.lock().unwrap()}))
        })
        .await;
        Self { uri: server.url("/jwks.json"), keys, fetches, _server: server }
    }

    /// Serves `keys` from now on (a key rotated, say).
    pub fn set_keys(&self, keys: Vec<Value>) {
        *self.keys.lock().unwrap() = keys;
    }

    /// How many times it was fetched.
    #[must_use]
    pub fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

/// An authorization server with one key, whose JWKS is served on loopback.
pub struct Issuer {
    key: SigningKey,
    jwks: Jwks,
}

impl std::fmt::Debug for Issuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issuer").finish_non_exhaustive()
    }
}

impl Issuer {
    /// A new key pair, and its JWKS served on loopback until the issuer is dropped.
    pub async fn start() -> Self {
        let key = SigningKey::new("k1");
        let jwks = Jwks::serve(vec![key.jwk.clone()]).await;
        Self { key, jwks }
    }

    /// Where its JWKS is served.
    #[must_use]
    pub fn jwks_uri(&self) -> &str {
        &self.jwks.uri
    }

    /// An access token for `subject` (its `email` is `subject@example.com`) in `groups`,
    /// valid for ten minutes.
    #[must_use]
    pub fn token(&self, subject: &str, groups: &[&str]) -> String {
        let claims = json!({"iss": ISSUER, "aud": RESOURCE, "sub": subject, "exp": now() + 600,
                            "email": format!("{subject}@example.com"), "groups": groups});
        self.key.sign(&claims)
    }

    /// The `[serve.oauth]` table that makes a gateway take its tokens.
    #[must_use]
    pub fn serve_oauth(&self) -> String {
        format!("\n[serve.oauth]\nissuer = {ISSUER:?}\nresource = {RESOURCE:?}\njwks_uri = {:?}\n", self.jwks.uri)
    }
}
