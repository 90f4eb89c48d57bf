//! `wasmgate serve --http` as a resource server: JWT access tokens signed with a key pair
//! this test makes, checked against a JWKS this test serves on loopback.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use wasmgate_gateway::{JwtAuthenticator, ResourceServerConfig};
use wasmgate_server::{AuthFailure, Authenticator};
use wasmgate_testing::{ISSUER, Jwks, RESOURCE, SigningKey, now};

/// A token signed by `key` as `kid` with the usual claims, changed by `edit`.
fn token(key: &SigningKey, kid: &str, edit: impl FnOnce(&mut Value)) -> String {
    let mut claims = json!({"iss": ISSUER, "aud": RESOURCE, "sub": "alice", "exp": now() + 300,
                            "email": "alice@example.com", "scope": "mcp other"});
    edit(&mut claims);
    key.sign_as(kid, &claims)
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
    let first = SigningKey::new("k1");
    let jwks = Jwks::serve(vec![first.jwk.clone()]).await;
    let url = jwks.uri.clone();
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
    let stranger = SigningKey::new("k1");
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
    assert_eq!(jwks.fetches(), 1, "the keys are fetched once and kept");

    let metadata = server.metadata();
    assert_eq!(metadata["resource"], RESOURCE);
    assert_eq!(metadata["authorization_servers"], json!([ISSUER]));
    assert_eq!(metadata["scopes_supported"], json!(["mcp"]));
    assert_eq!(server.metadata_url(), "https://gw.example/.well-known/oauth-protected-resource/mcp");
}

#[tokio::test]
async fn a_rotated_key_is_fetched_when_a_token_names_it_but_not_more_often_than_allowed() {
    let (first, second) = (SigningKey::new("k1"), SigningKey::new("k2"));
    let jwks = Jwks::serve(vec![first.jwk.clone()]).await;
    let url = jwks.uri.clone();

    // Within the refetch interval, an unknown key is not fetched for.
    let patient = JwtAuthenticator::new(config(&url, &[])).unwrap();
    assert!(patient.authenticate(Some(&token(&first, "k1", |_| {}))).await.is_ok());
    jwks.set_keys(vec![first.jwk.clone(), second.jwk.clone()]);
    for _ in 0..5 {
        let refused = invalid(patient.authenticate(Some(&token(&second, "k2", |_| {}))).await);
        assert_eq!(refused, "no key \"k2\" among the issuer's keys");
    }
    assert_eq!(jwks.fetches(), 1, "made-up key ids do not make it hammer the issuer");

    // Once the interval has passed, the token naming the new key brings it in.
    let eager = JwtAuthenticator::new(config(&url, &[])).unwrap().min_refetch(Duration::ZERO);
    jwks.set_keys(vec![first.jwk.clone()]);
    assert!(eager.authenticate(Some(&token(&first, "k1", |_| {}))).await.is_ok());
    jwks.set_keys(vec![first.jwk.clone(), second.jwk.clone()]);
    let caller = eager.authenticate(Some(&token(&second, "k2", |_| {}))).await.unwrap();
    assert_eq!(caller.subject, "alice");
    assert_eq!(jwks.fetches(), 3);
}

#[tokio::test]
async fn a_fetch_of_the_keys_that_hangs_holds_up_no_token_whose_key_is_known() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let key = SigningKey::new("k1");
    // An issuer that answers its first JWKS request, and leaves every later one hanging.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks", listener.local_addr().unwrap());
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&asked);
    let body = json!({"keys": [key.jwk.clone()]}).to_string();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request).await;
            if counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
            } else {
                held.push(stream);
            }
        }
    });
    let server = std::sync::Arc::new(JwtAuthenticator::new(config(&url, &[])).unwrap().min_refetch(Duration::ZERO));
    assert!(server.authenticate(Some(&token(&key, "k1", |_| {}))).await.is_ok());
    // A token naming a key nobody has: a fetch, which hangs.
    let made_up = std::sync::Arc::clone(&server);
    let stranger = SigningKey::new("k9");
    let waiting = tokio::spawn(async move { made_up.authenticate(Some(&token(&stranger, "k9", |_| {}))).await });
    let fetching = tokio::time::timeout(Duration::from_secs(30), async {
        while asked.load(std::sync::atomic::Ordering::SeqCst) < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    assert!(fetching.await.is_ok(), "the made-up key made it fetch");
    // The known key's tokens are checked meanwhile, well before the fetch's 10 s timeout.
    let known = token(&key, "k1", |_| {});
    for _ in 0..3 {
        let checked = tokio::time::timeout(Duration::from_secs(5), server.authenticate(Some(&known)));
        assert!(checked.await.expect("not held up by the fetch").is_ok());
    }
    waiting.abort();
    // The fetch dropped midway, another may start.
    let _ = waiting.await;
    let again = tokio::time::timeout(Duration::from_secs(5), async {
        while asked.load(std::sync::atomic::Ordering::SeqCst) < 3 {
            let _ = tokio::time::timeout(
                Duration::from_millis(50),
                server.authenticate(Some(&token(&SigningKey::new("k8"), "k8", |_| {}))),
            )
            .await;
        }
    });
    assert!(again.await.is_ok(), "a fetch dropped midway leaves the next one free to start");
}

#[test]
fn a_resource_server_needs_https_urls() {
    let refused = JwtAuthenticator::new(config("http://as.example/jwks", &[])).unwrap_err();
    assert!(refused.to_string().contains("jwks_uri") && refused.to_string().contains("https"), "{refused}");
}
