//! [`AuditError`]: why a record was not accepted. Every variant means "refuse the call": the
//! messages say what happened and what the operator can do about it.

use std::path::PathBuf;
use thiserror::Error;

/// Why the audit log refused a record (and so the call must be refused).
#[derive(Debug, Clone, Error)]
#[non_exhaustive]
pub enum AuditError {
    /// The log could not be opened or created.
    #[error(
        "cannot open audit log {path}: {message}; calls are refused until it can be written: check that the \
         directory exists and is writable by this user and the disk is not full, or configure another audit path"
    )]
    Open {
        /// The log file.
        path: PathBuf,
        /// What the OS said.
        message: String,
    },
    /// Another process (or another `AuditLog` in this one) has the log open.
    #[error(
        "audit log {path} is in use by another wasmgate process; two writers would break the hash chain, so \
         stop the other one or configure another audit path"
    )]
    InUse {
        /// The log file.
        path: PathBuf,
    },
    /// The last complete record of an existing log cannot be read, so the chain cannot continue.
    #[error(
        "audit log {path} ends in a record that cannot be read ({reason}); run `wasmgate audit verify {path}` \
         and move the damaged file aside to start a new log"
    )]
    Corrupt {
        /// The log file.
        path: PathBuf,
        /// What is wrong with the record.
        reason: String,
    },
    /// An existing log was written under another chain (another key, or none).
    #[error("cannot continue audit log {path}: {reason}")]
    Chain {
        /// The log file.
        path: PathBuf,
        /// What does not match, and what to do.
        reason: String,
    },
    /// Syncing failed, or a failed write could not be cut back. The log is closed for the
    /// rest of this run.
    #[error(
        "cannot write audit log {path}: {message}; calls are refused: free disk space or fix the file system, \
         then restart (after a failed fsync, or a write that could not be cut back, the log accepts no more \
         records)"
    )]
    Write {
        /// The log file.
        path: PathBuf,
        /// What the OS said.
        message: String,
    },
    /// Writing failed (a full disk, say) and nothing of the write stayed: the record was
    /// not written and its call is refused. The log goes on by itself once a write
    /// succeeds again.
    #[error(
        "cannot write audit log {path}: {message}; calls are refused until it can be written again: free disk \
         space (the log goes on by itself, and records nothing it has not acknowledged)"
    )]
    Stalled {
        /// The log file.
        path: PathBuf,
        /// What the OS said.
        message: String,
    },
    /// The log closed while it could not be written: records it had kept to write once it
    /// could were not written.
    #[error(
        "audit log {path} closed while it could not be written ({message}): {unwritten} records it had not \
         written yet are not in it, and no warning record says so there; free disk space before stopping \
         the gateway"
    )]
    ClosedStalled {
        /// The log file.
        path: PathBuf,
        /// What the OS said when the writes began to fail.
        message: String,
        /// The records not written (kept ones, and those refused meanwhile).
        unwritten: u64,
    },
    /// An earlier write or fsync failed, so the log refuses records until restarted.
    #[error(
        "audit log {path} stopped accepting records after an earlier failure ({first}); calls are refused until restart"
    )]
    Poisoned {
        /// The log file.
        path: PathBuf,
        /// The first failure.
        first: String,
    },
    /// The log was closed.
    #[error("audit log {path} is closed")]
    Closed {
        /// The log file.
        path: PathBuf,
    },
}
