//! The trust boundary's pure parts: what the policy says about a call, which tool definitions have
//! been reviewed, what name the agent sees, and how untrusted text is framed and checked.
//!
//! Nothing here does network I/O, spawns anything or needs async; the only file I/O is reading the
//! policy and reading and atomically writing the lock file. The adapter and agent loop call these
//! functions in the call pipeline; everything here is deterministic except the framing boundary,
//! which is random by design.
//!
//! # Layout
//!
//! * Policy file ([`Policy`], docs/POLICY.md): `file` (private) mirrors the TOML and rejects
//!   unknown keys; [`policy`] validates it and holds [`Policy::decide`]; [`provider`] is one
//!   provider's settings ([`ProviderPolicy`]); [`constraint`] checks arguments; [`glob`] selects
//!   formatters; [`verdict`] is the answer ([`Verdict`], [`Decision`]); [`error`] locates mistakes
//!   by line and key ([`PolicyError`]).
//! * Review and pinning: [`canonical`] hashes a tool definition ([`definition_hash`]); [`lock`]
//!   is the lock file ([`Lock`], [`ReviewState`]); [`diff`] says what changed; [`definition`]
//!   cleans a definition's text for the model and finds the parts that read like instructions.
//! * Names: [`name`] maps `(provider, tool)` into MCP's tool name rules injectively
//!   ([`prefixed_name`], [`split_prefixed`]).
//! * Injection: [`sanitize`](mod@sanitize) strips control, escape and invisible characters; [`frame`](mod@frame) wraps a
//!   result in a randomly delimited block ([`frame()`]); [`detect`](mod@detect) flags
//!   instruction-like content ([`detect()`]), after [`fold`] undoes cheap
//!   look-alike tricks; [`secrets`] finds credentials in arguments and results.

pub mod budget;
pub mod callers;
pub mod canonical;
pub mod capped;
pub mod constraint;
pub mod definition;
pub mod detect;
pub mod diff;
pub mod error;
mod file;
pub mod fold;
pub mod frame;
pub mod glob;
pub mod lock;
pub mod name;
pub mod policy;
pub mod provider;
pub mod sanitize;
pub mod secrets;
pub mod verdict;

pub use budget::{Budget, Each, Per};
pub use callers::{CallerMatch, CallerRule};
pub use canonical::{canonical_json, definition_hash};
pub use constraint::{Constraint, PatternError, Rule, Violation};
pub use detect::{Flag, FlagKind, detect};
pub use diff::FieldChange;
pub use error::PolicyError;
pub use frame::{FrameError, Framed, frame};
pub use glob::Glob;
pub use lock::{CodeChange, CodePin, CodeState, Lock, LockError, ReviewState};
pub use name::{NameError, exposed_name, prefixed_name, split_prefixed};
pub use policy::Policy;
pub use provider::{
    ConfinementLevel, DEFAULT_MEDIA_MAX_BYTES, DEFAULT_MEDIA_TYPES, DEFAULT_SAMPLING_MAX_TOKENS, FetchedCode,
    FormatterRule, InjectionAction, LimitOverrides, MediaMode, ProviderPolicy, ToolRule, climbs,
};
pub use sanitize::{Sanitized, sanitize};
pub use secrets::SecretsAction;
pub use verdict::{Decision, Verdict};
