//! The audit log: JSON lines, one record per call event, hash-chained, written ahead of the call
//! and durable before the call runs. If the log cannot be written, calls are refused.
//!
//! The call pipeline uses it like this: submit `requested` and `started` together and wait (one
//! fsync, shared with any concurrent calls) before running the call; append `finished`, `failed`,
//! `cancelled` or `withheld` when it ends. docs/AUDIT.md describes the record format, the chain and
//! what each [`Durability`] setting risks.
//!
//! # Layout
//!
//! * [`log`]: [`AuditLog`] (open, continue, submit, append, close) and its [`Options`].
//! * [`event`]: what a record says ([`Entry`], [`Event`]) and the size bounds on it.
//! * [`redact`]: argument redaction ([`Redaction`]).
//! * [`chain`]: the genesis hash and how a record line is laid out and hashed.
//! * `writer` (private): the single writer thread: group commit, fsync, poisoning.
//! * [`durability`]: [`Durability`], what a returned append promises.
//! * [`pending`]: [`Pending`], waiting for durability (blocking, or as a `Future`).
//! * [`tail`]: continuing an existing log and cutting off a torn last record.
//! * [`verify`](mod@verify): checking a log and naming its first bad record ([`verify()`]).
//! * [`clock`]: where record times come from ([`Clock`]).
//! * [`error`]: [`AuditError`]; every variant means "refuse the call".

pub mod chain;
pub mod clock;
pub mod durability;
pub mod error;
pub mod event;
pub mod log;
pub mod pending;
pub mod redact;
pub mod tail;
pub mod verify;
mod writer;

#[cfg(test)]
mod group_commit_tests;

pub use chain::{Anchor, ChainKey, KeyError, NotAnAnchor};
pub use clock::{Clock, FixedClock, SystemClock};
pub use durability::Durability;
pub use error::AuditError;
pub use event::{Entry, Event};
pub use log::{AuditLog, Options};
pub use pending::Pending;
pub use redact::Redaction;
pub use verify::{
    Options as VerifyOptions, Problem, Summary, Tail, VerifyError, holds, verify, verify_options, verify_with,
};
