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
//! The modules are private; what a user names is re-exported here.
//!
//! * Policy file ([`Policy`], docs/POLICY.md): `file` mirrors the TOML and rejects
//!   unknown keys; `policy` validates it and holds [`Policy::decide`]; `provider` is one
//!   provider's settings ([`ProviderPolicy`]); `constraint` checks arguments
//!   ([`Constraint`], [`Violation`]); `glob` selects formatters ([`Glob`]); `verdict` is
//!   the answer ([`Verdict`], [`Decision`]); `error` locates mistakes by line and key
//!   ([`PolicyError`]); `capped` reads a file no larger than a bound.
//! * Data flow: `flow` is the rules of what a call may carry of what untrusted results
//!   said ([`FlowRules`], [`Policy::flow_decision`]).
//! * Callers and budgets: `callers` matches a caller's facts ([`CallerRule`]); `budget`
//!   is one rate limit or call budget ([`Budget`]).
//! * Review and pinning: `canonical` hashes a tool definition ([`definition_hash`]); `lock`
//!   is the lock file ([`Lock`], [`ReviewState`]); `diff` says what changed ([`Diff`]);
//!   `definition` cleans a definition's text for the model and finds the parts that read
//!   like instructions ([`clean_schema`], [`poisoned`]).
//! * Names: `name` maps `(provider, tool)` into MCP's tool name rules injectively
//!   ([`prefixed_name`], [`split_prefixed`]).
//! * Injection: `sanitize` strips control, escape and invisible characters ([`sanitize()`]);
//!   `frame` wraps a result in a randomly delimited block ([`frame()`]); `detect` flags
//!   instruction-like content ([`detect()`]), after `fold` undoes cheap look-alike tricks,
//!   and says where each finding is and the passage around it ([`locate`]); `values`
//!   finds the values a text carries (URLs, addresses, numbers, paths: [`extract`]) with
//!   the hand-written scanner `scan`;
//!   `secrets` finds credentials in arguments and results ([`find_secrets`]).

mod budget;
mod callers;
mod canonical;
mod capped;
mod constraint;
mod definition;
mod detect;
mod diff;
mod error;
mod file;
mod flow;
mod fold;
mod frame;
#[cfg(test)]
mod generated;
mod glob;
mod lock;
mod name;
mod policy;
mod provider;
mod sanitize;
mod scan;
mod secrets;
mod values;
mod verdict;

pub use budget::{Budget, Each, Per};
pub use callers::{CallerMatch, CallerRule};
pub use canonical::{canonical_json, definition_hash};
pub use capped::read_capped_text;
pub use constraint::{Constraint, PatternError, Rule, Violation};
pub use definition::{SchemaError, clean_schema, clean_text, poisoned};
pub use detect::{Flag, FlagKind, Located, MAX_LOCATED_PER_RULE, detect, locate, passage};
pub use diff::{Diff, FieldChange};
pub use error::{MAX_POLICY_BYTES, PolicyError, Source};
pub use flow::{ArgumentFlow, FlowAction, FlowDecision, FlowRule, FlowRules, Seen, annotated_sink};
pub use frame::{FrameError, Framed, frame};
pub use glob::Glob;
pub use lock::{CodeChange, CodePin, CodeState, Lock, LockError, MAX_LOCK_BYTES, ReviewState};
pub use name::{NameError, exposed_name, is_valid_tool_name, prefixed_name, split_prefixed, validate_provider};
pub use policy::{ConsoleRole, DEFAULT_APPROVAL_DEADLINE_SECONDS, MAX_APPROVAL_DEADLINE_SECONDS, Policy};
pub use provider::{
    ConfinementLevel, DEFAULT_MEDIA_MAX_BYTES, DEFAULT_MEDIA_TYPES, DEFAULT_SAMPLING_MAX_TOKENS, FetchedCode,
    FormatterRule, InjectionAction, LimitOverrides, MediaMode, ProviderPolicy, ToolRule, climbs,
};
pub use sanitize::{Sanitized, sanitize};
pub use secrets::{Secret, SecretsAction, find_secrets, find_secrets_in_text, redact_secrets};
pub use values::{
    Found, MAX_QUOTED_CHARS, MAX_VALUE_BYTES, MAX_VALUES_PER_TEXT, MIN_TEXT_CHARS, Prose, Shown, ValueKind, extract,
    in_prose, passage_readings, quoted, short_text_value, strings, text_value, visit,
};
pub use verdict::{Decision, Verdict};
