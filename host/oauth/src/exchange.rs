//! The exchanges behind [`Authorizer`]: registration, the authorization code flow, client
//! credentials and refresh, each with the client's authentication and the resource
//! indicator. The OAuth mechanics (PKCE, form encoding, Basic authentication, token
//! responses) are the `oauth2` crate's.

use std::collections::BTreeSet;
use std::sync::Arc;

use base64::Engine as _;
use oauth2::basic::{BasicClient, BasicErrorResponse, BasicTokenType};
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointMaybeSet, EndpointNotSet,
    EndpointSet, HttpClientError, PkceCodeChallenge, RedirectUrl, RefreshToken, RequestTokenError, Scope,
    TokenResponse, TokenUrl,
};
use serde_json::json;
use url::Url;

use crate::agent::UserAgent;
use crate::authorizer::{Authorizer, ClientIdentity, Grant, PrivateKey, State, TokenAuth, now};
use crate::error::AuthError;
use crate::metadata::{self, ServerMetadata, same_issuer};
use crate::secret::SecretSource;
use crate::store::Stored;

type Client = BasicClient<EndpointMaybeSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;
type TokenError = RequestTokenError<HttpClientError<reqwest::Error>, BasicErrorResponse>;

/// The client as it authenticates at the token endpoint.
#[derive(Clone)]
struct ClientAuth {
    id: String,
    secret: Option<String>,
    key: Option<PrivateKey>,
    method: TokenAuth,
}

impl Authorizer {
    /// Discovery, then the configured grant; the tokens replace what was kept.
    pub(super) async fn authorize(
        &self,
        state: &mut State,
        endpoint: &Url,
        challenge: Option<&super::Challenge>,
        step_up: bool,
    ) -> Result<(), AuthError> {
        let config = &self.inner.config;
        let http = &self.inner.http;
        let hint = challenge.and_then(|c| c.resource_metadata.as_deref());
        let (resource, _) = metadata::resource_metadata(http, endpoint, hint).await?;
        // The configured authorization server, which the provider must name; else the
        // first it names.
        let issuer = match &config.issuer {
            Some(expected) => resource
                .authorization_servers
                .iter()
                .find(|named| same_issuer(named, expected))
                .cloned()
                .ok_or_else(|| self.elsewhere(expected, &resource.authorization_servers.join(", ")))?,
            None => resource.authorization_servers.first().cloned().unwrap_or_default(),
        };
        let server = metadata::server_metadata(http, &issuer).await?;
        if let Some(expected) = &config.issuer
            && !same_issuer(&server.issuer, expected)
        {
            return Err(self.elsewhere(expected, &server.issuer));
        }
        let indicator = resource.resource.clone().unwrap_or_else(|| endpoint.to_string());

        let from_challenge = challenge.and_then(|c| c.scope.clone());
        let mut scope = match (&config.scopes, step_up) {
            (Some(scopes), false) => Some(scopes.join(" ")),
            (_, true) => union(state.requested.as_deref(), from_challenge.as_deref()),
            (None, false) => from_challenge.or_else(|| resource.scopes_supported.as_ref().map(|s| s.join(" "))),
        }
        .filter(|s| !s.trim().is_empty());
        // A refresh token needs `offline_access` where the server has that scope.
        let offers_offline = server.scopes_supported.as_ref().is_some_and(|s| s.iter().any(|s| s == "offline_access"));
        if config.grant == Grant::AuthorizationCode && offers_offline {
            scope = union(scope.as_deref(), Some("offline_access"));
        }
        let scope = checked_scope(self.provider(), scope)?;
        state.requested.clone_from(&scope);

        // What was kept is for this authorization server only: a server that moved
        // starts from nothing (a new registration, new tokens).
        let mut stored = state
            .stored
            .clone()
            .filter(|s| s.issuer.as_deref().is_some_and(|i| same_issuer(i, &server.issuer)))
            .unwrap_or_default();
        stored.resource = endpoint.to_string();
        stored.issuer = Some(server.issuer.clone());
        stored.resource_indicator = Some(indicator.clone());
        let scopes: Vec<Scope> =
            scope.iter().flat_map(|s| s.split_whitespace()).map(|s| Scope::new(s.into())).collect();

        let answer = match config.grant {
            Grant::ClientCredentials => {
                let auth = self.client_auth(&server, &mut stored, None).await?;
                let client = oauth_client(self.provider(), &auth, &server, None)?;
                let mut request = client.exchange_client_credentials().add_scopes(scopes);
                for (name, value) in self.extra_params(&auth, &server, &indicator)? {
                    request = request.add_extra_param(name, value);
                }
                request.request_async(http).await.map_err(|e| self.token_error("client credentials", &e))?
            }
            Grant::AuthorizationCode => {
                let agent = self
                    .inner
                    .agent
                    .clone()
                    .ok_or_else(|| AuthError::LoginRequired { provider: self.provider().to_owned() })?;
                self.code_flow(agent, &server, &mut stored, scopes, &indicator).await?
            }
        };
        apply(&mut stored, &answer, scope.as_deref())?;
        self.save(state, stored)
    }

