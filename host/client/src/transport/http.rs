//! The Streamable HTTP transport (client side), with reqwest and rustls.
//!
//! Every message is its own POST. A request's answer is a JSON body or an SSE stream
//! scoped to that request (notifications first, the response last); each request's
//! exchange runs in its own task, registered by request id, so
//! [`release`](Transport::release) can drop exactly that stream: in the 2026-07-28 era
//! closing the stream *is* the cancellation. Notifications and responses (answers to
//! server requests in the handshake era) are posted inline and must get a 2xx (202).
//!
//! Bounds: connect and read (idle) timeouts; a JSON body or a single SSE event may not
//! exceed the message cap, an SSE stream not the response cap; an error body is read
//! only up to 64 KiB. Redirects are not followed (a bearer token must not travel to
//! wherever a server points) and no proxy is taken from the environment.
//!
//! Handshake-era sessions: the `Mcp-Session-Id` of the `initialize` response is sent
//! on every later request. A 404 to a request that carried it means the server forgot
//! the session: the session is dropped and the exchange fails with
//! [`TransportError::SessionExpired`], on which the client initializes again. On close,
//! the session is ended with `DELETE`.
//!
//! SSE bodies, and the handshake era's standalone GET stream on which a server sends
//! what answers no request (`notifications/tools/list_changed` among others), are read
//! by the `stream` submodule.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use reqwest::{RequestBuilder, Response, StatusCode};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
// With its sources: reqwest's own message is only the outermost layer.
use wasmgate_core::report;
use wasmgate_egress::BodyError;
use wasmgate_oauth::{Authorizer, Challenge, Retry, SecretSource};
use wasmgate_protocol::{Id, Message, MessageLimits, ProtocolVersion, decode};

use super::headers::{SESSION_ID, mcp_headers};
use super::stderr::escape;
use super::{BoxFuture, INBOUND_CAPACITY, Inbound, StreamEnd, Transport};

use crate::error::{CloseReason, TransportError};

mod stream;

use stream::is_event_stream;

/// At most this much of an error body is read, and 512 bytes of it kept for logs.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// How many times one request is sent again after a `401`/`403` got a new token: a
/// server that keeps refusing (asking for more scope each time, say) is reported.
pub(crate) const MAX_AUTH_ATTEMPTS: u32 = 3;

/// Headers the transport writes itself, which an extra header may not set.
const RESERVED_HEADERS: &[&str] = &[
    "host",
    "content-type",
    "content-length",
    "transfer-encoding",
    "connection",
    "accept",
    "last-event-id",
    "upgrade",
    "te",
];

/// Where the server is and how to bound the exchange.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The server's name, for logs and errors.
    pub name: String,
    /// The MCP endpoint, e.g. `https://example.com/mcp`.
    pub url: String,
    /// Sent as `Authorization: Bearer ...` when set.
    pub bearer: Option<SecretSource>,
    /// OAuth 2.1: tokens obtained, refreshed and stepped up by this authorizer. Not
    /// together with `bearer`.
    pub oauth: Option<Authorizer>,
    /// Extra headers of every request (an API key, say), by name. The transport's own
    /// headers and the protocol's (`Mcp-*`) cannot be set this way, nor `Authorization`
    /// beside a bearer token.
    pub headers: Vec<(String, SecretSource)>,
    /// Time to establish a connection (default 10 s).
    pub connect_timeout: Duration,
    /// Longest silence while reading a response (default 300 s; per-call timeouts are the
    /// client's, this only catches dead connections).
    pub read_timeout: Duration,
    /// Largest JSON body or single SSE event (default: the protocol's 4 MiB message limit).
    pub max_message_bytes: usize,
    /// Largest response stream in total (default 16 MiB).
    pub max_response_bytes: usize,
}

impl HttpConfig {
    /// A server at `url` with the default bounds and no token.
    #[must_use]
    pub fn new(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            url: url.into(),
            bearer: None,
            oauth: None,
            headers: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(300),
            max_message_bytes: MessageLimits::DEFAULT.max_message_bytes,
            max_response_bytes: 16 * 1024 * 1024,
        }
    }
}

/// A Streamable HTTP connection to one MCP endpoint.
#[derive(Debug)]
pub struct HttpTransport {
    shared: Arc<Shared>,
    inbound: Option<mpsc::Receiver<Inbound>>,
}

