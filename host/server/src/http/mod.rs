//! The Streamable HTTP transport: one endpoint, both eras, hardened for a gateway.
//!
//! The caller binds the listener (the CLI binds 127.0.0.1 by default); [`serve_http`]
//! accepts connections until `shutdown`, then shuts down gracefully (see
//! the private `shutdown` module). Connections are HTTP/1.1, served by hyper with a
//! bounded header buffer and a header read timeout, routed by axum.
//!
//! * `guard`: header size, `Origin`, bearer token, per-client concurrency
//!   ([`HttpConfig`]); `limit`: the per-client counter.
//! * `post`: POST, the only method of 2026-07-28, and the handshake era's requests;
//!   `headers`: the 2026-07-28 header checks.
//! * `sessions`: handshake-era sessions; `stream`: GET (the session's change stream) and
//!   DELETE (the end of a session).
//! * `reply`: JSON, refusal and SSE responses.

mod auth;
mod config;
mod guard;
mod headers;
mod limit;
mod post;
mod reply;
mod sessions;
mod stream;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::routing::post as post_route;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tower::ServiceExt;

pub use auth::{AuthFailure, Authenticator, METADATA_PATH, bearer};
pub use config::HttpConfig;

use crate::backend::Backend;
use crate::config::ServerConfig;
use crate::engine::Engine;
use crate::error::ServeError;
use crate::shutdown::Lifecycle;
use limit::ClientLimits;
use sessions::Sessions;

/// hyper refuses a read buffer smaller than this.
const MIN_HEADER_BUFFER: usize = 8192;
/// How long a client may take to send a request's headers.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// What every handler shares.
pub(crate) struct Shared {
    pub(crate) engine: Engine,
    pub(crate) http: HttpConfig,
    pub(crate) sessions: Sessions,
    pub(crate) clients: Arc<ClientLimits>,
    /// POSTs read over their client's limit, counted apart (see `guard`).
    pub(crate) over_limit: Arc<ClientLimits>,
    pub(crate) life: Lifecycle,
    /// Why `/readyz` last answered 503 (empty: it answered 200), so that a change is
    /// logged as a warning once rather than at every probe.
    pub(crate) unready: std::sync::Mutex<String>,
}

/// Serves `backend` on `listener` until `shutdown`, then shuts down gracefully: no new
/// connections, idle ones closed, streams ended, calls in flight given
/// [`ServerConfig::shutdown_grace`] before they are cancelled.
///
/// # Errors
///
/// [`ServeError::Listener`] when accepting fails for a reason that is not about one
/// connection or a passing shortage (those are logged, and accepting goes on); what is
/// in flight is drained first.
pub async fn serve_http<S>(
    backend: Arc<dyn Backend>,
    listener: TcpListener,
    config: ServerConfig,
    http: HttpConfig,
    shutdown: S,
) -> Result<(), ServeError>
where
    S: Future<Output = ()> + Send,
{
    let grace = config.shutdown_grace;
    let path = http.path.clone();
    let buffer = http.max_header_bytes.max(MIN_HEADER_BUFFER);
    let replica = config.cluster.as_ref().map(|c| c.replica.clone());
    let sessions = Sessions::new(http.max_sessions, http.max_sessions_per_client, http.session_idle_timeout);
    let shared = Arc::new(Shared {
        engine: Engine::new(backend, config),
        sessions: sessions.of_replica(replica),
        http,
        clients: Arc::new(ClientLimits::default()),
        over_limit: Arc::new(ClientLimits::default()),
        life: Lifecycle::default(),
        unready: std::sync::Mutex::default(),
    });
    let mut router = Router::new()
        .route(&path, post_route(post::post).get(stream::get).delete(stream::delete))
        .layer(axum::middleware::from_fn_with_state(Arc::clone(&shared), guard::guard));
    if shared.http.authenticator.is_some() {
        // Added after the guard, so served without a token: it is how a client learns
        // where to get one.
        let metadata = axum::routing::get(protected_resource);
        router = router
            .route(auth::METADATA_PATH, metadata.clone())
            .route(&format!("{}{path}", auth::METADATA_PATH), metadata);
    }
    if shared.http.metrics.is_some() {
        // Outside the guard: a scraper may hold a token of its own (`metrics_token`).
        router = router.route("/metrics", axum::routing::get(metrics));
    }
    // Probes for an orchestrator or a load balancer, served without a token (they say
    // nothing but whether the server lives and is ready).
    let mut router = router
        .route("/healthz", axum::routing::get(healthz))
        .route("/readyz", axum::routing::get(readyz))
        .with_state(Arc::clone(&shared));
    if let Some(routes) = shared.http.routes.clone() {
        router = router.merge(routes);
    }
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.max_buf_size(buffer).timer(TokioTimer::new()).header_read_timeout(HEADER_READ_TIMEOUT);
    tokio::pin!(shutdown);
    let ended = loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break Ok(()),
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                let connection = connection(stream, peer, router.clone(), builder.clone(), shared.life.clone());
                shared.life.tasks.spawn(connection);
            }
            Err(error) if transient(&error) => {
                // Pause briefly, so that a full file table does not become a hot loop.
                tracing::warn!(%error, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(error) => break Err(ServeError::Listener(error)),
        }
    };
    drop(listener);
    tracing::info!("HTTP: draining");
    shared.life.drain(grace).await;
    ended
}

