//! The test backend and harnesses: the server over an in-memory stdio pipe (raw lines,
//! or this repository's `McpClient` through a bridge) and over HTTP on loopback.
//! Every wait is bounded by [`GUARD`]; nothing sleeps to synchronise.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::task::JoinHandle;
use wasmgate_client::{ClientConfig, McpClient};
use wasmgate_core::{CancellationToken, Tool, ToolError, ToolErrorKind, ToolResult, ToolSpec};
use wasmgate_protocol::ProtocolVersion;
use wasmgate_server::{HttpConfig, ServeError, ServerConfig, ToolsBackend, serve_http, serve_stdio};

/// The longest any test waits for something that should happen at once.
pub const GUARD: Duration = Duration::from_secs(10);

/// Logs to the test's output when `RUST_LOG` asks for it.
pub fn logs() {
    let filter = tracing_subscriber::EnvFilter::from_default_env();
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_test_writer().try_init();
}

/// Waits for `future`, failing the test after [`GUARD`].
pub async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(GUARD, future).await.unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

fn spec(name: &str, description: &str) -> ToolSpec {
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    ToolSpec { name: name.into(), description: description.into(), input_schema: schema }
}

/// The backend: `echo`, `fail` (an `isError` result), `broken` (a `ToolError` whose
/// details must not reach the client) and `block` (waits for a release or its token).
pub struct Fixture {
    pub backend: ToolsBackend,
    /// One entry (the call's `text`) per `block` call that started.
    pub entered: mpsc::UnboundedReceiver<String>,
    /// One entry per `block` call whose token fired.
    pub cancelled: mpsc::UnboundedReceiver<String>,
    /// A permit releases one `block` call.
    pub release: Arc<Semaphore>,
}

pub fn echo_tool(name: &str) -> Tool {
    Tool::from_fn(spec(name, "Echoes its text"), |input: Value, _| async move {
        Ok(ToolResult::text(input["text"].as_str().unwrap_or_default()))
    })
}

impl Fixture {
    pub fn new() -> Self {
        let (entered_tx, entered) = mpsc::unbounded_channel();
        let (cancelled_tx, cancelled) = mpsc::unbounded_channel();
        let release = Arc::new(Semaphore::new(0));
        let gate = Arc::clone(&release);
        let block = Tool::from_fn(spec("block", "Waits"), move |input: Value, cancel: CancellationToken| {
            let (entered, cancelled, gate) = (entered_tx.clone(), cancelled_tx.clone(), Arc::clone(&gate));
            async move {
                let text = input["text"].as_str().unwrap_or_default().to_owned();
                entered.send(text.clone()).unwrap();
                tokio::select! {
                    permit = gate.acquire_owned() => {
                        permit.unwrap().forget();
                        Ok(ToolResult::text(format!("released {text}")))
                    }
                    () = cancel.cancelled() => {
                        cancelled.send(text).unwrap();
                        Err(ToolError::cancelled())
                    }
                }
            }
        });
        let fail = Tool::from_fn(spec("fail", "Fails"), |_, _| async { Ok(ToolResult::error("no such calendar")) });
        let broken = Tool::from_fn(spec("broken", "Breaks"), |_, _| async {
            Err(ToolError::new(ToolErrorKind::ExecutionFailed, "/home/alice/.ssh: exit status 137")
                .with_provider("cal"))
        });
        let backend = ToolsBackend::new(vec![echo_tool("echo"), fail, broken, block]);
        Self { backend, entered, cancelled, release }
    }

    pub async fn entered(&mut self) -> String {
        bounded("a block call to start", self.entered.recv()).await.unwrap()
    }

    pub async fn cancelled(&mut self) -> String {
        bounded("a block call's token to fire", self.cancelled.recv()).await.unwrap()
    }
}

/// A server config with a short grace period, so shutdown tests end quickly.
pub fn config() -> ServerConfig {
    ServerConfig { shutdown_grace: Duration::from_millis(300), ..ServerConfig::default() }
}

/// The server on an in-memory stdio pipe, driven by raw lines.
pub struct Stdio {
    input: Option<DuplexStream>,
    output: tokio::io::Lines<BufReader<DuplexStream>>,
    shutdown: Option<oneshot::Sender<()>>,
    pub served: JoinHandle<Result<(), ServeError>>,
}