#[derive(Debug)]
struct Shared {
    name: String,
    url: reqwest::Url,
    client: reqwest::Client,
    token: Option<String>,
    oauth: Option<Authorizer>,
    max_message: usize,
    max_response: usize,
    tx: mpsc::Sender<Inbound>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    session: Option<String>,
    version: Option<ProtocolVersion>,
    exchanges: HashMap<Id, AbortHandle>,
    /// The handshake-era GET stream's reader, if one is open.
    server_stream: Option<AbortHandle>,
    closed: bool,
}

impl HttpTransport {
    /// Prepares the connection (nothing is sent yet).
    ///
    /// # Errors
    ///
    /// [`TransportError::Config`] for a URL that is not http(s), a token or header
    /// variable that is not set, a header that may not be set or is malformed, credentials
    /// (a token or an extra header) bound for a host that is not loopback over plain
    /// `http`, or a TLS setup failure.
    pub fn new(config: &HttpConfig) -> Result<Self, TransportError> {
        let url = reqwest::Url::parse(&config.url)
            .map_err(|e| TransportError::Config(format!("{}: invalid URL {:?}: {e}", config.name, config.url)))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(TransportError::Config(format!("{}: URL must be http or https", config.name)));
        }
        let token = match &config.bearer {
            None => None,
            Some(source) => Some(source.read().map_err(|unset| {
                TransportError::Config(format!("{}: bearer token variable {} is not set", config.name, unset.0))
            })?),
        };
        if config.bearer.is_some() && config.oauth.is_some() {
            return Err(TransportError::Config(format!(
                "{}: a bearer token and OAuth are both set: keep one",
                config.name
            )));
        }
        let headers = extra_headers(config)?;
        let credentials = token.is_some() || config.oauth.is_some() || !headers.is_empty();
        if credentials && !wasmgate_egress::is_secure(&url) {
            return Err(TransportError::Config(format!(
                "{}: credentials would cross the network in clear text to {}: use an https URL",
                config.name,
                url.host_str().unwrap_or_default()
            )));
        }
        let client = reqwest::Client::builder()
            .default_headers(headers)
            .connect_timeout(config.connect_timeout)
            .read_timeout(config.read_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .user_agent(concat!("wasmgate/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| TransportError::Config(format!("{}: HTTP client: {}", config.name, report(&e))))?;
        let (tx, inbound) = mpsc::channel(INBOUND_CAPACITY);
        let shared = Shared {
            name: config.name.clone(),
            url,
            client,
            token,
            oauth: config.oauth.clone(),
            max_message: config.max_message_bytes,
            max_response: config.max_response_bytes,
            tx,
            state: Mutex::new(State::default()),
        };
        Ok(Self { shared: Arc::new(shared), inbound: Some(inbound) })
    }
}

/// The extra headers of `config`, checked and resolved, each marked sensitive.
fn extra_headers(config: &HttpConfig) -> Result<reqwest::header::HeaderMap, TransportError> {
    use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
    let refuse = |detail: String| TransportError::Config(format!("{}: {detail}", config.name));
    let mut map = HeaderMap::new();
    for (name, source) in &config.headers {
        let header =
            HeaderName::from_bytes(name.as_bytes()).map_err(|_| refuse(format!("{name:?} is not a header name")))?;
        let lower = header.as_str();
        if RESERVED_HEADERS.contains(&lower) || lower.starts_with("mcp-") {
            return Err(refuse(format!("header {name} is the transport's own and cannot be set")));
        }
        if header == AUTHORIZATION && (config.bearer.is_some() || config.oauth.is_some()) {
            return Err(refuse("Authorization is set twice: by the bearer token or OAuth, and by a header".into()));
        }
        let value =
            source.read().map_err(|unset| refuse(format!("the variable {} of header {name} is not set", unset.0)))?;
        let mut value =
            HeaderValue::from_str(&value).map_err(|_| refuse(format!("the value of header {name} is not valid")))?;
        value.set_sensitive(true);
        map.insert(header, value);
    }
    Ok(map)
}

impl Shared {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The POST for `body`, and whether it carries a session id.
    fn post(&self, body: &Value, extra: Vec<(String, String)>) -> (RequestBuilder, bool) {
        let (session, version) = {
            let state = self.state();
            (state.session.clone(), state.version)
        };
        let mut request = self
            .client
            .post(self.url.clone())
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string());
        for (name, value) in mcp_headers(body, version) {
            request = request.header(name, value);
        }
        for (name, value) in extra {
            request = request.header(name, value);
        }
        let has_session = session.is_some();
        if let Some(session) = session {
            request = request.header(SESSION_ID, session);
        }
        (request, has_session)
    }

    async fn exchange(self: Arc<Self>, id: Id, method: String, request: RequestBuilder, had_session: bool) {
        let error = match self.run_exchange(&id, &method, request, had_session).await {
            Ok(()) => TransportError::NoResponse,
            Err(error) => error,
        };
        self.state().exchanges.remove(&id);
        let _ = self.tx.send(Inbound::Exchange { id, error }).await;
    }

    async fn run_exchange(
        &self,
        id: &Id,
        method: &str,
        request: RequestBuilder,
        had_session: bool,
    ) -> Result<(), TransportError> {
        let mut response = self.send_authorized(request).await?;
        let status = response.status();
        if !status.is_success() {
            let error = self.refusal(status, response, had_session).await;
            if matches!(error, TransportError::SessionExpired) {
                // The client initializes again after a request's 404; the new
                // `initialize` must not name the dead session.
                self.state().session = None;
            }
            return Err(error);
        }
        if method == "initialize"
            && let Some(session) = response.headers().get(SESSION_ID).and_then(|v| v.to_str().ok())
        {
            self.state().session = Some(session.to_owned());
        }
        if !is_event_stream(&response) {
            let body = read_bounded(&mut response, self.max_message).await?;
            if !body.is_empty() {
                self.deliver(Inbound::Frame(body)).await?;
            }
            return Ok(());
        }
        let pumped = self.pump_sse(response, Some(id)).await?;
        self.resume(id, pumped).await
    }

    /// Sends `request` with the credentials of the moment. With OAuth, a `401` or a
    /// `403 insufficient_scope` goes to the authorizer, and the request is sent again
    /// with the new token, up to [`MAX_AUTH_ATTEMPTS`] times; the last refusal is
    /// returned as it came.
    pub(super) async fn send_authorized(&self, request: RequestBuilder) -> Result<Response, TransportError> {
        let Some(oauth) = &self.oauth else {
            let request = match &self.token {
                Some(token) => request.header(AUTHORIZATION, format!("Bearer {token}")),
                None => request,
            };
            return request.send().await.map_err(|e| TransportError::Io(report(&e)));
        };
        let mut attempts = 0;
        loop {
            let token = oauth.token(&self.url).await.map_err(|e| TransportError::Auth(e.to_string()))?;
            let mut attempt = request
                .try_clone()
                .ok_or_else(|| TransportError::Config(format!("{}: a request body cannot be sent twice", self.name)))?;
            if let Some(token) = &token {
                attempt = attempt.header(AUTHORIZATION, format!("Bearer {token}"));
            }
            let response = attempt.send().await.map_err(|e| TransportError::Io(report(&e)))?;
            let status = response.status();
            if !matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) || attempts >= MAX_AUTH_ATTEMPTS {
                return Ok(response);
            }
            attempts += 1;
            let challenge = Challenge::from_headers(response.headers());
            let retry = oauth
                .refused(&self.url, status.as_u16(), challenge.as_ref(), token.as_deref())
                .await
                .map_err(|e| TransportError::Auth(e.to_string()))?;
            if retry == Retry::GiveUp {
                return Ok(response);
            }
        }
    }

