//! Discovery: the protected resource's metadata (RFC 9728) and its authorization
//! server's (RFC 8414, or OpenID Connect discovery), each fetched from the places the
//! MCP authorization spec lists, in its order, and checked before anything is trusted.

use serde::Deserialize;
use url::Url;

use crate::error::AuthError;
use crate::http::{AuthHttp, Fetched};

/// Protected resource metadata (RFC 9728 §2), the fields a client uses.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ResourceMetadata {
    /// The resource's identifier; must name the server the client talks to.
    #[serde(default)]
    pub resource: Option<String>,
    /// Issuers of the authorization servers that issue tokens for it.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// Scopes the resource understands.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
}

/// Authorization server metadata (RFC 8414 §2), the fields a client uses.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ServerMetadata {
    /// The issuer identifier; must be the one the metadata was looked up for.
    pub issuer: String,
    /// Where a person authorizes (absent for a server that only issues to machines).
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    /// Where codes, credentials and refresh tokens are exchanged.
    pub token_endpoint: String,
    /// Dynamic client registration (RFC 7591).
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// Scopes the server knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// PKCE methods; the client goes on only with `S256` here.
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// How clients may authenticate at the token endpoint.
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Whether a URL may serve as a client id (Client ID Metadata Documents).
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
    /// Whether the authorization response carries `iss` (RFC 9207).
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
}

/// The resource's metadata: from the challenge's `resource_metadata` if it named one,
/// else the well-known URL under the endpoint's path, then at the root.
///
/// # Errors
///
/// [`AuthError::Discovery`] when no candidate answers with metadata, or the metadata
/// names another resource or no authorization server.
pub async fn resource_metadata(
    http: &AuthHttp,
    endpoint: &Url,
    hint: Option<&str>,
) -> Result<(ResourceMetadata, Url), AuthError> {
    http.reach.configure(endpoint);
    let mut candidates = Vec::new();
    if let Some(hint) = hint {
        let url = Url::parse(hint).map_err(|e| {
            AuthError::Discovery(format!("{}: resource_metadata {hint:?} is not a URL: {e}", http.name))
        })?;
        // The server names where its metadata is, and the gateway fetches it: on the
        // server's own origin only, or any server could aim the gateway's requests at
        // hosts it reaches and the server does not (its loopback, an internal network).
        if url.origin() != endpoint.origin() {
            return Err(AuthError::Discovery(format!(
                "{}: the server names its metadata at {}, another origin than its own ({}): refused unfetched",
                http.name,
                url.origin().ascii_serialization(),
                endpoint.origin().ascii_serialization()
            )));
        }
        candidates.push(url);
    }
    candidates.extend(well_known(endpoint, "oauth-protected-resource"));
    let mut tried = Vec::new();
    for url in candidates {
        match http.get_json::<ResourceMetadata>(&url).await? {
            Fetched::Found(metadata) => {
                check_resource(http, endpoint, &metadata)?;
                return Ok((metadata, url));
            }
            Fetched::Missing(why) => tried.push(format!("{url}: {why}")),
        }
    }
    Err(AuthError::Discovery(format!("{}: no protected resource metadata (tried {})", http.name, tried.join("; "))))
}

/// The metadata must name its resource, and that resource must be the endpoint's: the
/// same origin, and a path that is the endpoint's or one of its parents (RFC 9728 §2,
/// §3.3, §7.3).
fn check_resource(http: &AuthHttp, endpoint: &Url, metadata: &ResourceMetadata) -> Result<(), AuthError> {
    if metadata.authorization_servers.is_empty() {
        return Err(AuthError::Discovery(format!(
            "{}: the protected resource metadata names no authorization server",
            http.name
        )));
    }
    let Some(resource) = &metadata.resource else {
        return Err(AuthError::Discovery(format!(
            "{}: the protected resource metadata names no resource, so it cannot be told to be {endpoint}'s",
            http.name
        )));
    };
    let named = Url::parse(resource).ok();
    let covers = named.as_ref().is_some_and(|named| {
        named.origin() == endpoint.origin() && {
            let parent = named.path().trim_end_matches('/');
            let path = endpoint.path();
            path == parent || path.starts_with(&format!("{parent}/")) || parent.is_empty()
        }
    });
    if covers {
        Ok(())
    } else {
        Err(AuthError::Discovery(format!(
            "{}: the protected resource metadata is for {resource:?}, not for {endpoint}: refusing a token meant for another resource",
            http.name
        )))
    }
}

