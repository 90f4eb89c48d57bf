//! [`Authorizer`]: one HTTP provider's tokens, and what configures it ([`OAuthConfig`],
//! [`Grant`], [`ClientIdentity`], [`TokenAuth`], [`PrivateKey`]); the steps it takes
//! are the crate's docs.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::Mutex;
use url::Url;

use crate::agent::UserAgent;
use crate::challenge::Challenge;
use crate::error::AuthError;
use crate::http::AuthHttp;
use crate::secret::SecretSource;
use crate::store::{Stored, TokenStore};
use wasmgate_egress::{HostGrant, Reach};

/// How a token is obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Grant {
    /// A person logs in (`wasmgate login`); the gateway then refreshes.
    #[default]
    AuthorizationCode,
    /// The gateway is the client (machine to machine): no person involved.
    ClientCredentials,
}

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenAuth {
    /// A public client: the id only.
    None,
    /// HTTP Basic with id and secret.
    ClientSecretBasic,
    /// Id and secret in the form body.
    ClientSecretPost,
    /// A JWT signed with the client's private key (RFC 7523).
    PrivateKeyJwt,
}

impl TokenAuth {
    /// The method's registered name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::ClientSecretBasic => "client_secret_basic",
            Self::ClientSecretPost => "client_secret_post",
            Self::PrivateKeyJwt => "private_key_jwt",
        }
    }

    /// The method named `name`.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::None, Self::ClientSecretBasic, Self::ClientSecretPost, Self::PrivateKeyJwt]
            .into_iter()
            .find(|m| m.name() == name)
    }
}

/// A client's private key for `private_key_jwt`: PEM text, and the JWS algorithm.
#[derive(Clone)]
pub struct PrivateKey {
    /// Where the PEM text comes from.
    pub pem: SecretSource,
    /// `RS256`, `ES256`, ... (default `RS256`).
    pub algorithm: String,
}

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrivateKey").field("pem", &self.pem).field("algorithm", &self.algorithm).finish()
    }
}

/// Who the gateway is to the authorization server.
#[derive(Debug, Clone, Default)]
pub enum ClientIdentity {
    /// Registered beforehand: an id, and a secret or a key (or neither, a public client).
    Registered {
        /// The client id.
        id: String,
        /// The client secret.
        secret: Option<SecretSource>,
        /// The private key, for `private_key_jwt`.
        key: Option<PrivateKey>,
        /// The token endpoint method; by default `private_key_jwt` with a key,
        /// `client_secret_basic` (or `_post` where only that is offered) with a secret,
        /// `none` otherwise.
        method: Option<TokenAuth>,
    },
    /// Not registered: the Client ID Metadata Document at `metadata_url` when set and the
    /// server supports them, else dynamic registration.
    #[default]
    Unregistered,
}

/// One provider's OAuth settings.
#[derive(Debug, Clone)]
pub struct OAuthConfig {
    /// The provider's name (token file, messages).
    pub provider: String,
    /// The grant used.
    pub grant: Grant,
    /// The client's identity.
    pub client: ClientIdentity,
    /// The authorization server the client is registered at (its issuer): when set,
    /// discovery must lead there, whatever the provider names, so that a configured
    /// secret is never sent to a server the provider chose. Set it with a client secret.
    pub issuer: Option<String>,
    /// An https URL where this client's metadata document is served (CIMD); used as the
    /// client id when the server supports it.
    pub client_metadata_url: Option<String>,
    /// The scope to ask for, instead of the challenge's or the metadata's.
    pub scopes: Option<Vec<String>>,
    /// Where tokens are kept; `None` keeps them in memory only.
    pub store: Option<TokenStore>,
    /// The client name given at registration.
    pub client_name: String,
    /// Hosts a server may name at run time (its authorization server, their endpoints)
    /// besides `https` ones at public addresses: the provider's `network_hosts`.
    pub granted_hosts: Vec<HostGrant>,
}

impl OAuthConfig {
    /// Defaults for `provider`: authorization code, unregistered, nothing stored.
    #[must_use]
    pub fn new(provider: impl Into<String>) -> Self {
        Self {
            provider: provider.into(),
            grant: Grant::AuthorizationCode,
            client: ClientIdentity::Unregistered,
            issuer: None,
            client_metadata_url: None,
            scopes: None,
            store: None,
            client_name: "wasmgate".into(),
            granted_hosts: Vec::new(),
        }
    }
}

/// Seconds before expiry at which a token is refreshed.
const REFRESH_MARGIN: u64 = 60;