    async fn deliver(&self, event: Inbound) -> Result<(), TransportError> {
        self.tx.send(event).await.map_err(|_| TransportError::Closed(CloseReason::ClosedByClient))
    }

    /// The error for a non-2xx answer. A 404 to a POST that named the session is
    /// `SessionExpired`; only a request's forgets the session (see `run_exchange`): after a
    /// notification's nobody initializes again, and the next request's 404 must still be
    /// recognised as the session's end.
    async fn refusal(&self, status: StatusCode, mut response: Response, had_session: bool) -> TransportError {
        if status == StatusCode::NOT_FOUND && had_session {
            tracing::info!(server = %self.name, "HTTP session expired");
            return TransportError::SessionExpired;
        }
        let body = read_bounded(&mut response, MAX_ERROR_BODY).await.unwrap_or_default();
        let rpc = match decode(&body, MessageLimits::DEFAULT) {
            Ok(Message::ErrorResponse(e)) => Some(Box::new(e.error)),
            _ => None,
        };
        TransportError::Http { status: status.as_u16(), rpc, body: escape(&body[..body.len().min(512)]) }
    }
}

/// `response`'s body, at most `limit` bytes.
async fn read_bounded(response: &mut Response, limit: usize) -> Result<Bytes, TransportError> {
    wasmgate_egress::read_bounded(response, limit).await.map_err(|e| match e {
        BodyError::TooLarge { limit } => TransportError::TooLarge { limit },
        BodyError::Read(e) => TransportError::Io(report(&e)),
    })
}

