//! [`StartError`]: why the gateway did not start. Each names what failed and keeps the
//! underlying error as its source, so a report (`{:#}` of anyhow, or walking
//! `source()`) reads `cannot start provider "calendar": <why>` once, with every cause.

use std::path::PathBuf;

use wasmgate_adapter::AdapterError;
use wasmgate_audit::{AuditError, KeyError};
use wasmgate_policy::{LockError, PolicyError};
use wasmgate_sandbox::LoadError;

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
    /// The audit log's directory cannot be made: no log, no calls.
    #[error("cannot create the audit log's directory {}", path.display())]
    AuditDir {
        /// The directory.
        path: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    /// The audit chain's key file is unusable: no log, no calls.
    #[error("cannot use the audit key file")]
    AuditKey(#[source] KeyError),
    /// The audit log cannot be opened: no log, no calls.
    #[error("cannot open the audit log")]
    Audit(#[source] AuditError),
    /// The sandbox or a built-in component could not be set up.
    #[error("cannot set up the sandbox")]
    Sandbox(#[source] LoadError),
    /// A provider could not be started or reached.
    #[error("cannot start provider {provider:?}")]
    Provider {
        /// The provider's name.
        provider: String,
        /// What went wrong.
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// Two providers show a tool or prompt under the same name (`prefix = false`).
    #[error(
        "{first} and {second} would both be shown as the {what} {name:?}: set `prefix = true` (the default) on one \
         of the two providers in wasmgate.toml, or remove one of them"
    )]
    Collision {
        /// `tool` or `prompt`.
        what: String,
        /// The name both would be shown under.
        name: String,
        /// The first provider and its own name for it.
        first: String,
        /// The second.
        second: String,
    },
    /// A provider's tools or formatters could not be set up.
    #[error(transparent)]
    Adapter(#[from] AdapterError),
    /// `[cluster]`: the shared store or the approval key cannot be used. A replica does
    /// not start without them: it could not check its audit log against its anchor, and
    /// everything it shares would be refused.
    #[error("cannot join the cluster: {what}")]
    Cluster {
        /// What cannot be used, and what to do.
        what: String,
        /// Why, when something failed.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    },
    /// `[cluster]`: the shared store holds a later anchor for this replica than its audit
    /// log's last record, or another record at the same place.
    #[error(
        "the audit log {} ends at seq {log}, but the shared store anchored seq {stored} for replica {replica}: records \
         were removed from the log or it was replaced. Check it with `wasmgate audit verify --store URL {}`; if the \
         log was moved on purpose, give this replica a new name",
        path.display(), path.display()
    )]
    AuditBehind {
        /// The log.
        path: PathBuf,
        /// The replica.
        replica: String,
        /// The log's last record.
        log: u64,
        /// The anchored record.
        stored: u64,
    },
    /// `[cluster]`: the audit log reaches the record the shared store anchored for this
    /// replica, but holds another record there.
    #[error(
        "the audit log {} does not hold the record the shared store anchored for replica {replica} (seq {seq}): \
         the log was rewritten or replaced. Check it with `wasmgate audit verify --store URL {}`",
        path.display(), path.display()
    )]
    AuditRewritten {
        /// The log.
        path: PathBuf,
        /// The replica.
        replica: String,
        /// The anchored record.
        seq: u64,
    },
}

impl StartError {
    /// The error with its causes, on one line (a reload's refusal, a log line).
    #[must_use]
    pub fn one_line(&self) -> String {
        wasmgate_core::report(self).replace('\n', " ")
    }

    /// The replica cannot join its cluster: `what`, and why (`source`) when something failed.
    pub(crate) fn cluster(
        what: impl Into<String>,
        source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        Self::Cluster { what: what.into(), source }
    }

    /// Provider `provider` could not be started, because of `source`.
    pub(crate) fn provider(
        provider: &str,
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        Self::Provider { provider: provider.to_owned(), source: source.into() }
    }
}
