//! An HTTP provider's `[providers.NAME.oauth]` table, and the [`Authorizer`] it makes.
//!
//! ```toml
//! [providers.mail]
//! url = "https://mail.example/mcp"
//! [providers.mail.oauth]                      # an empty table: discovery and registration
//! grant = "authorization_code"                # default; or "client_credentials"
//! client_id = "wasmgate-team"                 # a pre-registered client (optional)
//! client_secret = { env = "MAIL_SECRET" }     # or { file = "mail.secret" } (0600)
//! private_key = { file = "mail-key.pem" }     # private_key_jwt; private_key_alg = "ES256"
//! token_auth = "client_secret_post"           # default: chosen from what is set and offered
//! client_metadata_url = "https://me.example/wasmgate.json"  # a Client ID Metadata Document
//! scopes = ["mail.read"]                      # default: the server's challenge or metadata
//! redirect_port = 8976                        # `wasmgate login`'s listener (default: any free port)
//! ```
//!
//! Tokens are kept in `<state_dir>/oauth/NAME.json`, readable by the user alone.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use wasmgate_oauth::{
    AuthError, Authorizer, ClientIdentity, Grant, OAuthConfig, PrivateKey, SecretSource, TokenAuth, TokenStore,
    UserAgent, read_private,
};

use crate::config::Config;

/// The largest secret or key file read.
const MAX_SECRET_FILE: u64 = 64 * 1024;

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

/// Where a gateway keeps its providers' tokens.
#[must_use]
pub fn token_store(config: &Config) -> TokenStore {
    TokenStore::new(config.state_dir.join("oauth"))
}

/// The authorizer of provider `name`, if it uses OAuth; `agent` runs logins (`None` when
/// serving: a provider without a usable token is then withheld until `wasmgate login`).
///
/// # Errors
///
/// [`AuthError::Config`] for a secret that cannot be read.
pub fn authorizer(
    config: &Config,
    name: &str,
    agent: Option<Arc<dyn UserAgent>>,
) -> Result<Option<Authorizer>, AuthError> {
    let Some(settings) = config.providers.get(name).and_then(|p| p.oauth.as_ref()) else { return Ok(None) };
    let mut oauth = OAuthConfig::new(name);
    oauth.grant = match settings.grant.as_deref() {
        Some("client_credentials") => Grant::ClientCredentials,
        _ => Grant::AuthorizationCode,
    };
    oauth.client_metadata_url.clone_from(&settings.client_metadata_url);
    oauth.scopes.clone_from(&settings.scopes);
    oauth.store = Some(token_store(config));
    if let Some(id) = &settings.client_id {
        let client_secret = settings.client_secret.as_ref().map(|s| secret(name, s)).transpose()?;
        let key = match &settings.private_key {
            Some(source) => Some(PrivateKey {
                pem: secret(name, source)?,
                algorithm: settings.private_key_alg.clone().unwrap_or_else(|| "RS256".into()),
            }),
            None => None,
        };
        let method = settings.token_auth.as_deref().and_then(TokenAuth::from_name);
        oauth.client = ClientIdentity::Registered { id: id.clone(), secret: client_secret, key, method };
    }
    Authorizer::new(oauth, agent).map(Some)
}

/// A secret's source: a variable stays one (read when used); a file is read now, and
/// refused when others may read it.
fn secret(provider: &str, source: &SecretConfig) -> Result<SecretSource, AuthError> {
    match source {
        SecretConfig::Env { env } => Ok(SecretSource::FromEnv(env.clone())),
        SecretConfig::File { file } => {
            let refuse = |why: String| AuthError::Config(format!("{provider}: {}: {why}", file.display()));
            let bytes = read_private(file, MAX_SECRET_FILE)
                .map_err(|e| refuse(wasmgate_core::report(&e)))?
                .ok_or_else(|| refuse("no such file".into()))?;
            let text = String::from_utf8(bytes).map_err(|_| refuse("not UTF-8 text".into()))?;
            Ok(SecretSource::Value(text.trim_end_matches(['\n', '\r']).to_owned()))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_secret_file_others_can_read_is_refused_and_a_private_one_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s");
        std::fs::write(&file, "shh\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let source = SecretConfig::File { file: file.clone() };
        let e = secret("p", &source).unwrap_err().to_string();
        assert!(e.contains("chmod 600"), "{e}");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(matches!(secret("p", &source).unwrap(), SecretSource::Value(v) if v == "shh"));
        let missing = SecretConfig::File { file: dir.path().join("none") };
        assert!(secret("p", &missing).is_err());
    }
}
