//! Interop with `@modelcontextprotocol/server-everything` 2026.8.31 (the TypeScript
//! SDK's reference server) over stdio. It speaks only the handshake era, so this also
//! proves the `server/discover` probe falls back to `initialize` against a real server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod peers;

use peers::{call, first_text, peer};
use serde_json::json;
use wasmgate_client::{ClientConfig, McpClient, StdioConfig, StdioTransport};
use wasmgate_confine::Confinement;
use wasmgate_protocol::ContentBlock;

/// server-everything over stdio, confined: the default path list (node is a system
/// binary here) plus its `node_modules` tree, read-only.
async fn everything() -> (McpClient, tempfile::TempDir) {
    let entry = peer("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let workdir = tempfile::tempdir().unwrap();
    let confinement = Confinement::default().read_only(peer("npm").canonicalize().unwrap());
    let server =
        StdioConfig::new("everything", "node", workdir.path()).arg(entry).arg("stdio").confinement(Some(confinement));
    let transport = StdioTransport::spawn(&server).unwrap();
    let report = transport.confinement().expect("confined by default");
    assert!(report.is_complete(), "{report}");
    (McpClient::connect("everything", transport, ClientConfig::default()).await.unwrap(), workdir)
}

#[tokio::test]
async fn server_everything_over_stdio_falls_back_to_the_handshake_and_serves_tools() {
    let (client, _workdir) = everything().await;
    let version = client.protocol_version().unwrap();
    assert!(!version.is_stateless(), "server-everything is a handshake-era server, got {version}");

    let tools = client.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"echo") && names.contains(&"get-tiny-image"), "{names:?}");

    let echo = call(&client, "echo", json!({"message": "hello, everything"})).await;
    assert!(!echo.is_error);
    assert_eq!(first_text(&echo), "Echo: hello, everything");

    let image = call(&client, "get-tiny-image", json!({})).await;
    let block = image.content.iter().find(|b| matches!(b, ContentBlock::Image(_))).expect("an image block");
    assert_eq!(block.mime_type(), Some("image/png"));

    let invalid = call(&client, "get-sum", json!({"a": "one", "b": 2})).await;
    assert!(invalid.is_error, "argument validation failures are tool errors: {invalid:?}");

    // The TypeScript SDK answers an unknown tool with an isError result rather than -32602.
    let unknown = call(&client, "no-such-tool", json!({})).await;
    assert!(unknown.is_error);
    client.close().await;
}
