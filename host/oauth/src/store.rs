//! Tokens kept between runs, one file per provider, readable by the user alone.
//!
//! The directory is created `0700` and each file written `0600` through a temporary file
//! and a rename, so a crash leaves the old tokens or the new, never half of either. What
//! is stored is bound to the endpoint it was issued for: tokens for another URL are not
//! used.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::AuthError;

/// The largest token file read.
const MAX_FILE: u64 = 256 * 1024;

/// Why a private file was not read.
#[derive(Debug, thiserror::Error)]
pub enum PrivateFileError {
    /// Its metadata cannot be read.
    #[error("its metadata cannot be read")]
    Stat(#[source] std::io::Error),
    /// Others than its owner may read it.
    #[error("others may read it (mode {mode:o}): run `chmod 600 {}`", path.display())]
    Exposed {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// It is larger than the bound.
    #[error("larger than {limit} bytes")]
    TooLarge {
        /// The bound.
        limit: u64,
    },
    /// Reading it failed.
    #[error("it cannot be read")]
    Read(#[source] std::io::Error),
}

/// The bytes of a file that only its owner may read (tokens, client secrets, keys), of
/// at most `limit` bytes; `None` when there is no such file.
///
/// # Errors
///
/// A [`PrivateFileError`] saying why not and what to do: a file others may read names
/// the `chmod` that fixes it.
pub fn read_private(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, PrivateFileError> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(PrivateFileError::Stat(e)),
    };
    let mode = meta.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(PrivateFileError::Exposed { path: path.to_owned(), mode: mode & 0o777 });
    }
    if meta.len() > limit {
        return Err(PrivateFileError::TooLarge { limit });
    }
    std::fs::read(path).map(Some).map_err(PrivateFileError::Read)
}

/// What is kept for one provider. `Debug` shows no secret.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stored {
    /// The MCP endpoint the tokens were issued for.
    pub resource: String,
    /// The authorization server that issued them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// A client id this gateway registered for itself (dynamic registration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// That registration's secret, if the server issued one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// That registration's token endpoint authentication method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_auth: Option<String>,
    /// The resource indicator (RFC 8707) the tokens were asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_indicator: Option<String>,
    /// The access token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_token: Option<String>,
    /// The refresh token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires, in seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scope granted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl std::fmt::Debug for Stored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = |secret: &Option<String>| secret.as_ref().map(|_| "<redacted>");
        f.debug_struct("Stored")
            .field("resource", &self.resource)
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &shown(&self.client_secret))
            .field("client_auth", &self.client_auth)
            .field("resource_indicator", &self.resource_indicator)
            .field("access_token", &shown(&self.access_token))
            .field("refresh_token", &shown(&self.refresh_token))
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .finish()
    }
}

/// The token files of a gateway: `<dir>/<provider>.json`.
#[derive(Debug, Clone)]
pub struct TokenStore {
    dir: PathBuf,
}

impl TokenStore {
    /// Tokens kept in `dir` (created when first written).
    #[must_use]
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The file of `provider`.
    #[must_use]
    pub fn path(&self, provider: &str) -> PathBuf {
        self.dir.join(format!("{provider}.json"))
    }

    /// What is kept for `provider` at `resource`; `None` when nothing is, or it was for
    /// another endpoint.
    ///
    /// # Errors
    ///
    /// [`AuthError::Storage`] when the file exists but cannot be read, is too large, is
    /// not a token file, or can be read by others than its owner.
    pub fn load(&self, provider: &str, resource: &str) -> Result<Option<Stored>, AuthError> {
        let path = self.path(provider);
        let refuse = |why: String| AuthError::Storage(format!("{provider}: token file {}: {why}", path.display()));
        let unread = |e: PrivateFileError| refuse(wasmgate_core::report(&e));
        let Some(text) = read_private(&path, MAX_FILE).map_err(unread)? else { return Ok(None) };
        let stored: Stored = serde_json::from_slice(&text).map_err(|e| refuse(format!("not a token file: {e}")))?;
        Ok((stored.resource == resource).then_some(stored))
    }

    /// Replaces what is kept for `provider`.
    ///
    /// # Errors
    ///
    /// [`AuthError::Storage`] when the directory or file cannot be written.
    pub fn save(&self, provider: &str, stored: &Stored) -> Result<(), AuthError> {
        let path = self.path(provider);
        let refuse = |e: std::io::Error| AuthError::Storage(format!("{provider}: token file {}: {e}", path.display()));
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.dir).map_err(refuse)?;
        let temp = self.dir.join(format!(".{provider}.json.tmp"));
        let _ = std::fs::remove_file(&temp);
        let mut file =
            std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temp).map_err(refuse)?;
        let text = serde_json::to_vec_pretty(stored).map_err(|e| refuse(std::io::Error::other(e)))?;
        file.write_all(&text).and_then(|()| file.sync_all()).map_err(refuse)?;
        std::fs::rename(&temp, &path).map_err(refuse)?;
        Ok(())
    }

    /// Forgets `provider`'s tokens (a logout).
    ///
    /// # Errors
    ///
    /// [`AuthError::Storage`] when the file exists and cannot be removed.
    pub fn remove(&self, provider: &str) -> Result<bool, AuthError> {
        remove_if_present(&self.path(provider)).map_err(|e| AuthError::Storage(format!("{provider}: token file: {e}")))
    }
}

fn remove_if_present(path: &Path) -> std::io::Result<bool> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn tokens_are_private_bound_to_their_endpoint_and_never_shown() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::new(dir.path().join("oauth"));
        assert_eq!(store.load("p", "https://r/mcp").unwrap(), None);
        let stored = Stored {
            resource: "https://r/mcp".into(),
            access_token: Some("SECRET-A".into()),
            refresh_token: Some("SECRET-R".into()),
            ..Stored::default()
        };
        store.save("p", &stored).unwrap();
        let mode = std::fs::metadata(store.path("p")).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = std::fs::metadata(dir.path().join("oauth")).unwrap().permissions().mode() & 0o777;
        assert_eq!(dir_mode, 0o700);
        assert_eq!(store.load("p", "https://r/mcp").unwrap(), Some(stored.clone()));
        assert_eq!(store.load("p", "https://other/mcp").unwrap(), None);
        assert!(!format!("{stored:?}").contains("SECRET"));
        // A file others can read is refused, with the fix.
        std::fs::set_permissions(store.path("p"), std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = store.load("p", "https://r/mcp").unwrap_err().to_string();
        assert!(e.contains("chmod 600"), "{e}");
        assert!(store.remove("p").unwrap());
        assert!(!store.remove("p").unwrap());
        // Garbage is an error, not a panic.
        std::fs::write(store.path("q"), "{").unwrap();
        std::fs::set_permissions(store.path("q"), std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(store.load("q", "x").is_err());
    }
}