    /// The refusal of an authorization server other than the configured one.
    fn elsewhere(&self, expected: &str, named: &str) -> AuthError {
        AuthError::Discovery(format!(
            "{}: the server names the authorization server {:?}, not {expected:?}, the issuer its oauth settings \
             name; nothing was sent there. If the provider moved its authorization server, change `issuer`",
            self.provider(),
            if named.is_empty() { "(none)" } else { named }
        ))
    }

    /// The authorization code flow through `agent`, PKCE S256, `state` and `iss` checked.
    async fn code_flow(
        &self,
        agent: Arc<dyn UserAgent>,
        server: &ServerMetadata,
        stored: &mut Stored,
        scopes: Vec<Scope>,
        indicator: &str,
    ) -> Result<oauth2::basic::BasicTokenResponse, AuthError> {
        let provider = self.provider();
        if server.authorization_endpoint.is_none() {
            return Err(AuthError::Discovery(format!(
                "{provider}: the authorization server has no authorization endpoint: use `grant = \"client_credentials\"`"
            )));
        }
        let pkce = server.code_challenge_methods_supported.as_ref().is_some_and(|m| m.iter().any(|m| m == "S256"));
        if !pkce {
            return Err(AuthError::Discovery(format!(
                "{provider}: the authorization server does not offer PKCE with S256 (code_challenge_methods_supported): refusing to log in without it"
            )));
        }
        let redirect = agent.redirect_uri();
        let auth = self.client_auth(server, stored, Some(&redirect)).await?;
        let client = oauth_client(provider, &auth, server, Some(&redirect))?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (url, csrf) = client
            .authorize_url(CsrfToken::new_random)
            .map_err(|e| AuthError::Config(format!("{provider}: {e}")))?
            .add_scopes(scopes)
            .set_pkce_challenge(challenge)
            .add_extra_param("resource", indicator)
            .url();
        let back = agent.authorize(&url).await?;
        let code = check_redirect(provider, &back, csrf.secret(), server)?;
        let mut request = client.exchange_code(AuthorizationCode::new(code)).set_pkce_verifier(verifier);
        for (name, value) in self.extra_params(&auth, server, indicator)? {
            request = request.add_extra_param(name, value);
        }
        request.request_async(&self.inner.http).await.map_err(|e| self.token_error("authorization code", &e))
    }

    /// A new access token from the refresh token; a refused refresh token is forgotten.
    pub(super) async fn refresh(&self, state: &mut State, endpoint: &Url) -> Result<String, AuthError> {
        let provider = self.provider().to_owned();
        let mut stored = state.stored.clone().ok_or_else(|| AuthError::LoginRequired { provider: provider.clone() })?;
        let (Some(refresh), Some(issuer)) = (stored.refresh_token.clone(), stored.issuer.clone()) else {
            return Err(AuthError::LoginRequired { provider });
        };
        let server = metadata::server_metadata(&self.inner.http, &issuer).await?;
        let indicator = stored.resource_indicator.clone().unwrap_or_else(|| endpoint.to_string());
        let auth = self.client_auth(&server, &mut stored, None).await?;
        let client = oauth_client(self.provider(), &auth, &server, None)?;
        let refresh = RefreshToken::new(refresh);
        let mut request = client.exchange_refresh_token(&refresh);
        for (name, value) in self.extra_params(&auth, &server, &indicator)? {
            request = request.add_extra_param(name, value);
        }
        match request.request_async(&self.inner.http).await {
            Ok(answer) => {
                let granted = stored.scope.clone();
                apply(&mut stored, &answer, granted.as_deref())?;
                let token = stored.access_token.clone().unwrap_or_default();
                self.save(state, stored)?;
                Ok(token)
            }
            Err(e) => {
                if matches!(&e, RequestTokenError::ServerResponse(_)) {
                    stored.refresh_token = None;
                    stored.access_token = None;
                    self.save(state, stored)?;
                }
                Err(self.token_error("refresh", &e))
            }
        }
    }

