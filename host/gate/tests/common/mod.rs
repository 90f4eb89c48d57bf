//! Scripting helpers shared by the fake-transport tests: play the server's side of the
//! opening and read what the client sent, without sleeps.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Map, Value, json};
use wasmgate_gate::{ClientConfig, FakeServer, McpClient, fake};
use wasmgate_protocol::Id;

/// A `server/discover` result for a 2026-07-28 server with tools.
pub fn discover_result() -> Value {
    json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {"listChanged": true}},
           "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "1"}}})
}

/// An `initialize` result for `version`.
pub fn initialize_result(version: &str) -> Value {
    json!({"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": {"name": "old", "version": "1"}})
}

/// A connected 2026-07-28 client and the server end.
pub async fn connected(config: ClientConfig) -> (McpClient, FakeServer) {
    let (transport, mut server) = fake::fake();
    let connecting = tokio::spawn(McpClient::connect("fake", transport, config));
    let id = expect_request(&mut server, "server/discover").await.0;
    server.respond(&id, discover_result()).await;
    (connecting.await.unwrap().expect("connect"), server)
}

/// The next message, which must be a request for `method`: its id and params.
pub async fn expect_request(server: &mut FakeServer, method: &str) -> (Id, Map<String, Value>) {
    let message = server.recv().await.expect("the client closed the transport");
    assert_eq!(message["method"], method, "unexpected message {message}");
    let id = Id::from_value(&message["id"]).expect("a request id");
    (id, message.get("params").and_then(Value::as_object).cloned().unwrap_or_default())
}

/// The next message, which must be a notification for `method`: its params.
pub async fn expect_notification(server: &mut FakeServer, method: &str) -> Map<String, Value> {
    let message = server.recv().await.expect("the client closed the transport");
    assert_eq!(message["method"], method, "unexpected message {message}");
    assert!(message.get("id").is_none(), "a notification has no id: {message}");
    message.get("params").and_then(Value::as_object).cloned().unwrap_or_default()
}

/// A text result.
pub fn text_result(text: &str, is_error: bool) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": is_error})
}

/// Arguments `{"text": text}`.
pub fn text_args(text: &str) -> Map<String, Value> {
    let mut args = Map::new();
    args.insert("text".into(), Value::String(text.into()));
    args
}

/// A tool definition named `name`.
pub fn tool(name: &str) -> Value {
    json!({"name": name, "inputSchema": {"type": "object"}})
}
