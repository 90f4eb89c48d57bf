//! Interop with the Python SDK (PyPI `mcp` 2.3.0, `MCPServer`), a peer written elsewhere:
//! stdio and Streamable HTTP (SSE and JSON answers), in the 2026-07-28 era and in the
//! handshake era. The SDK's server is dual-era and lets the client's opening decide, so
//! each era is covered by limiting our client's versions. A tool the peer adds at run
//! time must reach the client's next listing in every era: through `subscriptions/listen`
//! (2026-07-28), the HTTP GET stream (handshake era over HTTP) or stdout.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod confined;
mod peers;

use std::time::Duration;

use peers::{check_python_peer, check_tool_list_change, fixtures, python_http_peer, venv_python};
use wasmgate_client::{ClientConfig, HttpConfig, HttpTransport, McpClient, StdioConfig, StdioTransport, ToolsWatch};
use wasmgate_protocol::ProtocolVersion;

fn era(versions: &[ProtocolVersion]) -> ClientConfig {
    ClientConfig { versions: versions.to_vec(), ..ClientConfig::default() }
}

/// The SDK's server over stdio, confined: the default path list plus the venv and its
/// base interpreter (read and execute) and the fixture script (read).
/// The working directory lives as long as the returned guard.
async fn over_stdio(config: ClientConfig) -> (McpClient, tempfile::TempDir) {
    let workdir = tempfile::tempdir().unwrap();
    let server = StdioConfig::new("python-peer", venv_python(), workdir.path())
        .arg(fixtures().join("python_peer.py"))
        .arg("stdio")
        .confinement(Some(confined::for_python(&venv_python(), &fixtures())));
    let transport = StdioTransport::spawn(&server).unwrap();
    let report = transport.confinement().expect("confined by default");
    assert!(report.is_complete(), "{report}");
    // The discovery probe's clock runs while Python starts and imports the SDK, which
    // two peers starting at once on a loaded machine can make slow: a probe that timed
    // out would fall back to the handshake era and fail the era's assertions.
    let config = ClientConfig { probe_timeout: Duration::from_secs(60), ..config };
    (McpClient::connect("python-peer", transport, config).await.unwrap(), workdir)
}

async fn over_http(url: &str, config: ClientConfig) -> McpClient {
    let transport = HttpTransport::new(&HttpConfig::new("python-peer", url)).unwrap();
    McpClient::connect("python-peer", transport, config).await.unwrap()
}

#[tokio::test]
async fn python_sdk_over_stdio_in_the_2026_era_by_discovery() {
    let (client, _workdir) = over_stdio(ClientConfig::default()).await;
    assert_eq!(client.protocol_version(), Some(ProtocolVersion::V2026_07_28));
    check_python_peer(&client).await;
    client.close().await;
}

#[tokio::test]
async fn python_sdk_over_stdio_in_the_handshake_era() {
    let (client, _workdir) = over_stdio(era(&[ProtocolVersion::V2025_11_25])).await;
    assert_eq!(client.protocol_version(), Some(ProtocolVersion::V2025_11_25));
    assert_eq!(client.server_info().map(|i| i.name), Some("wasmgate-python-peer".into()));
    check_python_peer(&client).await;
    client.close().await;
}

#[tokio::test]
async fn python_sdk_over_http_sse_in_the_2026_era() {
    let peer = python_http_peer(false).await;
    let client = over_http(&peer.url, ClientConfig::default()).await;
    assert_eq!(client.protocol_version(), Some(ProtocolVersion::V2026_07_28));
    check_python_peer(&client).await;
    client.close().await;
}

#[tokio::test]
async fn python_sdk_over_http_json_in_the_2026_era() {
    let peer = python_http_peer(true).await;
    let client = over_http(&peer.url, ClientConfig::default()).await;
    check_python_peer(&client).await;
    client.close().await;
}

#[tokio::test]
async fn python_sdk_over_http_sse_in_the_handshake_era_with_a_session() {
    let peer = python_http_peer(false).await;
    let client = over_http(&peer.url, era(&[ProtocolVersion::V2025_11_25])).await;
    assert_eq!(client.protocol_version(), Some(ProtocolVersion::V2025_11_25));
    check_python_peer(&client).await;
    client.close().await;
}

#[tokio::test]
async fn python_sdk_over_http_json_in_the_handshake_era_with_a_session() {
    let peer = python_http_peer(true).await;
    let client = over_http(&peer.url, era(&[ProtocolVersion::V2025_11_25])).await;
    check_python_peer(&client).await;
    client.close().await;
}

#[tokio::test]
async fn python_sdk_over_stdio_in_the_2026_era_announces_a_new_tool_on_the_subscription() {
    let (client, _workdir) = over_stdio(ClientConfig::default()).await;
    check_tool_list_change(&client, ToolsWatch::Active).await;
    client.close().await;
}

#[tokio::test]
async fn python_sdk_over_stdio_in_the_handshake_era_announces_a_new_tool_on_stdout() {
    let (client, _workdir) = over_stdio(era(&[ProtocolVersion::V2025_11_25])).await;
    check_tool_list_change(&client, ToolsWatch::Off).await;
    client.close().await;
}

#[tokio::test]
async fn python_sdk_over_http_in_the_2026_era_announces_a_new_tool_on_the_subscription() {
    let peer = python_http_peer(false).await;
    let client = over_http(&peer.url, ClientConfig::default()).await;
    check_tool_list_change(&client, ToolsWatch::Active).await;
    client.close().await;
}

#[tokio::test]
async fn python_sdk_over_http_in_the_handshake_era_announces_a_new_tool_on_the_get_stream() {
    let peer = python_http_peer(false).await;
    let client = over_http(&peer.url, era(&[ProtocolVersion::V2025_11_25])).await;
    check_tool_list_change(&client, ToolsWatch::Active).await;
    client.close().await;
}
