//! The spans of a call, for `[serve.traces]`: `wasmgate.call` (provider, tool, caller,
//! verdict, outcome) and, inside it, one per stage: `policy`, `approval`, `audit` (the
//! write-ahead records made durable), `upstream` (the provider, formatting included),
//! `format` (the adapter's) and `screen`. They carry names, never an argument or a
//! result. All are at INFO under [`TRACE_TARGET`], which the log leaves out by default, so
//! they cost nothing unless a subscriber asks for them.

use tracing::Span;

/// The target of every span here: what a traces exporter keeps.
pub const TRACE_TARGET: &str = "wasmgate::trace";

/// The span of one call of `provider`'s `tool` by `caller`.
pub(crate) fn call(provider: &str, tool: &str, caller: Option<&str>) -> Span {
    tracing::info_span!(
        target: TRACE_TARGET,
        "wasmgate.call",
        provider,
        tool,
        caller,
        verdict = tracing::field::Empty,
        outcome = tracing::field::Empty
    )
}

/// The span of the policy's decision.
pub(crate) fn policy() -> Span {
    tracing::info_span!(target: TRACE_TARGET, "policy")
}

/// The span of an approver's answer.
pub(crate) fn approval() -> Span {
    tracing::info_span!(target: TRACE_TARGET, "approval")
}

/// The span of the write-ahead records.
pub(crate) fn audit() -> Span {
    tracing::info_span!(target: TRACE_TARGET, "audit")
}

/// The span of the provider's work.
pub(crate) fn upstream() -> Span {
    tracing::info_span!(target: TRACE_TARGET, "upstream")
}

/// The span of the screening of a result.
pub(crate) fn screen() -> Span {
    tracing::info_span!(target: TRACE_TARGET, "screen")
}
