//! What can go wrong while getting a token. Messages name the provider and say what to do;
//! none carries a token or a secret.

/// An OAuth failure.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// The settings cannot work (a missing variable, an unreadable key, a bad URL).
    #[error("{0}")]
    Config(String),
    /// Discovery found no usable metadata, or metadata that must be refused.
    #[error("{0}")]
    Discovery(String),
    /// The provider needs a person to log in, and none is at hand.
    #[error("{provider}: not logged in, or the login has expired: run `wasmgate login {provider}`")]
    LoginRequired {
        /// The provider's name.
        provider: String,
    },
    /// The authorization server refused, or answered something that is not a token.
    #[error("{0}")]
    Token(String),
    /// The authorization response failed a check (state, issuer) or carried an error.
    #[error("{0}")]
    Authorization(String),
    /// Asked for more scope too many times in a row.
    #[error("{provider}: the server still wants more scope after {attempts} step-up attempts")]
    StepUpLimit {
        /// The provider's name.
        provider: String,
        /// How many times the client asked.
        attempts: u32,
    },
    /// The token file could not be read or written.
    #[error("{0}")]
    Storage(String),
}
