//! Scripting helpers shared by the fake-transport tests: play the server's side of the
//! opening and read what the client sent, without sleeps.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::{Semaphore, mpsc};
use wasmgate_client::{
    ClientConfig, CloseReason, FakeServer, FakeTransport, Inbound, McpClient, ToolsWatch, Transport, TransportError,
};
use wasmgate_core::BoxFuture;
use wasmgate_protocol::Id;

/// A fake whose sends of the messages `stalls` picks wait for a permit of `open`, which
/// the test gives out (or never does), like a stdio server that stopped reading its
/// input; `waiting` counts the sends held up.
#[derive(Debug)]
pub struct Clogged {
    pub inner: FakeTransport,
    pub open: Arc<Semaphore>,
    pub waiting: Arc<AtomicUsize>,
    pub stalls: fn(&Value) -> bool,
}

impl Clogged {
    /// Closed until the test adds permits to [`Clogged::open`].
    pub fn new(inner: FakeTransport, stalls: fn(&Value) -> bool) -> Self {
        Self { inner, open: Arc::new(Semaphore::new(0)), waiting: Arc::default(), stalls }
    }
}

impl Transport for Clogged {
    fn take_inbound(&mut self) -> Option<mpsc::Receiver<Inbound>> {
        self.inner.take_inbound()
    }

    fn send(&self, message: Value) -> BoxFuture<'_, Result<(), TransportError>> {
        Box::pin(async move {
            if (self.stalls)(&message) {
                self.waiting.fetch_add(1, Ordering::SeqCst);
                self.open.acquire().await.unwrap().forget();
                self.waiting.fetch_sub(1, Ordering::SeqCst);
            }
            self.inner.send(message).await
        })
    }

    fn close(&self) -> BoxFuture<'_, CloseReason> {
        self.inner.close()
    }
}

/// A `server/discover` result for a 2026-07-28 server with tools.
pub fn discover_result() -> Value {
    json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {"listChanged": true}},
           "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "1"}}})
}

/// An `initialize` result for `version`.
pub fn initialize_result(version: &str) -> Value {
    json!({"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": {"name": "old", "version": "1"}})
}

/// A connected 2026-07-28 client and the server end, with the tool change
/// subscription the server's `tools.listChanged` asks for already acknowledged.
pub async fn connected(config: ClientConfig) -> (McpClient, FakeServer) {
    let (transport, mut server) = FakeTransport::pair();
    let connecting = tokio::spawn(McpClient::connect("fake", transport, config));
    let id = expect_request(&mut server, "server/discover").await.0;
    server.respond(&id, discover_result()).await;
    let client = connecting.await.unwrap().expect("connect");
    subscribe(&mut server, &client).await;
    (client, server)
}

/// Answers the client's `subscriptions/listen` for tool changes with an acknowledgment
/// and waits until the client trusts it; returns the subscription's id.
pub async fn subscribe(server: &mut FakeServer, client: &McpClient) -> Id {
    let (id, params) = expect_request(server, "subscriptions/listen").await;
    assert_eq!(params["notifications"], json!({"toolsListChanged": true}));
    server.send(acknowledged(&id, json!({"toolsListChanged": true}))).await;
    until(client, ToolsWatch::Active).await;
    id
}

/// `notifications/subscriptions/acknowledged` for subscription `id`, honoring `filter`.
pub fn acknowledged(id: &Id, filter: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
           "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": id.to_value()}, "notifications": filter}})
}

/// `notifications/tools/list_changed` on subscription `id`.
pub fn tools_changed_on(id: &Id) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
           "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": id.to_value()}}})
}

/// Waits (10 s at most, a failure guard, not a synchronization) for the watch to reach `state`.
pub async fn until(client: &McpClient, state: ToolsWatch) {
    let mut watch = client.tools_watch();
    let reached = tokio::time::timeout(GUARD, watch.wait_for(|s| *s == state)).await.is_ok_and(|r| r.is_ok());
    assert!(reached, "the tool watch never became {state:?}; it is {:?}", *watch.borrow());
}

/// How long a test waits for something that should happen at once.
pub const GUARD: Duration = Duration::from_secs(10);

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
