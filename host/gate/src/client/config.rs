//! What a client is allowed to do and how long it waits: every knob in one place.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use wasmgate_protocol::{ClientInfo, Limits, ProtocolVersion, SUPPORTED};

use super::input::InputHandler;

/// Configuration of one [`McpClient`](super::McpClient).
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Who we are (`clientInfo`).
    pub info: ClientInfo,
    /// The `ClientCapabilities` we declare. Declare `elicitation`, `sampling` or `roots`
    /// only if `input_handler` answers them.
    pub capabilities: Map<String, Value>,
    /// The versions we may speak. The newest stateless one is probed with
    /// `server/discover`, the newest handshake one offered to `initialize`; a list with
    /// only one era forces that era.
    pub versions: Vec<ProtocolVersion>,
    /// Size and depth limits for every incoming message.
    pub limits: Limits,
    /// How long the `server/discover` probe may take before we fall back to `initialize`.
    pub probe_timeout: Duration,
    /// Time limit of `initialize`, `tools/list` pages and other non-tool requests.
    pub request_timeout: Duration,
    /// Default time limit of one `tools/call` round trip.
    pub call_timeout: Duration,
    /// Most tools accepted over all pages of `tools/list`.
    pub max_tools: usize,
    /// Most bytes accepted over all pages of `tools/list`.
    pub max_list_bytes: usize,
    /// Most pages of `tools/list` (a server that keeps paging is cut off).
    pub max_list_pages: usize,
    /// Most `input_required` rounds of one call.
    pub max_input_rounds: usize,
    /// This many malformed messages in a row means the stream is not JSON-RPC at all
    /// (say, a server logging to stdout): the connection is closed as a framing failure.
    pub max_consecutive_malformed: usize,
    /// Answers `input_required` requests and server-to-client requests for input.
    pub input_handler: Option<Arc<dyn InputHandler>>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            info: ClientInfo::new("wasmgate", env!("CARGO_PKG_VERSION")),
            capabilities: Map::new(),
            versions: SUPPORTED.to_vec(),
            limits: Limits::DEFAULT,
            probe_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(120),
            max_tools: 1024,
            max_list_bytes: 8 * 1024 * 1024,
            max_list_pages: 100,
            max_input_rounds: 8,
            max_consecutive_malformed: 32,
            input_handler: None,
        }
    }
}

/// A progress update for one call (`notifications/progress`).
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Progress so far; increases with every update.
    pub progress: f64,
    /// The total, if the server knows it.
    pub total: Option<f64>,
    /// A human-readable message (server text, untrusted).
    pub message: Option<String>,
}

/// Receives the progress updates of one call, on the client's reader task: keep it quick.
pub type ProgressFn = Arc<dyn Fn(Progress) + Send + Sync>;

/// Per-call options of [`McpClient::call_tool_with`](super::McpClient::call_tool_with).
#[derive(Clone, Default)]
pub struct CallOptions {
    /// Overrides [`ClientConfig::call_timeout`].
    pub timeout: Option<Duration>,
    /// Asks the server for progress updates and delivers them here.
    pub progress: Option<ProgressFn>,
}

impl fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("progress", &self.progress.as_ref().map(|_| "Fn(Progress)"))
            .finish()
    }
}
