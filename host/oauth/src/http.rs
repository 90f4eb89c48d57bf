//! The HTTP side of OAuth: one reqwest client that follows no redirect and takes no
//! proxy from the environment, bounded reads, and the rule that nothing secret goes to a
//! non-loopback host in clear text.

use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde::de::DeserializeOwned;
use url::Url;
use wasmgate_core::report;
use wasmgate_egress::Reach;

use crate::error::AuthError;

/// The largest metadata document or registration answer read.
pub(crate) const MAX_DOCUMENT: usize = 256 * 1024;

/// The largest answer of a token endpoint read (a token, a refresh token, their
/// lifetimes and scopes; or an error).
pub(crate) const MAX_TOKEN_ANSWER: usize = 64 * 1024;

/// What a metadata URL gave.
#[derive(Debug)]
pub(crate) enum Fetched<T> {
    /// A document that parsed.
    Found(T),
    /// Nothing usable there (status, or a body that is not the document); why.
    Missing(String),
}

/// The OAuth HTTP client of one provider: every request it sends passes the provider's
/// [`Reach`] first, and its names resolve through it.
#[derive(Debug, Clone)]
pub struct AuthHttp {
    /// The provider's name, for messages.
    pub(crate) name: String,
    pub(crate) client: reqwest::Client,
    /// Where its requests may go: the provider's URL, and what a server names at run time
    /// only as the egress rules allow.
    pub(crate) reach: Reach,
}

impl AuthHttp {
    /// A client for the provider `name`, its run-time URLs reaching `reach`.
    ///
    /// # Errors
    ///
    /// [`AuthError::Config`] when TLS cannot be set up.
    pub fn new(name: &str, reach: Reach) -> Result<Self, AuthError> {
        let client = builder().dns_resolver(std::sync::Arc::new(reach.clone())).build();
        let client = client.map_err(|e| AuthError::Config(format!("{name}: HTTP client: {}", report(&e))))?;
        Ok(Self { name: name.to_owned(), client, reach })
    }

    /// Refuses a request the egress rules do not let the gateway send (naming the grant
    /// that would), or one that would carry credentials in clear text.
    pub(crate) fn check(&self, url: &Url) -> Result<(), AuthError> {
        self.reach.check(url).map_err(|e| AuthError::Discovery(format!("{}: {e}", self.name)))
    }

    /// GETs `url` as JSON. A non-2xx status or a body that is not `T` is `Missing`.
    pub(crate) async fn get_json<T: DeserializeOwned>(&self, url: &Url) -> Result<Fetched<T>, AuthError> {
        self.check(url)?;
        let response = match self.client.get(url.clone()).header(ACCEPT, "application/json").send().await {
            Ok(response) => response,
            Err(e) => return Ok(Fetched::Missing(report(&e))),
        };
        let status = response.status();
        if !status.is_success() {
            return Ok(Fetched::Missing(format!("HTTP {}", status.as_u16())));
        }
        let body = match read_capped(response, MAX_DOCUMENT).await {
            Ok(body) => body,
            Err(why) => return Ok(Fetched::Missing(why)),
        };
        Ok(match serde_json::from_slice(&body) {
            Ok(value) => Fetched::Found(value),
            Err(e) => Fetched::Missing(format!("not the expected document: {e}")),
        })
    }

