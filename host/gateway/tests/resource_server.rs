//! `wasmgate serve --http` as a resource server: JWT access tokens signed with a key pair
//! this test makes, checked against a JWKS this test serves on loopback.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::signature::{Ed25519KeyPair, KeyPair as _};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use wasmgate_gateway::JwtAuthenticator;
use wasmgate_gateway::ResourceServerConfig;
use wasmgate_server::{AuthFailure, Authenticator};

const ISSUER: &str = "https://as.example";
const RESOURCE: &str = "https://gw.example/mcp";

/// An Ed25519 key made here: its signing key and its JWK.
struct Key {
    signing: EncodingKey,
    jwk: Value,
}

fn key(kid: &str) -> Key {
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&ring::rand::SystemRandom::new()).unwrap();
    let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
    let x = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(pair.public_key().as_ref());
    let jwk = json!({"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "alg": "EdDSA", "use": "sig"});
    Key { signing: EncodingKey::from_ed_der(pkcs8.as_ref()), jwk }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// A token signed by `key` as `kid` with the usual claims, changed by `edit`.
fn token(key: &Key, kid: &str, edit: impl FnOnce(&mut Value)) -> String {
    let mut claims = json!({"iss": ISSUER, "aud": RESOURCE, "sub": "alice", "exp": now() + 300,
                            "email": "alice@example.com", "scope": "mcp other"});
    edit(&mut claims);
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, &claims, &key.signing).unwrap()
}

/// Serves the JWKS in `keys` on loopback, counting the fetches; returns its URL.
async fn jwks(keys: Arc<Mutex<Vec<Value>>>, fetches: Arc<Mutex<usize>>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).await.unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            *fetches.lock().unwrap() += 1;
            let body = json!({"keys": *keys.lock().unwrap()}).to_string();
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
        }
    });
    url
}

fn config(jwks_uri: &str, scopes: &[&str]) -> ResourceServerConfig {
    ResourceServerConfig {
        issuer: ISSUER.into(),
        resource: RESOURCE.into(),
        jwks_uri: jwks_uri.into(),
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
    }
}

/// A change to a token's claims.
type Edit = Box<dyn FnOnce(&mut Value)>;

fn invalid(outcome: Result<wasmgate_core::Caller, AuthFailure>) -> String {
    match outcome {
        Err(AuthFailure::Invalid(why)) => why,
        other => panic!("expected an invalid token, got {other:?}"),
    }
}

#[tokio::test]
async fn a_token_of_the_issuer_for_this_resource_names_its_caller_and_others_are_refused() {
    let first = key("k1");
    let keys = Arc::new(Mutex::new(vec![first.jwk.clone()]));
    let fetches = Arc::new(Mutex::new(0));
    let url = jwks(Arc::clone(&keys), Arc::clone(&fetches)).await;
    let server = JwtAuthenticator::new(config(&url, &["mcp"])).unwrap();

    let caller = server.authenticate(Some(&token(&first, "k1", |_| {}))).await.unwrap();
    assert_eq!(caller.subject, "alice");
    assert_eq!(caller.claims["email"], "alice@example.com");
    assert_eq!(server.authenticate(None).await, Err(AuthFailure::Missing));

    let cases: [(&str, Edit); 5] = [
        ("another issuer's", Box::new(|c| c["iss"] = json!("https://evil.example"))),
        ("for another resource", Box::new(|c| c["aud"] = json!("https://other.example/mcp"))),
        ("expired", Box::new(|c| c["exp"] = json!(now() - 120))),
        ("not valid yet", Box::new(|c| c["nbf"] = json!(now() + 120))),
        ("no sub claim", Box::new(|c| drop(c.as_object_mut().unwrap().remove("sub")))),
    ];
    for (reason, edit) in cases {
        assert_eq!(invalid(server.authenticate(Some(&token(&first, "k1", edit))).await), reason);
    }
    let mut forged = token(&first, "k1", |_| {});
    forged.push('x');
    assert_eq!(invalid(server.authenticate(Some(&forged)).await), "not a valid token", "a garbled signature");
    let stranger = key("k1");
    assert_eq!(
        invalid(server.authenticate(Some(&token(&stranger, "k1", |_| {}))).await),
        "the signature does not verify",
        "a key of the same name that is not the issuer's"
    );
    let hs = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &json!({"iss": ISSUER, "aud": RESOURCE, "sub": "alice", "exp": now() + 300}),
        &EncodingKey::from_secret(b"a public key taken for a secret"),
    )
    .unwrap();
    assert_eq!(invalid(server.authenticate(Some(&hs)).await), "the algorithm is not an asymmetric one");
    assert_eq!(invalid(server.authenticate(Some("not.a.jwt")).await), "malformed");

    let narrow = token(&first, "k1", |c| c["scope"] = json!("other"));
    assert_eq!(server.authenticate(Some(&narrow)).await, Err(AuthFailure::InsufficientScope { scope: "mcp".into() }));
    let listed = token(&first, "k1", |c| {
        c.as_object_mut().unwrap().remove("scope");
        c["scp"] = json!(["mcp"]);
    });
    assert!(server.authenticate(Some(&listed)).await.is_ok(), "scp as a list");
    assert_eq!(*fetches.lock().unwrap(), 1, "the keys are fetched once and kept");

    let metadata = server.metadata();
    assert_eq!(metadata["resource"], RESOURCE);
    assert_eq!(metadata["authorization_servers"], json!([ISSUER]));
    assert_eq!(metadata["scopes_supported"], json!(["mcp"]));
    assert_eq!(server.metadata_url(), "https://gw.example/.well-known/oauth-protected-resource/mcp");
}

#[tokio::test]
async fn a_rotated_key_is_fetched_when_a_token_names_it_but_not_more_often_than_allowed() {
    let (first, second) = (key("k1"), key("k2"));
    let keys = Arc::new(Mutex::new(vec![first.jwk.clone()]));
    let fetches = Arc::new(Mutex::new(0));
    let url = jwks(Arc::clone(&keys), Arc::clone(&fetches)).await;

    // Within the refetch interval, an unknown key is not fetched for.
    let patient = JwtAuthenticator::new(config(&url, &[])).unwrap();
    assert!(patient.authenticate(Some(&token(&first, "k1", |_| {}))).await.is_ok());
    keys.lock().unwrap().push(second.jwk.clone());
    for _ in 0..5 {
        let refused = invalid(patient.authenticate(Some(&token(&second, "k2", |_| {}))).await);
        assert_eq!(refused, "no key \"k2\" among the issuer's keys");
    }
    assert_eq!(*fetches.lock().unwrap(), 1, "made-up key ids do not make it hammer the issuer");

    // Once the interval has passed, the token naming the new key brings it in.
    let eager = JwtAuthenticator::new(config(&url, &[])).unwrap().min_refetch(Duration::ZERO);
    *keys.lock().unwrap() = vec![first.jwk.clone()];
    assert!(eager.authenticate(Some(&token(&first, "k1", |_| {}))).await.is_ok());
    keys.lock().unwrap().push(second.jwk.clone());
    let caller = eager.authenticate(Some(&token(&second, "k2", |_| {}))).await.unwrap();
    assert_eq!(caller.subject, "alice");
    assert_eq!(*fetches.lock().unwrap(), 3);
}

#[test]
fn a_resource_server_needs_https_urls() {
    let refused = JwtAuthenticator::new(config("http://as.example/jwks", &[])).unwrap_err();
    assert!(refused.to_string().contains("jwks_uri") && refused.to_string().contains("https"), "{refused}");
}
