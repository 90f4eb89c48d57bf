//! `[serve.console]` checked, and the console built from it ([`Console::new`]).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use oauth2::basic::BasicClient;
use oauth2::{AuthUrl, ClientId, EndpointNotSet, EndpointSet, RedirectUrl, TokenUrl};
use url::Url;
use wasmgate_audit::Index;
use wasmgate_egress::Reach;
use wasmgate_gateway::ConsoleConfig;
use wasmgate_oauth::AuthHttp;

use crate::{Console, Parts, sessions::Sessions};

/// The console's OAuth client: an authorization endpoint and a token endpoint.
pub(crate) type OAuthClient = BasicClient<EndpointSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;

/// How long a sign-in lasts unless `session_minutes` says.
const DEFAULT_SESSION_MINUTES: u64 = 60;

/// The longest `session_minutes` (a day).
pub const MAX_SESSION_MINUTES: u64 = 1440;

/// The path the authorization server sends the browser back to.
const CALLBACK: &str = "/console/callback";

/// Why the console cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// A setting that cannot be used: which, and why.
    #[error("[serve.console] {key}: {why}")]
    Setting {
        /// The key.
        key: &'static str,
        /// Why, and what to write.
        why: String,
    },
    /// The HTTP client cannot be built.
    #[error("[serve.console]: {0}")]
    Client(String),
}

fn setting(key: &'static str, why: impl Into<String>) -> ConsoleError {
    ConsoleError::Setting { key, why: why.into() }
}

/// `text` as a URL the gateway or its users' browsers may send credentials to: `https`,
/// or `http` to a loopback host.
fn credential_url(key: &'static str, text: &str, reach: &Reach) -> Result<Url, ConsoleError> {
    let url = Url::parse(text).map_err(|e| setting(key, format!("{text:?} is not a URL: {e}")))?;
    reach.configure(&url);
    reach.check(&url).map_err(|e| setting(key, e.to_string()))?;
    Ok(url)
}

impl Console {
    /// The console of `[serve.console]` (`config`), for a gateway whose HTTP face is bound
    /// to `bound`.
    ///
    /// # Errors
    ///
    /// [`ConsoleError`]: a URL that is not `https` (or `http` to a loopback host), a
    /// redirect URI that is not the console's callback, a session length out of range.
    pub fn new(config: &ConsoleConfig, bound: SocketAddr, parts: Parts) -> Result<Self, ConsoleError> {
        if config.client_id.trim().is_empty() {
            return Err(setting("client_id", "empty: give the console's client id at the authorization server"));
        }
        let reach = Reach::new(Vec::new());
        let authorize = credential_url("authorization_endpoint", &config.authorization_endpoint, &reach)?;
        let token = credential_url("token_endpoint", &config.token_endpoint, &reach)?;
        let default_redirect = format!("http://{bound}{CALLBACK}");
        let redirect_text = config.redirect_uri.as_deref().unwrap_or(&default_redirect);
        let redirect = credential_url("redirect_uri", redirect_text, &reach)?;
        if redirect.path() != CALLBACK || redirect.query().is_some() || redirect.fragment().is_some() {
            return Err(setting(
                "redirect_uri",
                format!("{redirect_text:?} is not the console's callback: write the gateway's URL and {CALLBACK}"),
            ));
        }
        let minutes = config.session_minutes.unwrap_or(DEFAULT_SESSION_MINUTES);
        if !(1..=MAX_SESSION_MINUTES).contains(&minutes) {
            return Err(setting(
                "session_minutes",
                format!("{minutes} is out of range: write 1 to {MAX_SESSION_MINUTES}"),
            ));
        }
        let oauth = BasicClient::new(ClientId::new(config.client_id.clone()))
            .set_auth_uri(AuthUrl::from_url(authorize))
            .set_token_uri(TokenUrl::from_url(token))
            .set_redirect_uri(RedirectUrl::from_url(redirect.clone()));
        let http = AuthHttp::new("the console", reach).map_err(|e| ConsoleError::Client(e.to_string()))?;
        let index = Index::new(parts.gateway.guard.audit().path(), parts.audit_key.clone());
        Ok(Self {
            parts,
            oauth,
            http,
            secure: redirect.scheme() == "https",
            session_ttl: Duration::from_secs(minutes * 60),
            scopes: config.scopes.clone(),
            sessions: Sessions::default(),
            seal: crate::sessions::Seal::new(),
            index: Arc::new(Mutex::new(index)),
        })
    }
}
