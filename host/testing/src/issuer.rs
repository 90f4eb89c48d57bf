//! An OAuth 2.1 authorization server, as far as a resource server sees one: Ed25519 keys
//! made here, their JWKS served on loopback, and access tokens signed with them; and as a
//! browser sees one: an authorization endpoint (a sign-in form that takes any user name)
//! and a token endpoint that redeems its codes once, for the PKCE verifier only.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::signature::{Ed25519KeyPair, KeyPair as _};
use serde_json::{Value, json};

use crate::loopback::{Loopback, Request, Response};

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

/// An authorization server with one key, whose JWKS is served on loopback, and whose
/// authorization and token endpoints sign users in.
pub struct Issuer {
    key: Arc<SigningKey>,
    jwks: Jwks,
    endpoints: Loopback,
    groups: Arc<Mutex<HashMap<String, Vec<String>>>>,
}

impl std::fmt::Debug for Issuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issuer").finish_non_exhaustive()
    }
}

/// A code the authorization endpoint gave, until it is redeemed.
struct Grant {
    user: String,
    client_id: String,
    redirect_uri: String,
    challenge: String,
}

/// What the endpoints share.
struct Endpoints {
    key: Arc<SigningKey>,
    groups: Arc<Mutex<HashMap<String, Vec<String>>>>,
    grants: Mutex<HashMap<String, Grant>>,
}

impl Issuer {
    /// A new key pair; its JWKS and the endpoints served on loopback until the issuer is
    /// dropped.
    pub async fn start() -> Self {
        let key = Arc::new(SigningKey::new("k1"));
        let jwks = Jwks::serve(vec![key.jwk.clone()]).await;
        let groups = Arc::new(Mutex::new(HashMap::new()));
        let shared =
            Arc::new(Endpoints { key: Arc::clone(&key), groups: Arc::clone(&groups), grants: Mutex::default() });
        let endpoints = Loopback::start(move |request| shared.answer(&request)).await;
        Self { key, jwks, endpoints, groups }
    }

    /// Where its JWKS is served.
    #[must_use]
    pub fn jwks_uri(&self) -> &str {
        &self.jwks.uri
    }

    /// The authorization endpoint.
    #[must_use]
    pub fn authorization_endpoint(&self) -> String {
        self.endpoints.url("/authorize")
    }

    /// The token endpoint.
    #[must_use]
    pub fn token_endpoint(&self) -> String {
        self.endpoints.url("/token")
    }

    /// The groups of `user`'s tokens from the token endpoint from now on.
    pub fn set_groups(&self, user: &str, groups: &[&str]) {
        let groups = groups.iter().map(|g| (*g).to_owned()).collect();
        self.groups.lock().unwrap().insert(user.to_owned(), groups);
    }

    /// An access token for `subject` (its `email` is `subject@example.com`) in `groups`,
    /// valid for ten minutes.
    #[must_use]
    pub fn token(&self, subject: &str, groups: &[&str]) -> String {
        signed_token(&self.key, subject, groups)
    }

    /// The `[serve.oauth]` table that makes a gateway take its tokens.
    #[must_use]
    pub fn serve_oauth(&self) -> String {
        format!("\n[serve.oauth]\nissuer = {ISSUER:?}\nresource = {RESOURCE:?}\njwks_uri = {:?}\n", self.jwks.uri)
    }

    /// The `[serve.console]` table that signs the console's users in here, as `client_id`.
    #[must_use]
    pub fn serve_console(&self, client_id: &str) -> String {
        format!(
            "\n[serve.console]\nclient_id = {client_id:?}\nauthorization_endpoint = {:?}\ntoken_endpoint = {:?}\n",
            self.authorization_endpoint(),
            self.token_endpoint()
        )
    }
}