impl Stdio {
    pub fn start(backend: impl wasmgate_server::Backend, config: ServerConfig) -> Self {
        let (input, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, output) = tokio::io::duplex(1 << 16);
        let (shutdown, signal) = oneshot::channel::<()>();
        let served =
            tokio::spawn(serve_stdio(Arc::new(backend), BufReader::new(server_in), server_out, config, async {
                let _ = signal.await;
            }));
        Self { input: Some(input), output: BufReader::new(output).lines(), shutdown: Some(shutdown), served }
    }

    pub async fn send_raw(&mut self, line: &str) {
        let input = self.input.as_mut().expect("input open");
        input.write_all(line.as_bytes()).await.unwrap();
        input.write_all(b"\n").await.unwrap();
    }

    pub async fn send(&mut self, message: Value) {
        self.send_raw(&message.to_string()).await;
    }

    /// The next line the server wrote, as JSON.
    pub async fn recv(&mut self) -> Value {
        let line = bounded("a line from the server", self.output.next_line()).await.unwrap().expect("output open");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON: {line:?}: {e}"))
    }

    /// Every line the server writes until it closes its output.
    pub async fn rest(&mut self) -> Vec<serde_json::Value> {
        let mut rest = Vec::new();
        while let Some(line) = bounded("the server's output to end", self.output.next_line()).await.unwrap() {
            rest.push(serde_json::from_str(&line).unwrap());
        }
        rest
    }

    /// Sends `request` and returns the response with its id (other messages are skipped).
    pub async fn ask(&mut self, request: Value) -> Value {
        let id = request["id"].clone();
        self.send(request).await;
        loop {
            let message = self.recv().await;
            if message.get("id") == Some(&id) && message.get("method").is_none() {
                return message;
            }
        }
    }

    /// Closes the server's input: end of stream.
    pub async fn close_input(&mut self) {
        self.input.take();
    }

    pub fn shutdown(&mut self) {
        let _ = self.shutdown.take().expect("shutdown once").send(());
    }

    pub async fn finished(self) -> Result<(), ServeError> {
        bounded("the server to finish", self.served).await.unwrap()
    }
}

/// A 2026-07-28 request of `method` with `params` and the stateless stamp.
pub fn stamped(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A handshake-era request.
pub fn plain(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

pub fn initialize(id: i64, version: &str) -> Value {
    plain(
        id,
        "initialize",
        json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    )
}

/// The server on loopback HTTP.
pub struct Http {
    pub addr: SocketAddr,
    pub url: String,
    shutdown: Option<oneshot::Sender<()>>,
    pub served: JoinHandle<Result<(), ServeError>>,
}

impl Http {
    pub async fn start(backend: impl wasmgate_server::Backend, config: ServerConfig, http: HttpConfig) -> Self {
        logs();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (shutdown, signal) = oneshot::channel::<()>();
        let served = tokio::spawn(serve_http(Arc::new(backend), listener, config, http, async {
            let _ = signal.await;
        }));
        Self { addr, url: format!("http://{addr}/mcp"), shutdown: Some(shutdown), served }
    }

    pub fn shutdown(&mut self) {
        let _ = self.shutdown.take().expect("shutdown once").send(());
    }

    pub async fn finished(self) -> Result<(), ServeError> {
        bounded("the server to finish", self.served).await.unwrap()
    }
}

/// Our own client over the in-memory stdio pipe: the client's fake transport, bridged
/// to the server's lines (the fake hands over messages; the bridge frames them).
pub async fn stdio_client(backend: ToolsBackend, versions: &[ProtocolVersion]) -> (McpClient, JoinHandle<()>) {
    let (transport, mut fake) = wasmgate_client::FakeTransport::pair();
    let (mut input, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, output) = tokio::io::duplex(1 << 16);
    let server =
        serve_stdio(Arc::new(backend), BufReader::new(server_in), server_out, config(), std::future::pending());
    tokio::spawn(server);
    let bridge = tokio::spawn(async move {
        let mut lines = BufReader::new(output).lines();
        loop {
            tokio::select! {
                sent = fake.recv() => match sent {
                    Some(message) => input.write_all(format!("{message}\n").as_bytes()).await.unwrap(),
                    None => return,
                },
                line = lines.next_line() => match line {
                    Ok(Some(line)) => fake.send(serde_json::from_str(&line).unwrap()).await,
                    _ => return,
                },
            }
        }
    });
    let config = ClientConfig { versions: versions.to_vec(), ..ClientConfig::default() };
    let client = bounded("the client to connect", McpClient::connect("wasmgate", transport, config)).await.unwrap();
    (client, bridge)
}
