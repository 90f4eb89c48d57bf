//! A scripted upstream MCP server on the in-memory transport, a shared sandbox with
//! the real formatter components, and helpers to build providers over both
//! ([`components`] has the WASM tool components).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod components;

use std::path::PathBuf;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Notify;
use wasmgate_adapter::{FormatterRule, Formatters, McpProvider};
use wasmgate_client::{ClientConfig, CloseReason, FakeServer, FakeTransport};
use wasmgate_protocol::Id;
use wasmgate_sandbox::{CallLimits, Formatter, Sandbox, SandboxConfig};

/// How an upstream answers one `tools/call`.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A `tools/call` result.
    Result(Value),
    /// A JSON-RPC error.
    RpcError(i64, &'static str),
    /// The server process dies mid-call.
    Die,
    /// No answer (until cancelled).
    Hang,
    /// One `notifications/progress` per message (when the call carries a progress
    /// token), then this result.
    Progress(Vec<String>, Value),
}

type OnCall = dyn Fn(&str, &Value) -> Reply + Send + Sync;

/// What a scripted upstream offers and what it saw.
pub struct Upstream {
    pub tools: Mutex<Vec<Value>>,
    on_call: Box<OnCall>,
    pub calls: Mutex<Vec<(String, Value)>>,
    pub lists: Mutex<usize>,
    pub cancelled: Mutex<Vec<Value>>,
    /// `resources/list` entries and, per URI, the `contents` of a read.
    pub resources: Mutex<Vec<(Value, Value)>>,
    /// Notified when a call arrives.
    pub called: Notify,
    /// Set: `tools/list` and `resources/list` are counted but never answered.
    pub silent_lists: std::sync::atomic::AtomicBool,
}

impl Upstream {
    pub fn new(tools: Vec<Value>, on_call: impl Fn(&str, &Value) -> Reply + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(Self {
            tools: Mutex::new(tools),
            on_call: Box::new(on_call),
            calls: Mutex::default(),
            lists: Mutex::default(),
            cancelled: Mutex::default(),
            resources: Mutex::default(),
            silent_lists: std::sync::atomic::AtomicBool::new(false),
            called: Notify::new(),
        })
    }

    pub fn call_count(&self) -> usize {
        self.calls.lock().unwrap().len()
    }
}

/// A tool definition with an object input schema.
pub fn tool(name: &str, properties: Value) -> Value {
    json!({"name": name, "description": format!("the {name} tool"),
           "inputSchema": {"type": "object", "properties": properties, "additionalProperties": false}})
}

/// A text result.
pub fn text(text: &str, is_error: bool) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": is_error})
}

/// Plays the upstream until the client goes away or the script says `Die`.
pub async fn serve(mut server: FakeServer, upstream: Arc<Upstream>) {
    while let Some(message) = server.recv().await {
        let method = message["method"].as_str().unwrap_or_default().to_owned();
        let Some(id) = Id::from_value(&message["id"]).ok() else {
            if method == "notifications/cancelled" {
                upstream.cancelled.lock().unwrap().push(message["params"].clone());
            }
            continue;
        };
        match method.as_str() {
            "server/discover" => {
                let result = json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}, "resources": {}},
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "1"}}});
                server.respond(&id, result).await;
            }
            "tools/list" | "resources/list" if upstream.silent_lists.load(std::sync::atomic::Ordering::SeqCst) => {
                *upstream.lists.lock().unwrap() += 1;
            }
            "tools/list" => {
                *upstream.lists.lock().unwrap() += 1;
                let tools = upstream.tools.lock().unwrap().clone();
                server.respond(&id, json!({"tools": tools})).await;
            }
            "resources/list" => {
                let listed: Vec<Value> = upstream.resources.lock().unwrap().iter().map(|r| r.0.clone()).collect();
                server.respond(&id, json!({"resources": listed})).await;
            }
            "resources/read" => {
                let uri = message["params"]["uri"].clone();
                let found = upstream.resources.lock().unwrap().iter().find(|r| r.0["uri"] == uri).map(|r| r.1.clone());
                match found {
                    Some(contents) => server.respond(&id, json!({"contents": contents})).await,
                    None => server.respond_error(&id, -32002, "Resource not found").await,
                }
            }
            "tools/call" => {
                let name = message["params"]["name"].as_str().unwrap_or_default().to_owned();
                let arguments = message["params"]["arguments"].clone();
                upstream.calls.lock().unwrap().push((name.clone(), arguments.clone()));
                let reply = (upstream.on_call)(&name, &arguments);
                upstream.called.notify_one();
                match reply {
                    Reply::Result(result) => server.respond(&id, result).await,
                    Reply::RpcError(code, text) => server.respond_error(&id, code, text).await,
                    Reply::Die => {
                        server.close(CloseReason::Exited { code: Some(1), signal: None }).await;
                        return;
                    }
                    Reply::Hang => {}
                    Reply::Progress(messages, result) => {
                        let token = message["params"]["_meta"]["progressToken"].clone();
                        if !token.is_null() {
                            for (step, text) in messages.iter().enumerate() {
                                let params = json!({"progressToken": token, "progress": step, "message": text});
                                server
                                    .send(
                                        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}),
                                    )
                                    .await;
                            }
                        }
                        server.respond(&id, result).await;
                    }
                }
            }
            other => server.respond_error(&id, -32601, &format!("no method {other}")).await,
        }
    }
}

/// The sandbox shared by a test binary: compiling components once keeps tests fast.
pub static SANDBOX: LazyLock<Sandbox> = LazyLock::new(|| Sandbox::new(SandboxConfig::default()).unwrap());

/// Limits small enough that hostile formatters trip them quickly.
pub fn limits() -> CallLimits {
    CallLimits {
        deadline: Duration::from_millis(300),
        memory_bytes: 32 << 20,
        output_bytes: 64 << 10,
        ..CallLimits::default()
    }
}

/// The built-in json-text formatter, with a deadline no stall of a loaded machine
/// reaches: it formats every ordinary result, and only hostile guests should time out.
pub fn json_text() -> Formatter {
    static JSON_TEXT: LazyLock<Formatter> = LazyLock::new(|| {
        let limits = CallLimits { deadline: Duration::from_secs(5), ..limits() };
        SANDBOX.load_formatter("json-text", wasmgate_guests::JSON_TEXT, limits).unwrap()
    });
    JSON_TEXT.clone()
}

/// Formatters: json-text by default, and `path` for every tool of provider `p` if given.
pub fn formatters(rule: Option<&str>) -> Arc<Formatters> {
    let rules = rule.map(|path| FormatterRule { provider: "p".into(), tool: "*".into(), path: PathBuf::from(path) });
    Arc::new(Formatters::load(&SANDBOX, json_text(), rules, &limits()).unwrap())
}

/// A provider named `p` over a scripted upstream.
pub async fn provider(upstream: Arc<Upstream>, formatters: Arc<Formatters>) -> McpProvider {
    let (transport, server) = FakeTransport::pair();
    tokio::spawn(serve(server, upstream));
    McpProvider::connect("p", transport, ClientConfig::default(), formatters).await.unwrap()
}