    /// Who the client is at `server`: the configured registration, a Client ID Metadata
    /// Document, the registration kept from before, or a new dynamic registration.
    async fn client_auth(
        &self,
        server: &ServerMetadata,
        stored: &mut Stored,
        redirect: Option<&Url>,
    ) -> Result<ClientAuth, AuthError> {
        let config = &self.inner.config;
        let provider = self.provider();
        let offered = |method: TokenAuth| {
            server.token_endpoint_auth_methods_supported.as_ref().is_none_or(|m| m.iter().any(|m| m == method.name()))
        };
        if let ClientIdentity::Registered { id, secret, key, method } = &config.client {
            let secret = secret.as_ref().map(|s| resolve(provider, "client secret", s)).transpose()?;
            let method = method.unwrap_or(match (&secret, key) {
                (_, Some(_)) => TokenAuth::PrivateKeyJwt,
                (Some(_), None) if !offered(TokenAuth::ClientSecretBasic) && offered(TokenAuth::ClientSecretPost) => {
                    TokenAuth::ClientSecretPost
                }
                (Some(_), None) => TokenAuth::ClientSecretBasic,
                (None, None) => TokenAuth::None,
            });
            return Ok(ClientAuth { id: id.clone(), secret, key: key.clone(), method });
        }
        if let Some(url) = &config.client_metadata_url
            && server.client_id_metadata_document_supported
        {
            return Ok(ClientAuth { id: url.clone(), secret: None, key: None, method: TokenAuth::None });
        }
        if let Some(id) = &stored.client_id {
            let method = stored.client_auth.as_deref().and_then(TokenAuth::from_name).unwrap_or(TokenAuth::None);
            return Ok(ClientAuth { id: id.clone(), secret: stored.client_secret.clone(), key: None, method });
        }
        let Some(endpoint) = &server.registration_endpoint else {
            return Err(AuthError::Config(format!(
                "{provider}: the authorization server offers no dynamic registration{}: register a client there and set `client_id` (and `client_secret` or `private_key`)",
                if config.client_metadata_url.is_some() { " nor Client ID Metadata Documents" } else { "" }
            )));
        };
        let endpoint = Url::parse(endpoint)
            .map_err(|e| AuthError::Discovery(format!("{provider}: registration endpoint {endpoint:?}: {e}")))?;
        // A public client where the server takes one; else a secret, Basic where offered.
        let method = [TokenAuth::None, TokenAuth::ClientSecretBasic, TokenAuth::ClientSecretPost]
            .into_iter()
            .find(|m| offered(*m))
            .unwrap_or(TokenAuth::ClientSecretBasic);
        let (grants, responses) = match config.grant {
            Grant::AuthorizationCode => (json!(["authorization_code", "refresh_token"]), json!(["code"])),
            Grant::ClientCredentials => (json!(["client_credentials"]), json!([])),
        };
        let mut body = json!({
            "client_name": config.client_name,
            "grant_types": grants,
            "response_types": responses,
            "token_endpoint_auth_method": method.name(),
        });
        if let Some(redirect) = redirect {
            body["redirect_uris"] = json!([redirect.as_str()]);
        }
        // SEP-837: a client whose redirect is a loopback listener is a native application.
        let native = redirect.is_none_or(wasmgate_egress::is_loopback);
        body["application_type"] = json!(if native { "native" } else { "web" });
        let (status, answer) = self.inner.http.post_json(&endpoint, &body).await?;
        let id = answer.get("client_id").and_then(|v| v.as_str()).filter(|_| (200..300).contains(&status));
        let Some(id) = id else {
            return Err(AuthError::Token(format!(
                "{provider}: dynamic registration at {endpoint} failed (HTTP {status}): {}",
                describe(&answer)
            )));
        };
        let secret = answer.get("client_secret").and_then(|v| v.as_str()).map(str::to_owned);
        let method =
            answer.get("token_endpoint_auth_method").and_then(|v| v.as_str()).and_then(TokenAuth::from_name).unwrap_or(
                if secret.is_some() && method == TokenAuth::None { TokenAuth::ClientSecretBasic } else { method },
            );
        stored.client_id = Some(id.to_owned());
        stored.client_secret.clone_from(&secret);
        stored.client_auth = Some(method.name().to_owned());
        Ok(ClientAuth { id: id.to_owned(), secret, key: None, method })
    }

