//! An HTTP provider's `[providers.NAME.oauth]` table ([`OAuthSettings`]) and the secrets
//! it names ([`SecretConfig`]), checked as the configuration is read.
//!
//! ```toml
//! [providers.mail]
//! url = "https://mail.example/mcp"
//! [providers.mail.oauth]                      # an empty table: discovery and registration
//! grant = "authorization_code"                # default; or "client_credentials"
//! client_id = "wasmgate-team"                 # a pre-registered client (optional)
//! client_secret = { env = "MAIL_SECRET" }     # or { file = "mail.secret" } (0600)
//! issuer = "https://auth.example"             # the authorization server it is registered at (needed with a secret)
//! private_key = { file = "mail-key.pem" }     # private_key_jwt; private_key_alg = "ES256"
//! token_auth = "client_secret_post"           # default: chosen from what is set and offered
//! client_metadata_url = "https://me.example/wasmgate.json"  # a Client ID Metadata Document
//! scopes = ["mail.read"]                      # default: the server's challenge or metadata
//! redirect_port = 8976                        # `wasmgate login`'s listener (default: any free port)
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;
use wasmgate_oauth::TokenAuth;

/// `[providers.NAME.oauth]`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct OAuthSettings {
    /// `authorization_code` (default) or `client_credentials`.
    pub grant: Option<String>,
    /// A client registered at the authorization server beforehand.
    pub client_id: Option<String>,
    /// Its secret.
    pub client_secret: Option<SecretConfig>,
    /// The authorization server the client is registered at (its issuer): discovery must
    /// lead there, so the secret never goes to a server the provider names instead.
    pub issuer: Option<String>,
    /// Its private key (PEM), for `private_key_jwt`.
    pub private_key: Option<SecretConfig>,
    /// The key's JWS algorithm (default `RS256`).
    pub private_key_alg: Option<String>,
    /// `none`, `client_secret_basic`, `client_secret_post` or `private_key_jwt`.
    pub token_auth: Option<String>,
    /// The https URL of this client's metadata document, used as its id where the
    /// authorization server supports Client ID Metadata Documents.
    pub client_metadata_url: Option<String>,
    /// The scope to ask for.
    pub scopes: Option<Vec<String>>,
    /// The loopback port of `wasmgate login`'s redirect listener.
    pub redirect_port: Option<u16>,
}

/// A secret: a variable of the gateway, or a file readable by its owner alone. Never a
/// value in the configuration file, which is shared and committed.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawSecret")]
pub enum SecretConfig {
    /// An environment variable.
    Env {
        /// Its name.
        env: String,
    },
    /// A file.
    File {
        /// Its path (relative to the configuration file).
        file: PathBuf,
    },
}

/// What a secret's table may hold; anything else is refused with the two forms.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawSecret {
    Table { env: Option<String>, file: Option<PathBuf> },
    Other(serde::de::IgnoredAny),
}

/// A secret given in another form than the two a configuration file may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "a secret is `{{ env = \"VAR\" }}` or `{{ file = \"path\" }}` (mode 0600), never the value itself: the \
     configuration file is shared"
)]
pub struct SecretForm;

impl TryFrom<RawSecret> for SecretConfig {
    type Error = SecretForm;

    fn try_from(raw: RawSecret) -> Result<Self, SecretForm> {
        match raw {
            RawSecret::Table { env: Some(env), file: None } => Ok(Self::Env { env }),
            RawSecret::Table { env: None, file: Some(file) } => Ok(Self::File { file }),
            _ => Err(SecretForm),
        }
    }
}

impl OAuthSettings {
    /// The first inconsistency, as (key, problem, fix).
    pub(crate) fn problem(&self) -> Option<(&'static str, String, &'static str)> {
        if let Some(grant) = &self.grant
            && !matches!(grant.as_str(), "authorization_code" | "client_credentials")
        {
            return Some((
                "grant",
                format!("unknown grant {grant:?}"),
                "use \"authorization_code\" (a person logs in) or \"client_credentials\" (machine to machine)",
            ));
        }
        if let Some(method) = &self.token_auth
            && TokenAuth::from_name(method).is_none()
        {
            return Some((
                "token_auth",
                format!("unknown token endpoint authentication {method:?}"),
                "use \"none\", \"client_secret_basic\", \"client_secret_post\" or \"private_key_jwt\"",
            ));
        }
        if self.client_id.is_none() && (self.client_secret.is_some() || self.private_key.is_some()) {
            return Some((
                "client_id",
                "a client secret or key without the client id it belongs to".into(),
                "set `client_id` to the client registered at the authorization server",
            ));
        }
        if self.client_secret.is_some() && self.issuer.is_none() {
            return Some((
                "issuer",
                "a client secret without the authorization server it belongs to: the provider names the server \
                 the gateway authenticates to, and could name one of its own to be sent the secret"
                    .into(),
                "set `issuer = \"https://auth.example\"`, the issuer of the authorization server the client is \
                 registered at",
            ));
        }
        if let Some(issuer) = &self.issuer
            && !issuer.starts_with("https://")
            && !issuer.starts_with("http://127.0.0.1")
            && !issuer.starts_with("http://localhost")
            && !issuer.starts_with("http://[::1]")
        {
            return Some((
                "issuer",
                format!("{issuer:?} is not an https URL"),
                "an authorization server's issuer is an https URL (or http on loopback)",
            ));
        }
        if self.token_auth.as_deref() == Some("private_key_jwt") && self.private_key.is_none() {
            return Some((
                "private_key",
                "private_key_jwt needs a key".into(),
                "set `private_key = { file = \"key.pem\" }`",
            ));
        }
        let secret_method = matches!(self.token_auth.as_deref(), Some("client_secret_basic" | "client_secret_post"));
        if secret_method && self.client_secret.is_none() {
            return Some((
                "client_secret",
                "this token_auth needs a client secret".into(),
                "set `client_secret = { env = \"VAR\" }`",
            ));
        }
        if let Some(url) = &self.client_metadata_url
            && !url.starts_with("https://")
        {
            return Some((
                "client_metadata_url",
                format!("{url:?} is not an https URL"),
                "a Client ID Metadata Document must be served over https",
            ));
        }
        None
    }

    /// Paths made absolute against `base`.
    pub(crate) fn rebase(&mut self, base: &Path) {
        for secret in [&mut self.client_secret, &mut self.private_key].into_iter().flatten() {
            if let SecretConfig::File { file } = secret
                && file.is_relative()
            {
                *file = base.join(&*file);
            }
        }
    }
}
