//! [`HttpConfig`]: the HTTP face's hardening knobs. Binding is the caller's (the CLI
//! binds 127.0.0.1 unless told otherwise, and insists on a token for anything else).

use std::fmt;

/// Configuration of [`serve_http`](crate::serve_http).
#[derive(Clone)]
pub struct HttpConfig {
    /// The MCP endpoint's path. Default `/mcp`.
    pub path: String,
    /// When set, every request must carry `Authorization: Bearer <token>` (else 401).
    /// Compared in constant time; never logged (`Debug` redacts it).
    pub bearer_token: Option<String>,
    /// When set, the HTTP face is an OAuth 2.1 resource server: every request's bearer
    /// token is checked by it, and its protected resource metadata is served (see
    /// `auth`). Checked after `bearer_token`, if both are set.
    pub authenticator: Option<std::sync::Arc<dyn super::auth::Authenticator>>,
    /// Origins allowed besides loopback ones (`http://localhost`, `http://127.0.0.1`,
    /// `http://[::1]`, any port, http or https), written as a browser sends them, e.g.
    /// `https://app.example.com`. A request with any other `Origin` is refused with 403:
    /// the defense against DNS rebinding. Requests without `Origin` (not from a browser)
    /// are not affected.
    pub allowed_origins: Vec<String>,
    /// Largest request body (default 4 MiB, the protocol's message limit); beyond: 413.
    pub max_body_bytes: usize,
    /// Largest total of request header names and values (default 16 KiB); beyond: 431.
    pub max_header_bytes: usize,
    /// How long a client may take to send a request's body once its headers are in
    /// (default 30 s, as for the headers); beyond: 408. It also bounds how long a POST
    /// over the per-client limit, read without a permit, can hold its connection.
    pub body_read_timeout: std::time::Duration,
    /// Requests one client may have open at once, long-lived streams included
    /// (default 16); beyond: 429. A client is its peer IP address, except that every
    /// loopback address is one client and an IPv6 address counts as its /64.
    pub per_client_concurrency: usize,
    /// Handshake-era sessions open at once (default 1024); an `initialize` beyond it is
    /// refused with 503 until a client ends its session (DELETE) or one expires.
    pub max_sessions: usize,
    /// Handshake-era sessions one client may have open at once (default 256, a quarter
    /// of `max_sessions`), a client as for `per_client_concurrency`; an `initialize`
    /// beyond it is refused with 429 until one of its sessions ends. Without it one
    /// client could take every session and lock the others out.
    pub max_sessions_per_client: usize,
    /// A session with no request, no call in flight and no open stream for this long
    /// ends (default 30 minutes); its client gets 404 and initializes again.
    pub session_idle_timeout: std::time::Duration,
    /// When set, `GET /metrics` answers with what it returns (Prometheus's text format),
    /// to a request that carries the credentials `/mcp` asks for, or `metrics_token`.
    pub metrics: Option<std::sync::Arc<dyn Fn() -> String + Send + Sync>>,
    /// A bearer token that `GET /metrics` accepts besides the credentials of `/mcp` (a
    /// scraper's, where `/mcp` takes OAuth access tokens only). Never logged.
    pub metrics_token: Option<String>,
    /// Proxies (a load balancer) whose `X-Forwarded-For` is believed: a request from one
    /// of them counts as from the client that header names (the right-most address not
    /// in these networks), for every per-client bound. Default: none, and the header is
    /// ignored, as any client could send it.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// More routes served on the same listener, outside the MCP endpoint's guard (the
    /// embedder's own pages, such as the gateway's web console): they do their own
    /// authentication, and are bounded by the same header limits and shutdown.
    pub routes: Option<axum::Router>,
}

impl HttpConfig {
    /// The defaults: no token, loopback origins only.
    #[must_use]
    pub fn new() -> Self {
        Self {
            path: "/mcp".into(),
            bearer_token: None,
            authenticator: None,
            allowed_origins: Vec::new(),
            max_body_bytes: wasmgate_protocol::MessageLimits::DEFAULT.max_message_bytes,
            max_header_bytes: 16 * 1024,
            body_read_timeout: std::time::Duration::from_secs(30),
            per_client_concurrency: 16,
            max_sessions: 1024,
            max_sessions_per_client: 256,
            session_idle_timeout: std::time::Duration::from_secs(30 * 60),
            metrics: None,
            metrics_token: None,
            trusted_proxies: Vec::new(),
            routes: None,
        }
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpConfig")
            .field("path", &self.path)
            .field("bearer_token", &self.bearer_token.as_ref().map(|_| "<redacted>"))
            .field("authenticator", &self.authenticator.as_ref().map(|_| "<set>"))
            .field("allowed_origins", &self.allowed_origins)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_header_bytes", &self.max_header_bytes)
            .field("body_read_timeout", &self.body_read_timeout)
            .field("per_client_concurrency", &self.per_client_concurrency)
            .field("max_sessions", &self.max_sessions)
            .field("max_sessions_per_client", &self.max_sessions_per_client)
            .field("session_idle_timeout", &self.session_idle_timeout)
            .field("metrics", &self.metrics.as_ref().map(|_| "<set>"))
            .field("metrics_token", &self.metrics_token.as_ref().map(|_| "<redacted>"))
            .field("trusted_proxies", &self.trusted_proxies)
            .field("routes", &self.routes.as_ref().map(|_| "<set>"))
            .finish()
    }
}
