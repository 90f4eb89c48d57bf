//! The HTTP side of OAuth: one reqwest client that follows no redirect and takes no
//! proxy from the environment, bounded reads, and the rule that nothing secret goes to a
//! non-loopback host in clear text.

use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde::de::DeserializeOwned;
use url::Url;
use wasmgate_core::report;

use crate::error::AuthError;

/// The largest metadata document or registration answer read.
pub(crate) const MAX_DOCUMENT: usize = 256 * 1024;

/// What a metadata URL gave.
#[derive(Debug)]
pub(crate) enum Fetched<T> {
    /// A document that parsed.
    Found(T),
    /// Nothing usable there (status, or a body that is not the document); why.
    Missing(String),
}

/// The OAuth HTTP client of one provider.
#[derive(Debug, Clone)]
pub struct AuthHttp {
    /// The provider's name, for messages.
    pub(crate) name: String,
    pub(crate) client: reqwest::Client,
}

impl AuthHttp {
    /// A client for the provider `name`.
    ///
    /// # Errors
    ///
    /// [`AuthError::Config`] when TLS cannot be set up.
    pub fn new(name: &str) -> Result<Self, AuthError> {
        Ok(Self { name: name.to_owned(), client: client(name)? })
    }

    /// Refuses a URL that would carry credentials in clear text.
    pub(crate) fn check_secure(&self, url: &Url) -> Result<(), AuthError> {
        check_secure(&self.name, url)
    }

    /// GETs `url` as JSON. A non-2xx status or a body that is not `T` is `Missing`.
    pub(crate) async fn get_json<T: DeserializeOwned>(&self, url: &Url) -> Result<Fetched<T>, AuthError> {
        if self.check_secure(url).is_err() {
            return Ok(Fetched::Missing("not https".into()));
        }
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
        self.check_secure(url)?;
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

/// The HTTP client of OAuth's exchanges and of [`FollowRedirect`](super::FollowRedirect):
/// no redirect followed, no proxy from the environment, bounded in time.
pub(crate) fn client(name: &str) -> Result<reqwest::Client, AuthError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(30))
        .user_agent(concat!("wasmgate/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| AuthError::Config(format!("{name}: HTTP client: {}", report(&e))))
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
