//! `wasmgate serve --http` as an OAuth 2.1 resource server: access tokens are JWTs,
//! checked against the signing keys the issuer publishes (its JWKS), as the MCP
//! authorization specification asks of an MCP server.
//!
//! A token is let in when all of these hold:
//!
//! * its signature verifies with the issuer's key named by its `kid` (or its only key),
//!   under an asymmetric algorithm (RS*, PS*, ES256, ES384, EdDSA: a symmetric `HS*`
//!   token could be signed with a public key taken for a secret, and is refused);
//! * `iss` is the configured issuer and `aud` names this gateway's resource URL;
//! * `exp` is in the future and `nbf`, if any, in the past (30 s of leeway each);
//! * it has a `sub`, which becomes the caller's name;
//! * its `scope` (space-separated) or `scp` (a list) holds every configured scope (else
//!   403, `insufficient_scope`).
//!
//! Keys are fetched at the first request, kept, fetched again every 10 minutes, and at
//! once when a token names a key not among them (the issuer rotated its keys), but no
//! more often than every 30 s: a stream of tokens with made-up key ids cannot make the
//! gateway hammer the issuer. A failed fetch keeps the keys it had. The JWKS is read up
//! to 256 KiB within 10 s, over HTTPS (plain HTTP only to a loopback host).

use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value, json};
use std::sync::{Mutex, PoisonError};

use tokio::sync::watch;
use wasmgate_core::{BoxFuture, Caller};
use wasmgate_server::{AuthFailure, Authenticator};

use crate::config::ResourceServerConfig;

/// How long fetched keys are trusted before they are fetched again.
const KEYS_TTL: Duration = Duration::from_secs(600);
/// The least time between two fetches.
const MIN_REFETCH: Duration = Duration::from_secs(30);
/// The largest JWKS read.
const MAX_JWKS_BYTES: usize = 256 << 10;
/// Clock skew allowed on `exp` and `nbf`, in seconds.
const LEEWAY_SECS: u64 = 30;

/// The checks of the module docs, for one issuer and one resource.
#[derive(Debug)]
pub struct JwtAuthenticator {
    config: ResourceServerConfig,
    http: reqwest::Client,
    keys: Mutex<Keys>,
    /// Moves on each time a fetch of the keys ends, for the checks that wait for it.
    fetched: watch::Sender<u64>,
    min_refetch: Duration,
}

#[derive(Debug, Default)]
struct Keys {
    set: Option<JwkSet>,
    fetched: Option<Instant>,
    /// A fetch is under way (no lock is held while it is).
    fetching: bool,
}

/// A fetch of the keys under way: when it ends, or is dropped midway, the next may start
/// and the checks waiting for it look again.
struct Fetching<'a>(&'a JwtAuthenticator);

