//! `/metrics` of `wasmgate serve --http`: the Prometheus recorder behind the `metrics`
//! facade the libraries count through, installed before any provider starts, and the
//! render that answers a scrape. Nothing is counted over stdio or with
//! `[serve.metrics] enabled = false`: no recorder, and the facade's calls do nothing.
//!
//! Every metric's labels are names (provider, tool, verdict, outcome, stage, kind),
//! never an argument or a result.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use wasmgate_gateway::Gateway;

/// Histogram buckets, in seconds: 50 µs to 30 s.
const BUCKETS: &[f64] = &[
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
    10.0, 30.0,
];

/// How often the recorder's histograms are drained into their buckets.
const UPKEEP: Duration = Duration::from_secs(5);

/// Installs the Prometheus recorder for the process, with the metrics' help texts.
///
/// # Errors
///
/// When a recorder is installed already, or the buckets are refused.
pub fn install() -> anyhow::Result<PrometheusHandle> {
    let handle = PrometheusBuilder::new()
        .set_buckets(BUCKETS)
        .context("the metrics' histogram buckets")?
        .install_recorder()
        .context("cannot install the metrics recorder")?;
    describe();
    let upkeep = handle.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(UPKEEP);
        loop {
            tick.tick().await;
            upkeep.run_upkeep();
        }
    });
    Ok(handle)
}

fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!("wasmgate_calls_total", "Tool calls, by provider, tool, verdict and outcome");
    describe_counter!("wasmgate_injection_flags_total", "Results and texts flagged as possible prompt injection");
    describe_counter!("wasmgate_sandbox_traps_total", "Guests stopped by the sandbox, by what stopped them");
    describe_counter!("wasmgate_reloads_total", "Reloads of the rules, by outcome");
    describe_histogram!(
        "wasmgate_stage_duration_seconds",
        Unit::Seconds,
        "Time spent in each stage of a call (policy, approval, audit, call, format, screen)"
    );
    describe_histogram!("wasmgate_audit_fsync_duration_seconds", Unit::Seconds, "Time each audit log fsync took");
    describe_gauge!("wasmgate_provider_up", "1 when the provider is served, 0 when it is down or withheld");
}

/// The render of a scrape: each provider's state, then every metric.
pub fn render(handle: PrometheusHandle, gateway: Arc<Gateway>) -> Arc<dyn Fn() -> String + Send + Sync> {
    Arc::new(move || {
        for provider in &gateway.providers() {
            let up = if gateway.provider_trouble(&provider.name).is_none() { 1.0 } else { 0.0 };
            metrics::gauge!("wasmgate_provider_up", "provider" => provider.name.clone()).set(up);
        }
        handle.render()
    })
}