/// Accept errors that concern one connection or a passing shortage, not the listener.
fn transient(error: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionReset, Interrupted, WouldBlock};
    // EMFILE and ENFILE: out of file descriptors, for the process or the system.
    matches!(error.kind(), ConnectionAborted | ConnectionReset | Interrupted | WouldBlock)
        || matches!(error.raw_os_error(), Some(23 | 24))
}

/// `/healthz`: 200 while the server runs.
async fn healthz() -> axum::response::Response {
    reply::status(axum::http::StatusCode::OK)
}

/// `/readyz`: 200 when the backend is ready and the server is not stopping, else 503;
/// the reasons go to the log, not to whoever asks: as a warning when they change (ready
/// again included), at `debug` while they stay the same.
async fn readyz(axum::extract::State(shared): axum::extract::State<Arc<Shared>>) -> axum::response::Response {
    let mut reasons = shared.engine.backend.unready();
    if shared.life.stopping.is_cancelled() {
        reasons.push("the server is shutting down".into());
    }
    let reasons = reasons.join("; ");
    let changed = {
        let mut last = shared.unready.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let changed = *last != reasons;
        last.clone_from(&reasons);
        changed
    };
    match (reasons.is_empty(), changed) {
        (true, true) => tracing::warn!("ready again"),
        (true, false) => {}
        (false, true) => tracing::warn!(%reasons, "not ready"),
        (false, false) => tracing::debug!(%reasons, "not ready"),
    }
    if reasons.is_empty() {
        reply::status(axum::http::StatusCode::OK)
    } else {
        reply::status(axum::http::StatusCode::SERVICE_UNAVAILABLE)
    }
}

/// `/metrics`, in Prometheus's text format, to a request with `/mcp`'s credentials or
/// the scraper's own token; open only when `/mcp` is (a loopback server without a
/// token). 401 otherwise.
async fn metrics(
    axum::extract::State(shared): axum::extract::State<Arc<Shared>>,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    use axum::http::{HeaderValue, StatusCode, header};
    let http = &shared.http;
    let scraper = http.metrics_token.as_deref().is_some_and(|token| guard::bearer_matches(&headers, token));
    // `/mcp`'s credentials; with none configured, the scraper's token alone if it has one.
    let open = http.bearer_token.is_none() && http.authenticator.is_none();
    if open && http.metrics_token.is_none() && !loopback_host(&headers) {
        // Open on loopback only, and to a request that names it so: a page whose name
        // was rebound to 127.0.0.1 sends its own name.
        return reply::status(StatusCode::FORBIDDEN);
    }
    let client = if open { http.metrics_token.is_none() } else { guard::credentials(http, &headers).await.is_ok() };
    let Some(render) = http.metrics.as_ref().filter(|_| scraper || client) else {
        let mut response = reply::status(StatusCode::UNAUTHORIZED);
        response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return response;
    };
    let mut response = axum::response::Response::new(axum::body::Body::from(render()));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    response
}

/// Whether the request's `Host` names a loopback host (`localhost`, `127.0.0.1`,
/// `[::1]`, any port).
fn loopback_host(headers: &axum::http::HeaderMap) -> bool {
    let Some(host) = headers.get(axum::http::header::HOST).and_then(|h| h.to_str().ok()) else { return false };
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map_or(v6, |(v6, _)| v6),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The protected resource metadata, for a client that was told where to look.
async fn protected_resource(
    axum::extract::State(shared): axum::extract::State<Arc<Shared>>,
) -> axum::response::Response {
    match &shared.http.authenticator {
        Some(authenticator) => auth::metadata(authenticator.as_ref()),
        None => reply::status(axum::http::StatusCode::NOT_FOUND),
    }
}

/// Serves one connection until it closes, or until shutdown and its last response.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    builder: hyper::server::conn::http1::Builder,
    life: Lifecycle,
) {
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        router.clone().oneshot(request)
    });
    // Answers are small and written whole: send them at once rather than let Nagle's
    // algorithm hold one back for the client's acknowledgement of the last.
    if let Err(error) = stream.set_nodelay(true) {
        tracing::debug!(%error, "cannot set TCP_NODELAY");
    }
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    let served = tokio::select! {
        served = connection.as_mut() => served,
        () = life.stopping.cancelled() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(error) = served {
        tracing::debug!(%peer, %error, "connection ended with an error");
    }
}