    /// The resource indicator, and the client assertion for `private_key_jwt`.
    fn extra_params(
        &self,
        auth: &ClientAuth,
        server: &ServerMetadata,
        indicator: &str,
    ) -> Result<Vec<(&'static str, String)>, AuthError> {
        let mut params = vec![("resource", indicator.to_owned())];
        if auth.method == TokenAuth::PrivateKeyJwt {
            let provider = self.provider();
            let key = auth.key.as_ref().ok_or_else(|| {
                AuthError::Config(format!("{provider}: private_key_jwt needs `private_key` (a PEM file or variable)"))
            })?;
            params.push(("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into()));
            params.push(("client_assertion", assertion(provider, &auth.id, key, server)?));
        }
        Ok(params)
    }

    fn token_error(&self, what: &str, error: &TokenError) -> AuthError {
        let provider = self.provider();
        AuthError::Token(match error {
            RequestTokenError::ServerResponse(answer) => format!(
                "{provider}: the token endpoint refused the {what} grant: {}{}",
                answer.error().as_ref(),
                answer.error_description().map(|d| format!(": {}", bounded(d))).unwrap_or_default()
            ),
            RequestTokenError::Request(e) => format!("{provider}: token endpoint: {}", wasmgate_core::report(e)),
            RequestTokenError::Parse(e, _) => format!("{provider}: the token endpoint's answer is not a token: {e}"),
            RequestTokenError::Other(e) => format!("{provider}: token endpoint: {}", bounded(e)),
        })
    }
}

/// The `oauth2` client for `auth` at `server`.
fn oauth_client(
    name: &str,
    auth: &ClientAuth,
    server: &ServerMetadata,
    redirect: Option<&Url>,
) -> Result<Client, AuthError> {
    let bad = |what: &str, e: &dyn std::fmt::Display| AuthError::Discovery(format!("{what}: {e}"));
    let token = Url::parse(&server.token_endpoint).map_err(|e| bad("token endpoint", &e))?;
    let authorize = server
        .authorization_endpoint
        .as_deref()
        .map(Url::parse)
        .transpose()
        .map_err(|e| bad("authorization endpoint", &e))?;
    // The token endpoint's reach is checked as each request is sent (`AuthHttp`); the
    // authorization endpoint is the user's browser's to open, and carries no secret of
    // ours, but not in clear text all the same.
    for url in std::iter::once(&token).chain(authorize.as_ref()) {
        super::http::check_secure(name, url)?;
    }
    let mut client = BasicClient::new(ClientId::new(auth.id.clone()))
        .set_auth_uri_option(authorize.map(AuthUrl::from_url))
        .set_token_uri(TokenUrl::from_url(token))
        .set_auth_type(if auth.method == TokenAuth::ClientSecretBasic {
            AuthType::BasicAuth
        } else {
            AuthType::RequestBody
        });
    if matches!(auth.method, TokenAuth::ClientSecretBasic | TokenAuth::ClientSecretPost)
        && let Some(secret) = &auth.secret
    {
        client = client.set_client_secret(ClientSecret::new(secret.clone()));
    }
    if let Some(redirect) = redirect {
        client = client.set_redirect_uri(RedirectUrl::from_url(redirect.clone()));
    }
    Ok(client)
}

/// The code of the authorization response at `back`, after its checks: an `error` is
/// reported; `state` must be the one sent; `iss` (RFC 9207) must name the server when it
/// says it sends one, and when present at all.
fn check_redirect(provider: &str, back: &Url, state: &str, server: &ServerMetadata) -> Result<String, AuthError> {
    let param = |name: &str| back.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned());
    let refuse = |why: String| AuthError::Authorization(format!("{provider}: {why}"));
    if param("state").as_deref() != Some(state) {
        return Err(refuse(
            "the authorization response's state is not the one sent: refused (a forged redirect?)".into(),
        ));
    }
    match param("iss") {
        Some(iss) if iss != server.issuer => {
            return Err(refuse(format!(
                "the authorization response comes from the issuer {:?}, not {:?}: refused (RFC 9207)",
                bounded(&iss),
                server.issuer
            )));
        }
        None if server.authorization_response_iss_parameter_supported => {
            return Err(refuse(
                "the authorization server promises an `iss` in its responses and this one has none: refused (RFC 9207)"
                    .into(),
            ));
        }
        _ => {}
    }
    if let Some(error) = param("error") {
        let description = param("error_description").map(|d| format!(": {}", bounded(&d))).unwrap_or_default();
        return Err(refuse(format!("the authorization server refused: {}{description}", bounded(&error))));
    }
    param("code").ok_or_else(|| refuse("the authorization response carries no code".into()))
}

/// The signed client assertion (RFC 7523 §3): issued by and about the client, for the
/// authorization server, valid for a minute, never reused.
fn assertion(provider: &str, client: &str, key: &PrivateKey, server: &ServerMetadata) -> Result<String, AuthError> {
    use jsonwebtoken::{Algorithm, EncodingKey, Header};
    let refuse = |why: String| AuthError::Config(format!("{provider}: private key: {why}"));
    let algorithm: Algorithm =
        key.algorithm.parse().map_err(|_| refuse(format!("unknown algorithm {:?}", key.algorithm)))?;
    let pem = resolve(provider, "private key", &key.pem)?;
    let encoding = match algorithm {
        Algorithm::RS256
        | Algorithm::RS384
        | Algorithm::RS512
        | Algorithm::PS256
        | Algorithm::PS384
        | Algorithm::PS512 => EncodingKey::from_rsa_pem(pem.as_bytes()),
        Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(pem.as_bytes()),
        Algorithm::EdDSA => EncodingKey::from_ed_pem(pem.as_bytes()),
        _ => return Err(refuse(format!("{:?} is not a signature algorithm", key.algorithm))),
    }
    .map_err(|e| refuse(e.to_string()))?;
    let mut jti = [0u8; 16];
    getrandom::fill(&mut jti).map_err(|e| refuse(e.to_string()))?;
    let issued = now();
    let claims = json!({
        "iss": client,
        "sub": client,
        "aud": server.issuer,
        "iat": issued,
        "exp": issued + 60,
        "jti": base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(jti),
    });
    jsonwebtoken::encode(&Header::new(algorithm), &claims, &encoding).map_err(|e| refuse(e.to_string()))
}

/// Puts a token response into `stored`. A refresh answer without a refresh token keeps
/// the old one; a token type other than Bearer is refused.
fn apply(
    stored: &mut Stored,
    answer: &oauth2::basic::BasicTokenResponse,
    requested: Option<&str>,
) -> Result<(), AuthError> {
    if *answer.token_type() != BasicTokenType::Bearer {
        return Err(AuthError::Token(format!(
            "the token endpoint issued a {:?} token; only Bearer tokens are supported",
            answer.token_type().as_ref()
        )));
    }
    stored.access_token = Some(answer.access_token().secret().clone());
    if let Some(refresh) = answer.refresh_token() {
        stored.refresh_token = Some(refresh.secret().clone());
    }
    stored.expires_at = answer.expires_in().map(|d| now().saturating_add(d.as_secs()));
    stored.scope = answer
        .scopes()
        .map(|s| s.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" "))
        .or_else(|| requested.map(str::to_owned));
    Ok(())
}

