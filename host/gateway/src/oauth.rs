//! The [`Authorizer`] an HTTP provider's `[providers.NAME.oauth]` table makes (the table
//! itself is `oauth_settings`), and where its tokens are kept: `<state_dir>/oauth/NAME.json`,
//! readable by the user alone.

use std::sync::Arc;

use wasmgate_oauth::{
    AuthError, Authorizer, ClientIdentity, Grant, OAuthConfig, PrivateKey, SecretSource, TokenAuth, TokenStore,
    UserAgent, read_private,
};

use wasmgate_policy::ProviderPolicy;

use crate::config::Config;
use crate::oauth_settings::SecretConfig;

/// The largest secret or key file read.
const MAX_SECRET_FILE: u64 = 64 * 1024;

/// Where a gateway keeps its providers' tokens.
#[must_use]
pub fn token_store(config: &Config) -> TokenStore {
    TokenStore::new(config.state_dir.join("oauth"))
}

/// The authorizer of provider `name`, if it uses OAuth; `rules`, its policy, grant the
/// hosts its servers may name at run time beyond public `https` ones (`network_hosts`);
/// `agent` runs logins (`None` when serving: a provider without a usable token is then
/// withheld until `wasmgate login`).
///
/// # Errors
///
/// [`AuthError::Config`] for a secret that cannot be read.
pub fn authorizer(
    config: &Config,
    name: &str,
    rules: Option<&ProviderPolicy>,
    agent: Option<Arc<dyn UserAgent>>,
) -> Result<Option<Authorizer>, AuthError> {
    let Some(settings) = config.providers.get(name).and_then(|p| p.oauth.as_ref()) else { return Ok(None) };
    let mut oauth = OAuthConfig::new(name);
    // What its servers may name at run time besides public https hosts.
    oauth.granted_hosts = rules.map(|r| r.network_hosts.clone()).unwrap_or_default();
    oauth.grant = match settings.grant.as_deref() {
        Some("client_credentials") => Grant::ClientCredentials,
        _ => Grant::AuthorizationCode,
    };
    oauth.client_metadata_url.clone_from(&settings.client_metadata_url);
    oauth.issuer.clone_from(&settings.issuer);
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
