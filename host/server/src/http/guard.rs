//! The checks every HTTP request passes before it is read, cheapest first:
//!
//! 1. header size (431): hyper bounds its read buffer; this makes the limit exact;
//!    and `Authorization` at most once (400);
//! 2. `Origin` (403): absent, loopback, or listed; anything else is a page in a browser
//!    reaching a local server through DNS rebinding;
//! 3. bearer token (401, with `WWW-Authenticate: Bearer`), compared in constant time,
//!    and the authenticator's check of it (401 or 403, see [`auth`](super::auth));
//! 4. per-client concurrency (429), by client (see [`limit`](super::limit)); the permit
//!    rides on the response body. A POST over the limit is still read, up to
//!    [`OVER_LIMIT_BODY_BYTES`] and [`OVER_LIMIT_READS`] at a time per client: if it
//!    carries a response or a notification (an answer to our `elicitation/create`, a
//!    `notifications/cancelled`), those are what free the client's permits, so they are
//!    taken; a request is 429, and so is any POST beyond those few reads, so that a client
//!    at its limit cannot hold more connections by sending bodies slowly.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use subtle::ConstantTimeEq;
use wasmgate_core::Caller;
use wasmgate_protocol::codes::INVALID_REQUEST;

use super::Shared;

use super::auth;
use super::config::HttpConfig;
use super::limit::{Client, PermitBody, client_ip, peer_ip};
use super::reply::refuse;
use super::sessions::repeated;

/// The middleware; see the module docs.
pub(crate) async fn guard(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let config = &shared.http;
    let headers = request.headers();
    if header_bytes(headers) > config.max_header_bytes {
        let message = format!("Request headers are over the limit of {} bytes", config.max_header_bytes);
        return refuse(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, INVALID_REQUEST, &message);
    }
    // Read twice, a credential is whatever the reader takes: the first here, the last in
    // an intermediary. A request carries one or none.
    if let Err(error) = super::headers::single(headers, header::AUTHORIZATION.as_str()) {
        return repeated(&error);
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let allowed = origin.to_str().is_ok_and(|origin| origin_allowed(origin, &config.allowed_origins));
        if !allowed {
            tracing::info!(origin = ?origin, "request from a foreign Origin refused");
            return refuse(StatusCode::FORBIDDEN, INVALID_REQUEST, "Forbidden: Origin not allowed");
        }
    }
    let mut request = request;
    match credentials(config, request.headers()).await {
        Ok(Some(caller)) => {
            request.extensions_mut().insert(caller);
        }
        Ok(None) => {}
        Err(refusal) => return refusal,
    }
    let peer = client_ip(peer_ip(request.extensions().get()), request.headers(), &config.trusted_proxies);
    // The handlers count sessions by the same client.
    request.extensions_mut().insert(Client(peer));
    let Some(permit) = shared.clients.acquire(peer, config.per_client_concurrency) else {
        tracing::info!(%peer, limit = config.per_client_concurrency, "per-client concurrency limit reached");
        if request.method() == Method::POST
            && let Some(read) = shared.over_limit.acquire(peer, OVER_LIMIT_READS)
        {
            request.extensions_mut().insert(OverLimit);
            return next.run(request).await.map(|body| PermitBody::wrap(body, read));
        }
        return too_many();
    };
    next.run(request).await.map(|body| PermitBody::wrap(body, permit))
}

/// The check of a request's credentials: the bearer token, when one is configured,
/// then the authenticator's, when there is one (its caller, if it names one). `Err` is
/// the answer to a request without them: 401 with `WWW-Authenticate: Bearer`, or the
/// authenticator's 401 or 403.
pub(crate) async fn credentials(config: &HttpConfig, headers: &HeaderMap) -> Result<Option<Caller>, Response> {
    if let Some(token) = &config.bearer_token
        && !bearer_matches(headers, token)
    {
        let mut response =
            refuse(StatusCode::UNAUTHORIZED, INVALID_REQUEST, "Unauthorized: a bearer token is required");
        response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return Err(response);
    }
    let Some(authenticator) = &config.authenticator else { return Ok(None) };
    match authenticator.authenticate(auth::bearer(headers)).await {
        Ok(caller) => Ok(Some(caller)),
        Err(failure) => {
            tracing::info!(%failure, "request refused by the authenticator");
            Err(auth::refusal(&failure, &authenticator.metadata_url()))
        }
    }
}