/// The most scopes asked for at once, and the longest one: a server names the scope it
/// wants (its challenge, its metadata), and a hostile one could otherwise make every
/// authorization URL and token request as large as it likes.
const MAX_SCOPES: usize = 32;
const MAX_SCOPE_CHARS: usize = 128;

/// `scope` if it is within [`MAX_SCOPES`] scopes of at most [`MAX_SCOPE_CHARS`]
/// characters each, every one a scope token of RFC 6749 §3.3 (printable ASCII but `"`
/// and `\`); refused otherwise, naming the fix.
fn checked_scope(provider: &str, scope: Option<String>) -> Result<Option<String>, AuthError> {
    let Some(scope) = scope else { return Ok(None) };
    let tokens: Vec<&str> = scope.split_whitespace().collect();
    let token_ok = |t: &str| {
        t.len() <= MAX_SCOPE_CHARS
            && t.bytes().all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
    };
    if tokens.len() > MAX_SCOPES {
        return Err(AuthError::Discovery(format!(
            "{provider}: the server asks for {} scopes, more than the {MAX_SCOPES} the gateway asks for at once: \
             list the ones needed in the provider's oauth `scopes`",
            tokens.len()
        )));
    }
    if let Some(bad) = tokens.iter().find(|t| !token_ok(t)) {
        return Err(AuthError::Discovery(format!(
            "{provider}: the scope {} is not a scope token of at most {MAX_SCOPE_CHARS} printable characters: \
             list the ones needed in the provider's oauth `scopes`",
            bounded(bad)
        )));
    }
    Ok(Some(tokens.join(" ")))
}

