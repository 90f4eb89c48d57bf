//! Required confinement refuses to start a server the kernel cannot confine, naming the
//! missing mechanism; best effort starts it with a loud warning and a report of what is
//! missing. The unavailable mechanism is simulated by asking for Landlock ABI 10, newer
//! than this kernel (ABI 7) offers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod confined;
mod logs;

use confined::{fixtures, for_python, hostile, python};
use wasmgate_client::{StdioConfig, StdioTransport, TransportError};
use wasmgate_confine::{Confinement, Enforcement, LandlockAbi, Mechanism};

fn hostile_config(workdir: &std::path::Path, confinement: Option<Confinement>) -> StdioConfig {
    StdioConfig::new("hostile", python(), workdir).arg(fixtures().join("hostile_server.py")).confinement(confinement)
}

fn needs_abi_10() -> Confinement {
    Confinement { min_landlock_abi: LandlockAbi::V10, ..for_python(&python(), &fixtures()) }
}

#[tokio::test]
async fn required_confinement_refuses_to_start_and_names_the_missing_mechanism() {
    let workdir = tempfile::tempdir().unwrap();
    let error = StdioTransport::spawn(&hostile_config(workdir.path(), Some(needs_abi_10()))).unwrap_err();
    let TransportError::Confinement(message) = &error else { panic!("expected a confinement error, got {error}") };
    assert!(message.contains(&Mechanism::LandlockFilesystem.to_string()), "{message}");
    assert!(message.contains("hostile"), "the error names the server: {message}");
}

#[tokio::test]
async fn best_effort_confinement_starts_with_a_warning_and_reports_what_is_missing() {
    let captured = logs::Captured::default();
    let subscriber = captured.subscriber();
    let workdir = tempfile::tempdir().unwrap();
    let confinement = Confinement { enforcement: Enforcement::BestEffort, ..needs_abi_10() };
    let config = hostile_config(workdir.path(), Some(confinement));
    let transport = tracing::subscriber::with_default(subscriber, || StdioTransport::spawn(&config)).unwrap();
    let report = transport.confinement().unwrap().clone();
    assert_eq!(report.missing(), vec![Mechanism::LandlockMinimumAbi], "{report}");
    assert!(report.landlock_abi >= 4 && report.no_new_privs && report.resource_limits, "{report}");
    let logs = captured.text();
    assert!(logs.contains("WARN") && logs.contains("NOT FULLY CONFINED") && logs.contains("hostile"), "{logs}");
    let client = wasmgate_client::McpClient::connect("hostile", transport, Default::default()).await.unwrap();
    client.close().await;
}

#[tokio::test]
async fn a_default_server_reports_every_mechanism_in_place() {
    let server = hostile(|c| c).await;
    let report = server.report.clone().unwrap();
    assert!(report.is_complete(), "{report}");
    assert_eq!(report.enforcement, Enforcement::Required);
    assert!(report.landlock_abi >= 6 && report.network_namespace && report.no_new_privs, "{report}");
    server.client.close().await;
}

#[tokio::test]
async fn confinement_off_is_explicit_and_reported_as_absent() {
    let workdir = tempfile::tempdir().unwrap();
    let transport = StdioTransport::spawn(&hostile_config(workdir.path(), None)).unwrap();
    assert!(transport.confinement().is_none());
    let client = wasmgate_client::McpClient::connect("hostile", transport, Default::default()).await.unwrap();
    client.close().await;
}
