//! [`SecretSource`]: where a secret's value comes from (a client secret, a private key,
//! an extra header of an HTTP provider): the value itself, or an environment variable
//! of the gateway, read when it is needed. `Debug` never shows a value.

/// Where a secret's value comes from.
#[derive(Clone)]
pub enum SecretSource {
    /// The value itself.
    Value(String),
    /// The name of an environment variable holding it.
    FromEnv(String),
}

/// The environment variable a secret comes from is not set (its name).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the variable {0} is not set")]
pub struct UnsetVariable(pub String);

impl SecretSource {
    /// The value now.
    ///
    /// # Errors
    ///
    /// [`UnsetVariable`] naming the variable, when it is not set.
    pub fn read(&self) -> Result<String, UnsetVariable> {
        match self {
            Self::Value(value) => Ok(value.clone()),
            Self::FromEnv(var) => std::env::var(var).map_err(|_| UnsetVariable(var.clone())),
        }
    }
}

impl std::fmt::Debug for SecretSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Value(_) => f.write_str("Value(<redacted>)"),
            Self::FromEnv(var) => f.debug_tuple("FromEnv").field(var).finish(),
        }
    }
}