/// The union of two space-separated scopes, in first-seen order.
fn union(a: Option<&str>, b: Option<&str>) -> Option<String> {
    let mut seen = BTreeSet::new();
    let all: Vec<&str> = a.into_iter().chain(b).flat_map(str::split_whitespace).filter(|s| seen.insert(*s)).collect();
    (!all.is_empty()).then(|| all.join(" "))
}

fn resolve(provider: &str, what: &str, source: &SecretSource) -> Result<String, AuthError> {
    source
        .read()
        .map_err(|unset| AuthError::Config(format!("{provider}: the variable {} of the {what} is not set", unset.0)))
}

/// A short, printable copy of server text.
fn bounded(text: &str) -> String {
    text_safety::escape_for_log_cut(text, 200)
}

fn describe(answer: &serde_json::Value) -> String {
    let field = |name: &str| answer.get(name).and_then(|v| v.as_str()).map(bounded);
    match (field("error"), field("error_description")) {
        (Some(e), Some(d)) => format!("{e}: {d}"),
        (Some(e), None) => e,
        _ => "no client_id in the answer".into(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A loopback HTTP server answering each path of the routes `routes` makes of its
    /// base URL with their JSON (404 for any other path); its base URL, and the paths it
    /// was asked for.
    async fn serve(
        routes: impl FnOnce(&str) -> Vec<(&'static str, serde_json::Value)>,
    ) -> (String, Arc<std::sync::Mutex<Vec<String>>>) {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let routes = routes(&base);
        let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = Arc::clone(&asked);
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut head = vec![0u8; 16 * 1024];
                let n = stream.read(&mut head).await.unwrap_or(0);
                let text = String::from_utf8_lossy(&head[..n]).into_owned();
                let path = text.split_whitespace().nth(1).unwrap_or("").to_owned();
                seen.lock().unwrap().push(path.clone());
                let found = routes.iter().find(|(p, _)| *p == path).map(|(_, body)| body.to_string());
                let (status, body) = found.map_or(("404 Not Found", String::new()), |body| ("200 OK", body));
                let reply = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
            }
        });
        (base, asked)
    }

    #[tokio::test]
    async fn a_configured_secret_goes_only_to_the_configured_authorization_server() {
        use crate::OAuthConfig;
        use serde_json::json;
        // The authorization server a provider names, of its own: it would take the secret.
        let (named, asked) = serve(|base| {
            vec![
                (
                    "/.well-known/oauth-authorization-server",
                    json!({"issuer": base, "token_endpoint": format!("{base}/token")}),
                ),
                ("/token", json!({"access_token": "t", "token_type": "Bearer", "expires_in": 3600})),
            ]
        })
        .await;
        let (provider, _) = serve(|base| {
            let resource = json!({"resource": format!("{base}/mcp"), "authorization_servers": [named]});
            vec![("/.well-known/oauth-protected-resource/mcp", resource)]
        })
        .await;
        let endpoint = Url::parse(&format!("{provider}/mcp")).unwrap();
        let grant = |url: &str| {
            let url = Url::parse(url).unwrap();
            wasmgate_egress::HostGrant::parse(&format!("{}:{}", url.host_str().unwrap(), url.port().unwrap())).unwrap()
        };
        let config = |issuer: &str| OAuthConfig {
            grant: Grant::ClientCredentials,
            client: ClientIdentity::Registered {
                id: "wasmgate".into(),
                secret: Some(crate::SecretSource::Value("hunter2".into())),
                key: None,
                method: None,
            },
            issuer: Some(issuer.to_owned()),
            granted_hosts: vec![grant(&named), grant(&provider)],
            ..OAuthConfig::new("mail")
        };

        let refused = Authorizer::new(config("https://auth.example"), None).unwrap();
        let e = refused.refused(&endpoint, 401, None, None).await.unwrap_err();
        assert!(matches!(e, AuthError::Discovery(_)), "{e}");
        assert!(e.to_string().contains("not \"https://auth.example\", the issuer its oauth settings name"), "{e}");
        assert!(asked.lock().unwrap().is_empty(), "nothing went to the server the provider named");

        // The same server, configured: the secret goes there.
        let configured = Authorizer::new(config(&named), None).unwrap();
        configured.refused(&endpoint, 401, None, None).await.unwrap();
        assert!(asked.lock().unwrap().iter().any(|path| path == "/token"), "{asked:?}");
    }

    fn server(iss_supported: bool) -> ServerMetadata {
        ServerMetadata {
            issuer: "https://as.example".into(),
            token_endpoint: "https://as.example/token".into(),
            authorization_response_iss_parameter_supported: iss_supported,
            ..ServerMetadata::default()
        }
    }

    #[test]
    fn the_redirect_is_checked_before_its_code_is_used() {
        let url = |q: &str| Url::parse(&format!("http://127.0.0.1:1/callback?{q}")).unwrap();
        let ok = check_redirect("p", &url("code=c&state=s"), "s", &server(false));
        assert_eq!(ok.unwrap(), "c");
        assert!(check_redirect("p", &url("code=c&state=t"), "s", &server(false)).is_err());
        assert!(check_redirect("p", &url("code=c"), "s", &server(false)).is_err());
        let iss = "code=c&state=s&iss=https%3A%2F%2Fas.example";
        assert_eq!(check_redirect("p", &url(iss), "s", &server(true)).unwrap(), "c");
        assert!(check_redirect("p", &url("code=c&state=s"), "s", &server(true)).is_err());
        let wrong = "code=c&state=s&iss=https%3A%2F%2Fevil.example";
        assert!(check_redirect("p", &url(wrong), "s", &server(false)).is_err());
        let e =
            check_redirect("p", &url("state=s&error=access_denied&error_description=%1b%5b2Jno"), "s", &server(false))
                .unwrap_err()
                .to_string();
        assert!(e.contains("access_denied") && !e.contains('\u{1b}'), "{e}");
    }

    #[test]
    fn a_scope_is_asked_for_only_within_its_bounds() {
        assert_eq!(checked_scope("p", None).unwrap(), None);
        assert_eq!(checked_scope("p", Some(" read  write ".into())).unwrap().as_deref(), Some("read write"));
        let many = (0..10_000).map(|n| format!("s{n}")).collect::<Vec<_>>().join(" ");
        let refused = checked_scope("p", Some(many)).unwrap_err().to_string();
        assert!(refused.contains("10000 scopes") && refused.contains("`scopes`"), "{refused}");
        let most = (0..MAX_SCOPES).map(|n| format!("s{n}")).collect::<Vec<_>>().join(" ");
        assert!(checked_scope("p", Some(most)).is_ok());
        for bad in ["x".repeat(MAX_SCOPE_CHARS + 1), "a\"b".into(), "a\\b".into(), "caf\u{e9}".into(), "a\u{7f}".into()]
        {
            assert!(checked_scope("p", Some(bad.clone())).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn scopes_unite_without_repeats() {
        assert_eq!(union(Some("a b"), Some("b c")).as_deref(), Some("a b c"));
        assert_eq!(union(None, Some(" ")), None);
        assert_eq!(union(None, None), None);
    }
}
