//! The user agent of the authorization code flow: whatever takes the person to the
//! authorization server and brings back the redirect.
//!
//! [`LoopbackBrowser`] is `wasmgate login`'s: it prints the URL for the person to open,
//! and listens on a loopback port for the redirect (RFC 8252 §7.3). [`FollowRedirect`]
//! has no person: it fetches the authorization URL and takes the redirect the server
//! answers with, which only a server that authorizes without a login page gives (a test
//! server, or one that has already seen the client).

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use url::Url;
use wasmgate_core::BoxFuture;

use crate::error::AuthError;

/// Takes a person to an authorization URL and returns the redirect it ended in.
pub trait UserAgent: Send + Sync + std::fmt::Debug {
    /// The redirect URI to register and to send (where [`authorize`](Self::authorize)
    /// receives the answer).
    fn redirect_uri(&self) -> Url;

    /// Sends the person to `url`; returns the URL the authorization server redirected to
    /// (with `code` and `state`, or `error`).
    fn authorize<'a>(&'a self, url: &'a Url) -> BoxFuture<'a, Result<Url, AuthError>>;
}

/// Longest request line (with headers) the loopback listener reads.
const MAX_REQUEST: usize = 16 * 1024;

/// `wasmgate login`'s user agent: prints the URL, waits for the browser's redirect on a
/// loopback port.
#[derive(Debug)]
pub struct LoopbackBrowser {
    listener: std::sync::Mutex<Option<TcpListener>>,
    port: u16,
    redirect: Url,
    timeout: Duration,
}

impl LoopbackBrowser {
    /// Listens on `127.0.0.1:port` (0: any free port) and waits up to `timeout` for the
    /// redirect.
    ///
    /// # Errors
    ///
    /// [`AuthError::Config`] when the port cannot be bound.
    pub async fn bind(port: u16, timeout: Duration) -> Result<Self, AuthError> {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| AuthError::Config(format!("cannot listen on 127.0.0.1:{port} for the login redirect: {e}")))?;
        let port = listener.local_addr().map_err(|e| AuthError::Config(e.to_string()))?.port();
        let redirect = Url::parse(&format!("http://127.0.0.1:{port}/callback"))
            .map_err(|e| AuthError::Config(format!("login redirect: {e}")))?;
        Ok(Self { listener: std::sync::Mutex::new(Some(listener)), port, redirect, timeout })
    }
}

impl UserAgent for LoopbackBrowser {
    fn redirect_uri(&self) -> Url {
        self.redirect.clone()
    }

    fn authorize<'a>(&'a self, url: &'a Url) -> BoxFuture<'a, Result<Url, AuthError>> {
        Box::pin(async move {
            let listener = self
                .listener
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take()
                .ok_or_else(|| AuthError::Authorization("the login listener was already used".into()))?;
            eprintln!("Open this URL in a browser to log in:\n\n  {url}\n");
            eprintln!("Waiting for the redirect to {} ...", self.redirect_uri());
            tokio::time::timeout(self.timeout, accept_redirect(&listener, self.port))
                .await
                .map_err(|_| AuthError::Authorization(format!("no login within {:?}", self.timeout)))?
        })
    }
}

/// Serves the loopback listener until a request for `/callback` arrives; answers each
/// request with a short page, and returns the callback's full URL.
async fn accept_redirect(listener: &TcpListener, port: u16) -> Result<Url, AuthError> {
    loop {
        let (mut socket, _) =
            listener.accept().await.map_err(|e| AuthError::Authorization(format!("login listener: {e}")))?;
        let mut buffer = vec![0u8; MAX_REQUEST];
        let mut filled = 0;
        // The request line is all that is needed; read until it has ended.
        while filled < buffer.len() && !buffer[..filled].contains(&b'\n') {
            match tokio::time::timeout(Duration::from_secs(10), socket.read(&mut buffer[filled..])).await {
                Ok(Ok(0)) | Err(_) | Ok(Err(_)) => break,
                Ok(Ok(n)) => filled += n,
            }
        }
        let line = String::from_utf8_lossy(&buffer[..filled]);
        let target = line.lines().next().and_then(|l| l.strip_prefix("GET ")).and_then(|l| l.split(' ').next());
        let url = target.and_then(|t| Url::parse(&format!("http://127.0.0.1:{port}{t}")).ok());
        let Some(url) = url.filter(|u| u.path() == "/callback") else {
            let _ = socket.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await;
            continue;
        };
        let page = "wasmgate: the login reached the gateway. You can close this window.";
        let answer = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
            page.len()
        );
        let _ = socket.write_all(answer.as_bytes()).await;
        return Ok(url);
    }
}

/// A user agent without a person: it fetches the authorization URL and returns the
/// redirect's `Location`. For servers that authorize without a login page.
#[derive(Debug, Clone)]
pub struct FollowRedirect {
    redirect: Url,
    client: reqwest::Client,
}

impl FollowRedirect {
    /// An agent that registers `redirect` (nothing listens there: the redirect is read
    /// from the authorization server's answer).
    ///
    /// # Errors
    ///
    /// [`AuthError::Config`] when the HTTP client cannot be built.
    pub fn new(redirect: Url) -> Result<Self, AuthError> {
        Ok(Self { redirect, client: super::http::client("login")? })
    }
}

impl UserAgent for FollowRedirect {
    fn redirect_uri(&self) -> Url {
        self.redirect.clone()
    }

    fn authorize<'a>(&'a self, url: &'a Url) -> BoxFuture<'a, Result<Url, AuthError>> {
        Box::pin(async move {
            let response = self
                .client
                .get(url.clone())
                .send()
                .await
                .map_err(|e| AuthError::Authorization(format!("authorization request: {e}")))?;
            let status = response.status();
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .filter(|_| status.is_redirection())
                .ok_or_else(|| {
                    AuthError::Authorization(format!(
                        "the authorization server answered HTTP {} without a redirect: it needs a person; run `wasmgate login`",
                        status.as_u16()
                    ))
                })?;
            url.join(location)
                .map_err(|e| AuthError::Authorization(format!("the redirect {location:?} is not a URL: {e}")))
        })
    }
}
