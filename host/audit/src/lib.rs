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
//! The modules are private; what a user names is re-exported here.
//!
//! * `log`: [`AuditLog`] (open, continue, submit, append, close) and its [`Options`].
//! * `event`: what a record says ([`Entry`], [`Event`]) and the size bounds on it.
//! * `redact`: argument redaction ([`Redaction`]).
//! * `chain`: the genesis hash, how a record line is laid out and hashed
//!   ([`genesis_hash`], [`line_hash`]), the chain's key ([`ChainKey`]) and anchors
//!   ([`Anchor`]).
//! * `writer`: the single writer thread: group commit, fsync, stalls on a full disk,
//!   poisoning.
//! * `segment`: the file records are appended to, cut back after a failed write, and
//!   rotated by size (`PATH.N`, one chain across the set).
//! * `durability`: [`Durability`], what a returned append promises.
//! * `pending`: [`Pending`], waiting for durability (blocking, or as a `Future`).
//! * `tail`: continuing an existing log and cutting off a torn last record (no record
//!   longer than [`MAX_LINE_BYTES`]).
//! * `index`: reading a log a page at a time, newest first, with filters, verifying
//!   what was appended since the last page ([`Index`]), for the web console.
//! * `verify`: checking a log and naming its first bad record ([`verify()`]), and
//!   whether a log holds an anchored record ([`holds`]).
//! * `clock`: where record times come from ([`Clock`]).
//! * `error`: [`AuditError`]; every variant means "refuse the call".

mod chain;
mod clock;
mod durability;
mod error;
mod event;
mod index;
mod log;
mod pending;
mod redact;
mod segment;
mod tail;
mod verify;
mod writer;

#[cfg(test)]
mod group_commit_tests;

pub use chain::{Anchor, ChainKey, KeyError, NotAnAnchor, genesis_hash, line_hash};
pub use clock::{Clock, FixedClock, SystemClock};
pub use durability::Durability;
pub use error::AuditError;
pub use event::{CarriedValue, Entry, Event, MAX_CARRIED_VALUES};
pub use index::{Filter, Index, MAX_INDEXED, MAX_PAGE, Page, Verified};
pub use log::{AuditLog, Options};
pub use pending::Pending;
pub use redact::Redaction;
pub use tail::MAX_LINE_BYTES;
pub use verify::{
    Options as VerifyOptions, Problem, Summary, Tail, VerifyError, holds, verify, verify_options, verify_with,
};