fn signed_token<S: AsRef<str>>(key: &SigningKey, subject: &str, groups: &[S]) -> String {
    let groups: Vec<&str> = groups.iter().map(AsRef::as_ref).collect();
    let claims = json!({"iss": ISSUER, "aud": RESOURCE, "sub": subject, "exp": now() + 600,
                        "email": format!("{subject}@example.com"), "groups": groups});
    key.sign(&claims)
}

/// The pairs of a query string or a form body.
fn form(text: &str) -> HashMap<String, String> {
    url::form_urlencoded::parse(text.as_bytes()).into_owned().collect()
}

/// Text for an HTML attribute or element.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn token_error(error: &str) -> Response {
    Response::json_status(400, &json!({"error": error}))
}

impl Endpoints {
    fn answer(&self, request: &Request) -> Response {
        let line = request.head.lines().next().unwrap_or_default();
        let mut parts = line.split(' ');
        let (method, target) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let body = String::from_utf8_lossy(&request.body);
        match (method, path) {
            ("GET", "/authorize") => sign_in_form(&form(query)),
            ("POST", "/authorize") => self.authorize(&form(&body)),
            ("POST", "/token") => self.redeem(&form(&body)),
            _ => Response::json_status(404, &json!({"error": "not_found"})),
        }
    }

    /// The sign-in form answers with a code for the user named, as the redirect URI asks.
    fn authorize(&self, params: &HashMap<String, String>) -> Response {
        let get = |name: &str| params.get(name).cloned().unwrap_or_default();
        if get("response_type") != "code" || get("code_challenge_method") != "S256" || get("code_challenge").is_empty()
        {
            return Response::json_status(400, &json!({"error": "invalid_request"}));
        }
        let mut bytes = [0u8; 16];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes).unwrap();
        let code = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        let grant = Grant {
            user: get("user"),
            client_id: get("client_id"),
            redirect_uri: get("redirect_uri"),
            challenge: get("code_challenge"),
        };
        let Ok(mut location) = url::Url::parse(&grant.redirect_uri) else {
            return Response::json_status(400, &json!({"error": "invalid_request"}));
        };
        location.query_pairs_mut().append_pair("code", &code).append_pair("state", &get("state"));
        self.grants.lock().unwrap().insert(code, grant);
        Response::redirect(location.to_string())
    }

    /// A code redeemed once, by its client, for its redirect URI, with the verifier of its
    /// challenge.
    fn redeem(&self, params: &HashMap<String, String>) -> Response {
        let get = |name: &str| params.get(name).map(String::as_str).unwrap_or_default();
        if get("grant_type") != "authorization_code" {
            return token_error("unsupported_grant_type");
        }
        let Some(grant) = self.grants.lock().unwrap().remove(get("code")) else { return token_error("invalid_grant") };
        let digest = ring::digest::digest(&ring::digest::SHA256, get("code_verifier").as_bytes());
        let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref());
        if grant.client_id != get("client_id")
            || grant.redirect_uri != get("redirect_uri")
            || grant.challenge != challenge
        {
            return token_error("invalid_grant");
        }
        let groups = self.groups.lock().unwrap().get(&grant.user).cloned().unwrap_or_default();
        let token = signed_token(&self.key, &grant.user, &groups);
        Response::json(&json!({"access_token": token, "token_type": "Bearer", "expires_in": 600}))
    }
}

/// The authorization endpoint's page: who signs in (any name is taken), with the
/// request's parameters carried along.
fn sign_in_form(params: &HashMap<String, String>) -> Response {
    let hidden: String = params
        .iter()
        .map(|(name, value)| format!("<input type=\"hidden\" name=\"{}\" value=\"{}\">", escape(name), escape(value)))
        .collect();
    Response::html(format!(
        "<!doctype html><title>Sign in</title><h1>Test issuer</h1><form method=\"post\" action=\"/authorize\">{hidden}\
         <label>User <input id=\"user\" name=\"user\"></label> <button id=\"sign-in\">Sign in</button></form>"
    ))
}