/// Marks a POST that came in over its client's limit: only a response or a
/// notification in it is taken.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OverLimit;

/// The most body read of a POST over its client's limit: enough for an elicitation
/// answer or a cancellation, not for making the server buffer much per connection.
pub(crate) const OVER_LIMIT_BODY_BYTES: usize = 64 << 10;

/// POSTs over its limit a client may have read at once.
pub(crate) const OVER_LIMIT_READS: usize = 4;

/// The 429 of a client over its limit.
pub(crate) fn too_many() -> Response {
    refuse(StatusCode::TOO_MANY_REQUESTS, INVALID_REQUEST, "Too many concurrent requests from this client")
}

/// Names, values, and `": "` plus CRLF for each header line.
fn header_bytes(headers: &HeaderMap) -> usize {
    headers.iter().map(|(name, value)| name.as_str().len() + value.len() + 4).sum()
}

/// Whether the request presents `token`. An empty configured token matches nothing:
/// `Authorization: Bearer ` with blanks would otherwise present it.
pub(crate) fn bearer_matches(headers: &HeaderMap, token: &str) -> bool {
    !token.is_empty()
        && auth::bearer(headers).is_some_and(|presented| bool::from(presented.as_bytes().ct_eq(token.as_bytes())))
}

/// Whether a browser origin may talk to us: listed (case-insensitively), or loopback.
pub(crate) fn origin_allowed(origin: &str, allowed: &[String]) -> bool {
    allowed.iter().any(|a| a.trim_end_matches('/').eq_ignore_ascii_case(origin)) || is_loopback_origin(origin)
}

/// `http(s)://localhost`, `127.0.0.1` or `[::1]`, with an optional port and nothing else.
fn is_loopback_origin(origin: &str) -> bool {
    let Some((scheme, authority)) = origin.split_once("://") else { return false };
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return false;
    }
    let (host, port) = if authority.starts_with('[') {
        match authority.find(']') {
            Some(end) => authority.split_at(end + 1),
            None => return false,
        }
    } else {
        authority.split_at(authority.find(':').unwrap_or(authority.len()))
    };
    let port_ok = port.is_empty()
        || port.strip_prefix(':').is_some_and(|p| (1..=5).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()));
    port_ok && ["localhost", "127.0.0.1", "[::1]"].iter().any(|h| host.eq_ignore_ascii_case(h))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_origins_with_any_port_are_allowed() {
        for origin in ["http://localhost", "http://localhost:6274", "https://127.0.0.1:8443", "http://[::1]:3000"] {
            assert!(origin_allowed(origin, &[]), "{origin}");
        }
    }

    #[test]
    fn foreign_and_lookalike_origins_are_refused() {
        for origin in [
            "http://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.nip.io",
            "http://localhost:80/path",
            "http://localhost:abc",
            "file://localhost",
            "null",
            "http://[::1",
        ] {
            assert!(!origin_allowed(origin, &[]), "{origin}");
        }
    }

    #[test]
    fn listed_origins_are_allowed_exactly() {
        let allowed = vec!["https://app.example.com/".to_owned()];
        assert!(origin_allowed("https://APP.example.com", &allowed));
        assert!(!origin_allowed("https://app.example.com.evil", &allowed));
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive_and_the_token_exact() {
        let mut headers = HeaderMap::new();
        assert!(!bearer_matches(&headers, "s3cret"));
        for (value, ok) in
            [("Bearer s3cret", true), ("bearer s3cret", true), ("Bearer s3cre", false), ("Basic s3cret", false)]
        {
            headers.insert(header::AUTHORIZATION, HeaderValue::from_static(value));
            assert_eq!(bearer_matches(&headers, "s3cret"), ok, "{value}");
        }
    }

    #[test]
    fn an_empty_token_matches_nothing() {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer \t"));
        assert!(!bearer_matches(&headers, ""));
        assert!(!bearer_matches(&HeaderMap::new(), ""));
    }
}