/// Gets and keeps the tokens of one HTTP provider. Cheap to clone (shared state).
#[derive(Debug, Clone)]
pub struct Authorizer {
    pub(crate) inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) config: OAuthConfig,
    pub(crate) http: AuthHttp,
    pub(crate) agent: Option<Arc<dyn UserAgent>>,
    pub(crate) state: Mutex<State>,
}

#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) endpoint: Option<Url>,
    pub(crate) stored: Option<Stored>,
    /// The scope last asked for, for step-up unions.
    pub(crate) requested: Option<String>,
}

/// What the transport does after telling the authorizer of a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// A new token is in place: send again.
    Again,
    /// Nothing to do about it: report the refusal.
    GiveUp,
}

impl Authorizer {
    /// An authorizer for `config`; `agent` runs the authorization code flow (none: the
    /// provider must have been logged in already).
    ///
    /// # Errors
    ///
    /// [`AuthError::Config`] when the HTTP client cannot be built.
    pub fn new(config: OAuthConfig, agent: Option<Arc<dyn UserAgent>>) -> Result<Self, AuthError> {
        let http = AuthHttp::new(&config.provider, Reach::new(config.granted_hosts.clone()))?;
        Ok(Self { inner: Arc::new(Inner { config, http, agent, state: Mutex::new(State::default()) }) })
    }

    /// The provider's name.
    #[must_use]
    pub fn provider(&self) -> &str {
        &self.inner.config.provider
    }

    /// The access token to send to `endpoint` now, refreshed if it is about to expire;
    /// `None` when there is none yet (the request goes without, and its `401` starts the
    /// flow).
    ///
    /// # Errors
    ///
    /// [`AuthError::Storage`] for a token file that cannot be read.
    pub async fn token(&self, endpoint: &Url) -> Result<Option<String>, AuthError> {
        let mut state = self.inner.state.lock().await;
        self.load(&mut state, endpoint)?;
        let Some(stored) = state.stored.clone() else { return Ok(None) };
        let expiring = expiring(&stored);
        if stored.access_token.is_some() && !expiring {
            return Ok(stored.access_token);
        }
        if stored.refresh_token.is_some() {
            match self.refresh(&mut state, endpoint).await {
                Ok(token) => return Ok(Some(token)),
                Err(e) => tracing::info!(provider = %self.provider(), error = %e, "token refresh failed"),
            }
        }
        Ok(if expiring { None } else { stored.access_token })
    }

    /// Handles a `401` or `403` to a request that carried `sent` (the token, if any):
    /// gets a new token when that can help.
    ///
    /// # Errors
    ///
    /// Whatever stops a new token: discovery, registration, the login, the token
    /// endpoint. [`AuthError::LoginRequired`] when a person must log in.
    pub async fn refused(
        &self,
        endpoint: &Url,
        status: u16,
        challenge: Option<&Challenge>,
        sent: Option<&str>,
    ) -> Result<Retry, AuthError> {
        let mut state = self.inner.state.lock().await;
        self.load(&mut state, endpoint)?;
        // A token that is not about to expire, and not the one refused.
        let fresh = state.stored.as_ref().filter(|s| !expiring(s)).and_then(|s| s.access_token.clone());
        if status == 401 && fresh.is_some() && fresh.as_deref() != sent {
            // Another request got a new token meanwhile.
            return Ok(Retry::Again);
        }
        let step_up = status == 403 && challenge.is_some_and(Challenge::insufficient_scope);
        if status == 403 && !step_up {
            return Ok(Retry::GiveUp);
        }
        if status == 401 && sent.is_some() && state.stored.as_ref().is_some_and(|s| s.refresh_token.is_some()) {
            if let Some(stored) = state.stored.as_mut() {
                stored.access_token = None;
            }
            match self.refresh(&mut state, endpoint).await {
                Ok(_) => return Ok(Retry::Again),
                Err(e) => tracing::info!(provider = %self.provider(), error = %e, "token refresh failed"),
            }
        }
        self.authorize(&mut state, endpoint, challenge, step_up).await?;
        Ok(Retry::Again)
    }

    /// Logs in now (`wasmgate login`): asks the endpoint, without a token, for its
    /// challenge (whose `resource_metadata` and `scope` then lead), and runs the grant.
    ///
    /// # Errors
    ///
    /// As [`refused`](Self::refused).
    pub async fn login(&self, endpoint: &Url) -> Result<(), AuthError> {
        let challenge = self.inner.http.challenge(endpoint).await;
        let mut state = self.inner.state.lock().await;
        self.load(&mut state, endpoint)?;
        self.authorize(&mut state, endpoint, challenge.as_ref(), false).await
    }

