//! `[serve.traces]`: the spans of every call (see `wasmgate_guard::trace`) sent to an
//! OpenTelemetry collector over OTLP/HTTP. Off unless configured; then only the spans of
//! the `wasmgate::trace` target are exported (no log event becomes a span event), and
//! they carry names, never an argument or a result.

use std::time::Duration;

use anyhow::Context as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::filter_fn;
use wasmgate_gateway::{TracesConfig, TracesProtocol};

use crate::logs::BoxedLayer;

/// How long one export may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The exporter of a gateway's spans; flushed by [`Traces::shutdown`].
pub struct Traces {
    provider: SdkTracerProvider,
}

impl Traces {
    /// The layer that sends spans to `config`'s collector, and what flushes it. Its HTTP
    /// client blocks, so it is made (and later dropped) off the async runtime.
    ///
    /// # Errors
    ///
    /// When the exporter cannot be built (an endpoint that is not a URL, say).
    pub async fn start(config: TracesConfig) -> anyhow::Result<(Traces, BoxedLayer)> {
        tokio::task::spawn_blocking(move || build(&config)).await.context("the traces exporter")?
    }

    /// Sends what is buffered and stops.
    pub async fn shutdown(self) {
        let provider = self.provider;
        let done = tokio::task::spawn_blocking(move || provider.shutdown()).await;
        if let Ok(Err(e)) = done {
            tracing::warn!(error = %e, "traces: the last spans could not be sent");
        }
    }
}

fn build(config: &TracesConfig) -> anyhow::Result<(Traces, BoxedLayer)> {
    let protocol = match config.protocol {
        TracesProtocol::Protobuf => Protocol::HttpBinary,
        TracesProtocol::Json => Protocol::HttpJson,
    };
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(&config.endpoint)
        .with_protocol(protocol)
        .with_timeout(EXPORT_TIMEOUT)
        .build()
        .with_context(|| format!("[serve.traces] endpoint {:?}", config.endpoint))?;
    let resource = Resource::builder().with_service_name("wasmgate").build();
    let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build();
    let tracer = provider.tracer("wasmgate");
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(filter_fn(|metadata| metadata.is_span() && metadata.target() == wasmgate_guard::TRACE_TARGET))
        .boxed();
    Ok((Traces { provider }, layer))
}
