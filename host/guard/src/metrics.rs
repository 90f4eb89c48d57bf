//! What the guard counts for `/metrics`, through the `metrics` facade (nothing is kept
//! unless the host installs a recorder). Labels are names only (provider, tool, verdict,
//! outcome, stage): never an argument or a result.
//!
//! * `wasmgate_calls_total{provider, tool, verdict, outcome}`: calls by how they ended
//!   (`finished`, `withheld`, `failed`, `cancelled`, `denied`, `limited`, `refused`);
//! * `wasmgate_injection_flags_total{provider}`: results and texts flagged;
//! * `wasmgate_stage_duration_seconds{stage}`: `policy`, `approval`, `audit` (the
//!   write-ahead records made durable), `call` (the provider, formatting included) and
//!   `screen`.

use std::time::Instant;

use wasmgate_audit::Event;

/// The stage metric's name (the adapter records `format` under it too).
pub const STAGE: &str = "wasmgate_stage_duration_seconds";

/// Records how long `stage` took since `since`.
pub(crate) fn stage(stage: &'static str, since: Instant) {
    metrics::histogram!(STAGE, "stage" => stage).record(since.elapsed());
}

/// Counts a call of `provider`'s `tool` that got `verdict` and ended in `outcome`.
pub(crate) fn call(provider: &str, tool: &str, verdict: &'static str, outcome: &'static str) {
    metrics::counter!(
        "wasmgate_calls_total",
        "provider" => provider.to_owned(),
        "tool" => tool.to_owned(),
        "verdict" => verdict,
        "outcome" => outcome
    )
    .increment(1);
}

/// Counts `event`'s injection flags, if it has any, for `provider`.
pub(crate) fn flags(provider: &str, event: &Event) {
    let flagged = match event {
        Event::Finished { flags, .. } | Event::Withheld { flags, .. } => !flags.is_empty(),
        _ => false,
    };
    if flagged {
        metrics::counter!("wasmgate_injection_flags_total", "provider" => provider.to_owned()).increment(1);
    }
}

/// The outcome label of a call's last record.
pub(crate) fn outcome(event: &Event) -> &'static str {
    match event {
        Event::Finished { .. } => "finished",
        Event::Withheld { .. } => "withheld",
        Event::Cancelled { .. } => "cancelled",
        _ => "failed",
    }
}