    /// The challenge of `endpoint` to a request without a token: a `ping` POSTed as MCP
    /// would be, whose `401` names the resource metadata. `None` when it answers otherwise.
    pub(crate) async fn challenge(&self, endpoint: &Url) -> Option<super::Challenge> {
        self.reach.configure(endpoint);
        self.check(endpoint).ok()?;
        let response = self
            .client
            .post(endpoint.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .body(r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#)
            .send()
            .await
            .ok()?;
        if response.status() != reqwest::StatusCode::UNAUTHORIZED {
            return None;
        }
        super::Challenge::from_headers(response.headers())
    }

    /// POSTs `body` as JSON to `url` and reads a JSON answer (registration).
    pub(crate) async fn post_json(
        &self,
        url: &Url,
        body: &serde_json::Value,
    ) -> Result<(u16, serde_json::Value), AuthError> {
        self.check(url)?;
        let response = self
            .client
            .post(url.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| AuthError::Token(format!("{}: {url}: {}", self.name, report(&e))))?;
        let status = response.status().as_u16();
        let body = read_capped(response, MAX_DOCUMENT)
            .await
            .map_err(|why| AuthError::Token(format!("{}: {url}: {why}", self.name)))?;
        let value = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
        Ok((status, value))
    }
}

/// Reads a body of at most `limit` bytes; why not, in words.
async fn read_capped(mut response: reqwest::Response, limit: usize) -> Result<bytes::Bytes, String> {
    wasmgate_egress::read_bounded(&mut response, limit).await.map_err(|e| report(&e))
}

/// The token endpoint's exchanges (`oauth2`'s requests) go through this client, which
/// reads at most [`MAX_TOKEN_ANSWER`] bytes of an answer: a server that names its own
/// authorization server cannot make the gateway buffer a token of any size.
impl<'c> oauth2::AsyncHttpClient<'c> for AuthHttp {
    type Error = oauth2::HttpClientError<reqwest::Error>;
    type Future =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<oauth2::HttpResponse, Self::Error>> + Send + 'c>>;

    fn call(&'c self, request: oauth2::HttpRequest) -> Self::Future {
        Box::pin(async move {
            let request = reqwest::Request::try_from(request).map_err(Box::new)?;
            self.reach.check(request.url()).map_err(|e| oauth2::HttpClientError::Other(e.to_string()))?;
            let mut response = self.client.execute(request).await.map_err(Box::new)?;
            let mut answer = oauth2::http::Response::builder().status(response.status()).version(response.version());
            for (name, value) in response.headers() {
                answer = answer.header(name, value);
            }
            let body = wasmgate_egress::read_bounded(&mut response, MAX_TOKEN_ANSWER).await.map_err(|e| match e {
                wasmgate_egress::BodyError::TooLarge { limit } => {
                    oauth2::HttpClientError::Other(format!("the answer is larger than {limit} bytes"))
                }
                wasmgate_egress::BodyError::Read(e) => oauth2::HttpClientError::Reqwest(Box::new(e)),
            })?;
            answer.body(body.to_vec()).map_err(oauth2::HttpClientError::Http)
        })
    }
}

/// The HTTP client of OAuth's exchanges and of [`FollowRedirect`](super::FollowRedirect):
/// no redirect followed, no proxy from the environment, bounded in time.
pub(crate) fn client(name: &str) -> Result<reqwest::Client, AuthError> {
    builder().build().map_err(|e| AuthError::Config(format!("{name}: HTTP client: {}", report(&e))))
}

fn builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(30))
        .user_agent(concat!("wasmgate/", env!("CARGO_PKG_VERSION")))
}

/// Refuses a URL that would carry credentials in clear text: `https`, or `http` to a
/// loopback host only.
pub(crate) fn check_secure(name: &str, url: &Url) -> Result<(), AuthError> {
    if wasmgate_egress::is_secure(url) {
        Ok(())
    } else {
        Err(AuthError::Discovery(format!(
            "{name}: {url} is not https: OAuth endpoints must use TLS (plain http only to a loopback host)"
        )))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;

    /// A token endpoint on loopback whose answer never ends (no length, a mebibyte at a
    /// time), announcing `length` when given; it stops when the reader goes.
    async fn endless(length: Option<u64>) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/token", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request).await;
            let length = length.map_or_else(String::new, |n| format!("Content-Length: {n}\r\n"));
            let head =
                format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{length}Connection: close\r\n\r\n");
            let _ = stream.write_all(head.as_bytes()).await;
            let chunk = vec![b'a'; 1 << 20];
            // At most 256 MiB, as the hostile server sent.
            for _ in 0..256 {
                if stream.write_all(&chunk).await.is_err() {
                    break;
                }
            }
        });
        url
    }

    #[tokio::test]
    async fn a_token_answer_is_read_within_its_bound_whatever_its_size() {
        for length in [None, Some(256 << 20)] {
            let url = endless(length).await;
            // A token endpoint on loopback is reached only when granted.
            let authority = url.trim_start_matches("http://").split('/').next().unwrap();
            let http =
                AuthHttp::new("p", Reach::new(vec![wasmgate_egress::HostGrant::parse(authority).unwrap()])).unwrap();
            let request = oauth2::http::Request::post(url).body(b"grant_type=refresh_token".to_vec()).unwrap();
            let refused = oauth2::AsyncHttpClient::call(&http, request).await.unwrap_err();
            let said = refused.to_string() + &format!("{refused:?}");
            assert!(said.contains("larger than 65536 bytes"), "{length:?}: {said}");
        }
    }

    #[tokio::test]
    async fn a_token_endpoint_the_server_names_on_loopback_is_not_asked_unless_granted() {
        let internal = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        internal.set_nonblocking(true).unwrap();
        let url = format!("http://{}/token", internal.local_addr().unwrap());
        let http = AuthHttp::new("p", Reach::default()).unwrap();
        let request = oauth2::http::Request::post(url).body(b"grant_type=refresh_token".to_vec()).unwrap();
        let refused = oauth2::AsyncHttpClient::call(&http, request).await.unwrap_err();
        assert!(format!("{refused:?}").contains("network_hosts"), "{refused:?}");
        let asked = internal.accept();
        assert!(matches!(&asked, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock), "{asked:?}");
    }
}