    /// What is known of the login now, for `wasmgate tools`.
    ///
    /// # Errors
    ///
    /// [`AuthError::Storage`] for a token file that cannot be read.
    pub async fn status(&self, endpoint: &Url) -> Result<LoginStatus, AuthError> {
        let mut state = self.inner.state.lock().await;
        self.load(&mut state, endpoint)?;
        let Some(stored) = &state.stored else { return Ok(LoginStatus::LoggedOut) };
        let expired = stored.expires_at.is_some_and(|at| now() >= at);
        Ok(match (&stored.access_token, &stored.refresh_token) {
            (Some(_), _) if !expired => LoginStatus::LoggedIn { expires_at: stored.expires_at },
            (_, Some(_)) => LoginStatus::Refreshable,
            _ => LoginStatus::LoggedOut,
        })
    }

    /// Reads the token file when nothing usable is in memory: a login by another process
    /// (`wasmgate login` while the gateway serves) is picked up at the next request.
    fn load(&self, state: &mut State, endpoint: &Url) -> Result<(), AuthError> {
        let same = state.endpoint.as_ref() == Some(endpoint);
        let usable = state.stored.as_ref().is_some_and(|s| s.access_token.is_some() || s.refresh_token.is_some());
        let Some(store) = &self.inner.config.store else {
            if !same {
                state.endpoint = Some(endpoint.clone());
                state.stored = None;
            }
            return Ok(());
        };
        if same && usable {
            return Ok(());
        }
        let kept = store.load(self.provider(), endpoint.as_str())?;
        if kept.is_some() || !same {
            state.stored = kept;
        }
        state.endpoint = Some(endpoint.clone());
        Ok(())
    }

    pub(crate) fn save(&self, state: &mut State, stored: Stored) -> Result<(), AuthError> {
        if let Some(store) = &self.inner.config.store {
            store.save(self.provider(), &stored)?;
        }
        state.stored = Some(stored);
        Ok(())
    }
}

/// A provider's login, as `wasmgate tools` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginStatus {
    /// A token that has not expired (as far as the gateway knows).
    LoggedIn {
        /// When it expires, in seconds since the Unix epoch, if the server said.
        expires_at: Option<u64>,
    },
    /// No valid access token, but a refresh token to get one.
    Refreshable,
    /// Nothing usable: a login is due (or a client credentials grant will run).
    LoggedOut,
}

/// Whether the access token expires within [`REFRESH_MARGIN`] (or has expired).
fn expiring(stored: &Stored) -> bool {
    stored.expires_at.is_some_and(|at| now() + REFRESH_MARGIN >= at)
}

pub(crate) fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO).as_secs()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// An authorizer whose endpoint refuses connections, with `token` kept (expiring at
    /// `expires_at`), and no person to log in.
    fn kept(token: &str, expires_at: Option<u64>) -> (Authorizer, Url, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let endpoint = Url::parse("http://127.0.0.1:1/mcp").unwrap();
        let store = TokenStore::new(dir.path());
        let stored = Stored {
            resource: endpoint.to_string(),
            access_token: Some(token.into()),
            expires_at,
            ..Stored::default()
        };
        store.save("p", &stored).unwrap();
        let mut config = OAuthConfig::new("p");
        config.store = Some(store);
        (Authorizer::new(config, None).unwrap(), endpoint, dir)
    }

    #[tokio::test]
    async fn a_refusal_of_an_old_token_retries_with_the_fresh_one_and_an_expired_one_does_not() {
        let (auth, endpoint, _dir) = kept("fresh", None);
        assert_eq!(auth.token(&endpoint).await.unwrap().as_deref(), Some("fresh"));
        assert_eq!(auth.status(&endpoint).await.unwrap(), LoginStatus::LoggedIn { expires_at: None });
        assert_eq!(auth.refused(&endpoint, 401, None, Some("old")).await.unwrap(), Retry::Again);
        // The fresh token itself refused: discovery, which finds nothing here.
        let e = auth.refused(&endpoint, 401, None, Some("fresh")).await.unwrap_err();
        assert!(matches!(e, AuthError::Discovery(_)), "{e}");
        // A 403 that is not about scope is reported as it came.
        assert_eq!(auth.refused(&endpoint, 403, None, Some("fresh")).await.unwrap(), Retry::GiveUp);

        let (auth, endpoint, _dir) = kept("stale", Some(1));
        assert_eq!(auth.token(&endpoint).await.unwrap(), None, "an expired token is not sent");
        assert_eq!(auth.status(&endpoint).await.unwrap(), LoginStatus::LoggedOut);
        assert!(auth.refused(&endpoint, 401, None, None).await.is_err(), "an expired token is no reason to retry");
    }
}