impl Drop for Fetching<'_> {
    fn drop(&mut self) {
        self.0.keys().fetching = false;
        self.0.fetched.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// Why a resource server cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum ResourceServerError {
    /// A value that is not a URL.
    #[error("[serve.oauth] {key}: {url:?} is not a URL")]
    NotAUrl {
        /// The key.
        key: &'static str,
        /// Its value.
        url: String,
    },
    /// A URL that is neither `https` nor `http` to a loopback host.
    #[error("[serve.oauth] {key}: {url:?} must be https (http only to a loopback host)")]
    Insecure {
        /// The key.
        key: &'static str,
        /// Its value.
        url: String,
    },
    /// The HTTP client could not be made.
    #[error("cannot make the HTTP client for the JWKS")]
    Client(#[source] reqwest::Error),
}

impl JwtAuthenticator {
    /// A resource server for `config`.
    ///
    /// # Errors
    ///
    /// A `resource` or `jwks_uri` that is not an `https` URL (or `http` to a loopback host).
    pub fn new(config: ResourceServerConfig) -> Result<Self, ResourceServerError> {
        for (key, url) in [("resource", &config.resource), ("jwks_uri", &config.jwks_uri)] {
            check_url(key, url)?;
        }
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(ResourceServerError::Client)?;
        Ok(Self { config, http, keys: Mutex::default(), fetched: watch::Sender::new(0), min_refetch: MIN_REFETCH })
    }

    /// The least time between two fetches of the keys (default 30 s).
    #[must_use]
    pub fn min_refetch(mut self, interval: Duration) -> Self {
        self.min_refetch = interval;
        self
    }

    fn keys(&self) -> std::sync::MutexGuard<'_, Keys> {
        self.keys.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The key for a token's `kid`, fetching the JWKS when it is stale, missing, or does
    /// not have that key (no more often than `min_refetch`). No lock is held while the
    /// keys are fetched: a token whose key is known is checked at once whatever a fetch
    /// is doing, and only a token whose key is not waits for the fetch under way.
    async fn key(&self, kid: Option<&str>) -> Result<jsonwebtoken::jwk::Jwk, String> {
        let find = |set: &JwkSet| match kid {
            Some(kid) => set.find(kid).cloned(),
            None if set.keys.len() == 1 => set.keys.first().cloned(),
            None => None,
        };
        let mut fetched = self.fetched.subscribe();
        let fetching = {
            let mut keys = self.keys();
            let stale = keys.fetched.is_none_or(|at| at.elapsed() > KEYS_TTL);
            let found = keys.set.as_ref().and_then(find);
            let may_fetch = keys.fetched.is_none_or(|at| at.elapsed() >= self.min_refetch);
            // A known key serves unless it is stale and a fetch may start now.
            if let Some(found) = found.filter(|_| !stale || keys.fetching || !may_fetch) {
                return Ok(found);
            }
            if keys.fetching {
                None
            } else if may_fetch {
                (keys.fetching, keys.fetched) = (true, Some(Instant::now()));
                Some(Fetching(self))
            } else {
                return Err(no_key(kid));
            }
        };
        match fetching {
            Some(fetching) => {
                let set = self.fetch().await;
                match set {
                    Ok(set) => self.keys().set = Some(set),
                    Err(why) => {
                        tracing::warn!(jwks = %self.config.jwks_uri, %why, "the issuer's keys could not be fetched")
                    }
                }
                drop(fetching);
            }
            // Another check's fetch (bounded by the client's timeout) is under way.
            None => {
                let _ = fetched.changed().await;
            }
        }
        self.keys().set.as_ref().and_then(find).ok_or_else(|| no_key(kid))
    }

    async fn fetch(&self) -> Result<JwkSet, String> {
        // (`key` holds no lock while this runs.)
        let mut response = self.http.get(&self.config.jwks_uri).send().await.map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("HTTP {}", response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
            if body.len() + chunk.len() > MAX_JWKS_BYTES {
                return Err(format!("the JWKS is over {MAX_JWKS_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(|e| format!("not a JWKS: {e}"))
    }

    async fn check(&self, token: &str) -> Result<Caller, AuthFailure> {
        let invalid = |why: &str| AuthFailure::Invalid(why.to_owned());
        let header = jsonwebtoken::decode_header(token).map_err(|_| invalid("malformed"))?;
        if !matches!(
            header.alg,
            Algorithm::RS256
                | Algorithm::RS384
                | Algorithm::RS512
                | Algorithm::PS256
                | Algorithm::PS384
                | Algorithm::PS512
                | Algorithm::ES256
                | Algorithm::ES384
                | Algorithm::EdDSA
        ) {
            return Err(invalid("the algorithm is not an asymmetric one"));
        }
        let jwk = self.key(header.kid.as_deref()).await.map_err(AuthFailure::Invalid)?;
        let key = DecodingKey::from_jwk(&jwk).map_err(|_| invalid("the issuer's key is unusable"))?;
        let mut validation = Validation::new(header.alg);
        validation.leeway = LEEWAY_SECS;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.config.issuer]);
        validation.set_audience(&[&self.config.resource]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let claims = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
            .map_err(|e| AuthFailure::Invalid(reason(e.kind())))?
            .claims;
        let granted = scopes(&claims);
        let missing: Vec<&String> = self.config.scopes.iter().filter(|s| !granted.contains(&s.as_str())).collect();
        if !missing.is_empty() {
            return Err(AuthFailure::InsufficientScope { scope: self.config.scopes.join(" ") });
        }
        let subject = claims.get("sub").and_then(Value::as_str).unwrap_or_default().to_owned();
        if subject.is_empty() {
            return Err(invalid("no subject"));
        }
        Ok(Caller { subject, claims })
    }
}

impl Authenticator for JwtAuthenticator {
    fn authenticate<'a>(&'a self, token: Option<&'a str>) -> BoxFuture<'a, Result<Caller, AuthFailure>> {
        Box::pin(async move {
            match token {
                None => Err(AuthFailure::Missing),
                Some(token) => self.check(token).await,
            }
        })
    }

    fn metadata(&self) -> Value {
        let mut metadata = json!({
            "resource": self.config.resource,
            "authorization_servers": [self.config.issuer],
            "bearer_methods_supported": ["header"],
        });
        if !self.config.scopes.is_empty() {
            metadata["scopes_supported"] = json!(self.config.scopes);
        }
        metadata
    }

    fn metadata_url(&self) -> String {
        metadata_url(&self.config.resource)
    }
}

/// The well-known URL of `resource`'s metadata (RFC 9728: the well-known path between
/// the host and the resource's path).
fn metadata_url(resource: &str) -> String {
    let (scheme, rest) = resource.split_once("://").unwrap_or(("https", resource));
    let (host, path) = rest.find('/').map_or((rest, ""), |at| (&rest[..at], &rest[at..]));
    format!("{scheme}://{host}{}{}", wasmgate_server::METADATA_PATH, path.trim_end_matches('/'))
}

/// The scopes a token grants: `scope` split on spaces, or `scp` as a list.
fn scopes(claims: &Map<String, Value>) -> Vec<&str> {
    match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(scope)), _) => scope.split(' ').filter(|s| !s.is_empty()).collect(),
        (_, Some(Value::Array(list))) => list.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// A short, stable reason for a refused token (never the token).
fn reason(kind: &jsonwebtoken::errors::ErrorKind) -> String {
    use jsonwebtoken::errors::ErrorKind;
    match kind {
        ErrorKind::ExpiredSignature => "expired".into(),
        ErrorKind::ImmatureSignature => "not valid yet".into(),
        ErrorKind::InvalidIssuer => "another issuer's".into(),
        ErrorKind::InvalidAudience => "for another resource".into(),
        ErrorKind::InvalidSignature => "the signature does not verify".into(),
        ErrorKind::MissingRequiredClaim(claim) => format!("no {claim} claim"),
        _ => "not a valid token".into(),
    }
}

/// `url` (the value of `key`) if it is `https`, or `http` to a loopback host.
fn check_url(key: &'static str, url: &str) -> Result<(), ResourceServerError> {
    match url::Url::parse(url) {
        Ok(parsed) if wasmgate_egress::is_secure(&parsed) => Ok(()),
        Ok(_) => Err(ResourceServerError::Insecure { key, url: url.to_owned() }),
        Err(_) => Err(ResourceServerError::NotAUrl { key, url: url.to_owned() }),
    }
}

/// Why a token's key is not among the issuer's.
fn no_key(kid: Option<&str>) -> String {
    match kid {
        Some(kid) => format!("no key {kid:?} among the issuer's keys"),
        None => "the token names no key, and the issuer has more than one".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::{ResourceServerError, check_url, metadata_url};

    #[test]
    fn the_metadata_url_puts_the_well_known_path_before_the_resources() {
        assert_eq!(
            metadata_url("https://gw.example/mcp"),
            "https://gw.example/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(metadata_url("https://gw.example"), "https://gw.example/.well-known/oauth-protected-resource");
    }

    #[test]
    fn only_https_or_loopback_http_urls_are_taken() {
        let check = |url| check_url("jwks_uri", url);
        assert!(check("https://as.example/jwks").is_ok());
        assert!(check("http://127.0.0.1:8080/jwks").is_ok());
        assert!(check("http://localhost/jwks").is_ok());
        assert!(matches!(check("http://as.example/jwks"), Err(ResourceServerError::Insecure { .. })));
        assert!(matches!(check("ftp://as.example"), Err(ResourceServerError::Insecure { .. })));
        assert!(matches!(check("as.example"), Err(ResourceServerError::NotAUrl { .. })));
    }
}