impl Transport for HttpTransport {
    fn take_inbound(&mut self) -> Option<mpsc::Receiver<Inbound>> {
        self.inbound.take()
    }

    fn send(&self, message: Value) -> BoxFuture<'_, Result<(), TransportError>> {
        self.send_with_headers(message, Vec::new())
    }

    fn send_with_headers(
        &self,
        message: Value,
        headers: Vec<(String, String)>,
    ) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            let shared = &self.shared;
            let (request, had_session) = shared.post(&message, headers);
            let method = message.get("method").and_then(Value::as_str);
            let id = message.get("id").and_then(|id| Id::from_value(id).ok());
            if let (Some(method), Some(id)) = (method, id) {
                let mut state = shared.state();
                if state.closed {
                    return Err(TransportError::Closed(CloseReason::ClosedByClient));
                }
                let task = Arc::clone(shared).exchange(id.clone(), method.to_owned(), request, had_session);
                let handle = tokio::spawn(task).abort_handle();
                state.exchanges.insert(id, handle);
                return Ok(());
            }
            if shared.state().closed {
                return Err(TransportError::Closed(CloseReason::ClosedByClient));
            }
            // A notification or a response: the server acknowledges it with 202.
            let response = shared.send_authorized(request).await?;
            let status = response.status();
            if status.is_success() { Ok(()) } else { Err(shared.refusal(status, response, had_session).await) }
        })
    }

    fn release(&self, id: &Id) {
        if let Some(handle) = self.shared.state().exchanges.remove(id) {
            handle.abort();
        }
    }

    fn cancel_closes_stream(&self) -> bool {
        true
    }

    fn mirrors_param_headers(&self) -> bool {
        true
    }

    fn set_protocol_version(&self, version: ProtocolVersion) {
        self.shared.state().version = Some(version);
    }

    fn server_stream(&self) -> Option<BoxFuture<'static, Result<StreamEnd, TransportError>>> {
        Some(Box::pin(Arc::clone(&self.shared).open_server_stream()))
    }

    fn close(&self) -> BoxFuture<'_, CloseReason> {
        Box::pin(async move {
            let shared = &self.shared;
            let (session, exchanges) = {
                let mut state = shared.state();
                if std::mem::replace(&mut state.closed, true) {
                    return CloseReason::ClosedByClient;
                }
                if let Some(stream) = state.server_stream.take() {
                    stream.abort();
                }
                (state.session.take(), std::mem::take(&mut state.exchanges))
            };
            for handle in exchanges.into_values() {
                handle.abort();
            }
            if let Some(session) = session {
                // Ending the session is a courtesy; a server may answer 405.
                let request = shared.client.delete(shared.url.clone()).header(SESSION_ID, session);
                let ended = tokio::time::timeout(Duration::from_secs(5), shared.send_authorized(request)).await;
                tracing::debug!(server = %shared.name, ok = matches!(ended, Ok(Ok(_))), "HTTP session ended");
            }
            let _ = shared.tx.send(Inbound::Closed(CloseReason::ClosedByClient)).await;
            CloseReason::ClosedByClient
        })
    }
}

impl Drop for HttpTransport {
    fn drop(&mut self) {
        let mut state = self.shared.state();
        for handle in std::mem::take(&mut state.exchanges).into_values().chain(state.server_stream.take()) {
            handle.abort();
        }
    }
}
