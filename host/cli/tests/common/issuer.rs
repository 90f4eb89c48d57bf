//! An OAuth 2.1 authorization server, as far as a resource server sees one: an Ed25519
//! key pair made here, its JWKS served on loopback, and access tokens it signs.
#![allow(dead_code)]

use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::signature::{Ed25519KeyPair, KeyPair as _};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The issuer's name in its tokens.
pub const ISSUER: &str = "https://as.example";
/// The gateway's resource URL: its tokens' audience.
pub const RESOURCE: &str = "https://gw.example/mcp";

pub struct Issuer {
    signing: EncodingKey,
    /// Where its JWKS is served.
    pub jwks_uri: String,
}

impl Issuer {
    /// A new key pair, and its JWKS served on loopback until the runtime ends.
    pub async fn start() -> Self {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&ring::rand::SystemRandom::new()).unwrap();
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        let x = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(pair.public_key().as_ref());
        let jwk = json!({"kty": "OKP", "crv": "Ed25519", "x": x, "kid": "k1", "alg": "EdDSA", "use": "sig"});
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let jwks_uri = format!("http://{}/jwks.json", listener.local_addr().unwrap());
        let body = json!({"keys": [jwk]}).to_string();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).await.unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            }
        });
        Issuer { signing: EncodingKey::from_ed_der(pkcs8.as_ref()), jwks_uri }
    }

    /// An access token for `subject` (its `email` is `subject@example.com`) in `groups`,
    /// valid for ten minutes.
    pub fn token(&self, subject: &str, groups: &[&str]) -> String {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        let claims: Value = json!({"iss": ISSUER, "aud": RESOURCE, "sub": subject, "exp": now + 600,
                                   "email": format!("{subject}@example.com"), "groups": groups});
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some("k1".into());
        jsonwebtoken::encode(&header, &claims, &self.signing).unwrap()
    }

    /// The `[serve.oauth]` table that makes a gateway take its tokens.
    pub fn serve_oauth(&self) -> String {
        format!("\n[serve.oauth]\nissuer = {ISSUER:?}\nresource = {RESOURCE:?}\njwks_uri = {:?}\n", self.jwks_uri)
    }
}
