//! Who is calling: the HTTP face as an OAuth 2.1 resource server (the MCP authorization
//! specification), through an [`Authenticator`] the embedder provides.
//!
//! * Every request to the MCP endpoint must carry `Authorization: Bearer <token>`; the
//!   authenticator says whose it is ([`Caller`]) or why not ([`AuthFailure`]).
//! * Without a token, or with one that is not valid: 401 with `WWW-Authenticate: Bearer
//!   resource_metadata="<url>"` (and `error="invalid_token"` for a bad one), so a client
//!   can discover the authorization server; with a valid token lacking a scope: 403 with
//!   `error="insufficient_scope"` and the scope needed.
//! * The protected resource metadata (RFC 9728) is served, without a token, at
//!   `/.well-known/oauth-protected-resource` and at the same path followed by the
//!   endpoint's (`/.well-known/oauth-protected-resource/mcp`), the two places a client
//!   looks.
//! * The caller rides on the request (an extension) for what comes after.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::Value;
use wasmgate_core::{BoxFuture, Caller};
use wasmgate_protocol::codes::INVALID_REQUEST;

use super::reply::{json, refuse};

/// The well-known path of the protected resource metadata.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Why a request is not let in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthFailure {
    /// No bearer token.
    #[error("a bearer token is required")]
    Missing,
    /// A token that is not valid here: its signature, issuer, audience or time.
    #[error("the token is not valid: {0}")]
    Invalid(String),
    /// A valid token without the scope needed.
    #[error("the token lacks the scope {scope:?}")]
    InsufficientScope {
        /// The scopes needed, space-separated.
        scope: String,
    },
}

/// Checks each request's bearer token.
pub trait Authenticator: Send + Sync + 'static {
    /// Whose `token` is (`None`: the request carried none).
    fn authenticate<'a>(&'a self, token: Option<&'a str>) -> BoxFuture<'a, Result<Caller, AuthFailure>>;

    /// The protected resource metadata (RFC 9728): at least `resource` and
    /// `authorization_servers`.
    fn metadata(&self) -> Value;

    /// Where the metadata is served, as an absolute URL, for `WWW-Authenticate`.
    fn metadata_url(&self) -> String;
}

/// The bearer token of `headers`, if it carries one (`Bearer` in any case) in its one
/// `Authorization` header: a request with two carries none (the guard refuses it first;
/// no path may take the first and let a forged second pass, or the reverse).
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = super::headers::single(headers, header::AUTHORIZATION.as_str()).ok()??.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The refusal of `failure`, with the `WWW-Authenticate` header the specification gives.
pub(crate) fn refusal(failure: &AuthFailure, metadata_url: &str) -> Response {
    let quoted = |text: &str| text.replace(['"', '\\'], "");
    let (status, challenge) = match failure {
        AuthFailure::Missing => {
            (StatusCode::UNAUTHORIZED, format!("Bearer resource_metadata=\"{}\"", quoted(metadata_url)))
        }
        AuthFailure::Invalid(why) => (
            StatusCode::UNAUTHORIZED,
            format!(
                "Bearer resource_metadata=\"{}\", error=\"invalid_token\", error_description=\"{}\"",
                quoted(metadata_url),
                quoted(why)
            ),
        ),
        AuthFailure::InsufficientScope { scope } => (
            StatusCode::FORBIDDEN,
            format!(
                "Bearer resource_metadata=\"{}\", error=\"insufficient_scope\", scope=\"{}\"",
                quoted(metadata_url),
                quoted(scope)
            ),
        ),
    };
    let mut response = refuse(status, INVALID_REQUEST, &format!("Unauthorized: {failure}"));
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// The metadata document, as served.
pub(crate) fn metadata(authenticator: &dyn Authenticator) -> Response {
    json(StatusCode::OK, &authenticator.metadata())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_bearer_token_is_read_in_any_case_and_never_empty() {
        let mut headers = HeaderMap::new();
        for (value, token) in [("Bearer abc", Some("abc")), ("bearer  abc ", Some("abc")), ("Bearer ", None)] {
            headers.insert(header::AUTHORIZATION, HeaderValue::from_static(value));
            assert_eq!(bearer(&headers), token, "{value}");
        }
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert_eq!(bearer(&headers), None);
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer good"));
        headers.append(header::AUTHORIZATION, HeaderValue::from_static("Bearer forged"));
        assert_eq!(bearer(&headers), None, "two Authorization headers carry no token");
    }

    #[test]
    fn each_failure_has_its_status_and_challenge() {
        let url = "https://gw.example/.well-known/oauth-protected-resource/mcp";
        let challenge = |failure: AuthFailure| {
            let response = refusal(&failure, url);
            (response.status(), response.headers()[header::WWW_AUTHENTICATE].to_str().unwrap().to_owned())
        };
        assert_eq!(
            challenge(AuthFailure::Missing),
            (StatusCode::UNAUTHORIZED, format!("Bearer resource_metadata=\"{url}\""))
        );
        let (status, text) = challenge(AuthFailure::Invalid("expired \"token\"".into()));
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert!(text.ends_with("error=\"invalid_token\", error_description=\"expired token\""), "{text}");
        let (status, text) = challenge(AuthFailure::InsufficientScope { scope: "mcp:tools".into() });
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert!(text.ends_with("error=\"insufficient_scope\", scope=\"mcp:tools\""), "{text}");
    }
}
