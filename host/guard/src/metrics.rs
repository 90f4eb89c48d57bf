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

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use metrics::Counter;

use wasmgate_audit::Event;

/// The stage metric's name (the adapter records `format` under it too).
pub const STAGE: &str = "wasmgate_stage_duration_seconds";

/// Records how long `stage` took since `since`.
pub(crate) fn stage(stage: &'static str, since: Instant) {
    metrics::histogram!(STAGE, "stage" => stage).record(since.elapsed());
}

/// The `wasmgate_calls_total` counters of one tool, by verdict and outcome: each is
/// registered once, on its first call, so a call costs an increment and not the
/// allocation and lookup of its labels.
#[derive(Default)]
pub(crate) struct CallCounters {
    counters: Mutex<HashMap<(&'static str, &'static str), Counter>>,
}

impl CallCounters {
    /// Counts a call of `provider`'s `tool` that got `verdict` and ended in `outcome`.
    pub(crate) fn count(&self, provider: &str, tool: &str, verdict: &'static str, outcome: &'static str) {
        let mut counters = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        let counter = counters.entry((verdict, outcome)).or_insert_with(|| {
            metrics::counter!(
                "wasmgate_calls_total",
                "provider" => provider.to_owned(),
                "tool" => tool.to_owned(),
                "verdict" => verdict,
                "outcome" => outcome
            )
        });
        counter.increment(1);
    }
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
