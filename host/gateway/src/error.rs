//! [`StartError`]: why the gateway did not start. Each names what failed and what to do.

use wasmgate_adapter::AdapterError;
use wasmgate_policy::{LockError, PolicyError};

/// Start-up failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The configuration or policy file is wrong.
    #[error(transparent)]
    File(#[from] PolicyError),
    /// The lock file of reviewed definitions is unusable.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The audit log cannot be opened: no log, no calls.
    #[error("cannot open the audit log: {0}")]
    Audit(String),
    /// The sandbox or a built-in component could not be set up.
    #[error("cannot set up the sandbox: {0}")]
    Sandbox(String),
    /// A provider could not be started or reached.
    #[error("cannot start provider {provider:?}: {reason}")]
    Provider {
        /// The provider's name.
        provider: String,
        /// What went wrong.
        reason: String,
    },
    /// A provider's tools or formatters could not be set up.
    #[error(transparent)]
    Adapter(#[from] AdapterError),
}