/// The authorization server's metadata, tried at the RFC 8414 path-inserted URL, then
/// OpenID Connect discovery inserted and appended (for an issuer with a path), or the
/// two root documents (for one without).
///
/// # Errors
///
/// [`AuthError::Discovery`] when none answers, when the document names another issuer
/// (RFC 8414 §3.3), or when it lacks a token endpoint.
pub async fn server_metadata(http: &AuthHttp, issuer: &str) -> Result<ServerMetadata, AuthError> {
    let url = Url::parse(issuer).map_err(|e| {
        AuthError::Discovery(format!("{}: authorization server {issuer:?} is not a URL: {e}", http.name))
    })?;
    http.check(&url)?;
    let mut candidates = Vec::new();
    let path = url.path().trim_end_matches('/');
    let root = |suffix: &str| {
        let mut at = url.clone();
        at.set_path(suffix);
        at.set_query(None);
        at
    };
    if path.is_empty() {
        candidates.push(root("/.well-known/oauth-authorization-server"));
        candidates.push(root("/.well-known/openid-configuration"));
    } else {
        candidates.push(root(&format!("/.well-known/oauth-authorization-server{path}")));
        candidates.push(root(&format!("/.well-known/openid-configuration{path}")));
        candidates.push(root(&format!("{path}/.well-known/openid-configuration")));
    }
    let mut tried = Vec::new();
    for candidate in candidates {
        match http.get_json::<ServerMetadata>(&candidate).await? {
            Fetched::Found(metadata) => {
                if !same_issuer(&metadata.issuer, issuer) {
                    return Err(AuthError::Discovery(format!(
                        "{}: the metadata at {candidate} names the issuer {:?}, not {issuer:?}: refused (RFC 8414 §3.3)",
                        http.name, metadata.issuer
                    )));
                }
                return Ok(metadata);
            }
            Fetched::Missing(why) => tried.push(format!("{candidate}: {why}")),
        }
    }
    Err(AuthError::Discovery(format!(
        "{}: no authorization server metadata for {issuer} (tried {})",
        http.name,
        tried.join("; ")
    )))
}

/// Issuer identifiers compare as strings, except that a trailing slash on a bare origin
/// is the same URL (`https://as` and `https://as/` parse alike).
pub(crate) fn same_issuer(a: &str, b: &str) -> bool {
    a == b || matches!((Url::parse(a), Url::parse(b)), (Ok(x), Ok(y)) if x == y)
}

/// `{origin}/.well-known/{name}{path}` (when the endpoint has a path), then
/// `{origin}/.well-known/{name}`.
fn well_known(endpoint: &Url, name: &str) -> Vec<Url> {
    let mut out = Vec::new();
    let path = endpoint.path().trim_end_matches('/');
    let mut at = endpoint.clone();
    at.set_query(None);
    at.set_fragment(None);
    if !path.is_empty() {
        at.set_path(&format!("/.well-known/{name}{path}"));
        out.push(at.clone());
    }
    at.set_path(&format!("/.well-known/{name}"));
    out.push(at);
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn well_known_urls_insert_the_path_then_try_the_root() {
        let endpoint = Url::parse("https://r.example/api/mcp?x=1").unwrap();
        let urls: Vec<String> = well_known(&endpoint, "oauth-protected-resource").iter().map(Url::to_string).collect();
        assert_eq!(
            urls,
            [
                "https://r.example/.well-known/oauth-protected-resource/api/mcp",
                "https://r.example/.well-known/oauth-protected-resource"
            ]
        );
        let root = Url::parse("https://r.example/").unwrap();
        assert_eq!(well_known(&root, "x").len(), 1);
    }

    #[test]
    fn a_resource_elsewhere_is_refused() {
        let http = AuthHttp::new("p", wasmgate_egress::Reach::default()).unwrap();
        let endpoint = Url::parse("https://r.example/mcp").unwrap();
        let meta = |resource: &str| ResourceMetadata {
            resource: Some(resource.into()),
            authorization_servers: vec!["https://as".into()],
            scopes_supported: None,
        };
        assert!(check_resource(&http, &endpoint, &meta("https://r.example/mcp")).is_ok());
        assert!(check_resource(&http, &endpoint, &meta("https://r.example")).is_ok());
        assert!(check_resource(&http, &endpoint, &meta("https://r.example/other")).is_err());
        assert!(check_resource(&http, &endpoint, &meta("https://r.example/mc")).is_err());
        assert!(check_resource(&http, &endpoint, &meta("https://evil.example/mcp")).is_err());
        assert!(check_resource(&http, &endpoint, &meta("not a url")).is_err());
        let none = ResourceMetadata { authorization_servers: vec![], ..meta("https://r.example/mcp") };
        assert!(check_resource(&http, &endpoint, &none).is_err());
        let unnamed = ResourceMetadata { resource: None, ..meta("https://r.example/mcp") };
        let refused = check_resource(&http, &endpoint, &unnamed).unwrap_err().to_string();
        assert!(refused.contains("names no resource"), "{refused}");
    }

    #[tokio::test]
    async fn metadata_named_on_another_origin_is_refused_unfetched() {
        let http = AuthHttp::new("p", wasmgate_egress::Reach::default()).unwrap();
        let endpoint = Url::parse("http://127.0.0.1:4000/mcp").unwrap();
        // An internal listener the server names: it must receive nothing.
        let internal = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        internal.set_nonblocking(true).unwrap();
        let admin =
            format!("http://127.0.0.1:{}/internal/admin?action=delete-all", internal.local_addr().unwrap().port());
        for hint in [admin.as_str(), "https://127.0.0.1:4000/x", "http://localhost:4000/x"] {
            let refused = resource_metadata(&http, &endpoint, Some(hint)).await.unwrap_err().to_string();
            assert!(refused.contains("another origin") && refused.contains("refused unfetched"), "{hint}: {refused}");
        }
        let asked = internal.accept();
        assert!(matches!(&asked, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock), "{asked:?}");
    }

    #[test]
    fn issuers_compare_as_urls_only_for_the_root_slash() {
        assert!(same_issuer("https://as.example", "https://as.example/"));
        assert!(!same_issuer("https://as.example/t1", "https://as.example/t1/"));
        assert!(!same_issuer("https://as.example", "https://evil.example"));
    }
}
