//! What a client is allowed to do and how long it waits: every knob in one place.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use wasmgate_protocol::{ClientInfo, MessageLimits, ProtocolVersion, SUPPORTED};

use super::input::{InputHandler, Resume};

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
    pub limits: MessageLimits,
    /// How long the `server/discover` probe may take before we fall back to `initialize`.
    pub probe_timeout: Duration,
    /// Time limit of `initialize`, list pages, `resources/read`, `prompts/get`,
    /// `completion/complete` and other non-tool requests.
    pub request_timeout: Duration,
    /// Default time limit of one `tools/call` round trip.
    pub call_timeout: Duration,
    /// Most tools accepted over all pages of `tools/list`.
    pub max_tools: usize,
    /// Most resources accepted over all pages of `resources/list`, and most resource
    /// templates over all pages of `resources/templates/list`.
    pub max_resources: usize,
    /// Most prompts accepted over all pages of `prompts/list`. Default 1024.
    pub max_prompts: usize,
    /// Most bytes accepted over all pages of one listing (`tools/list`, `resources/list`,
    /// `resources/templates/list`, `prompts/list`).
    pub max_list_bytes: usize,
    /// Most pages of one listing (a server that keeps paging is cut off).
    pub max_list_pages: usize,
    /// Most `input_required` rounds of one call.
    pub max_input_rounds: usize,
    /// This many malformed messages in a row means the stream is not JSON-RPC at all
    /// (say, a server logging to stdout): the connection is closed as a framing failure.
    pub max_consecutive_malformed: usize,
    /// Answers `input_required` requests and server-to-client requests for input.
    pub input_handler: Option<Arc<dyn InputHandler>>,
    /// Following tool-list changes on a stream the server keeps open (see
    /// [`ToolsWatch`](super::ToolsWatch)). On by default.
    pub tools_watch: ToolsWatchConfig,
}

/// How the client keeps the stream that tells it the tool list changed: a 2026-07-28
/// `subscriptions/listen` request, or the handshake-era HTTP GET stream. It is opened only
/// when the server declares `tools.listChanged`; while it is down the tool list is
/// re-fetched on every use, so a retry policy trades requests for freshness, never
/// correctness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolsWatchConfig {
    /// Open the stream at all. Off means the cache is trusted until a change notification
    /// arrives by other means or a call names an unknown tool. Default on.
    pub enabled: bool,
    /// Consecutive attempts that fail (refused, unacknowledged, or ended sooner than
    /// `max_backoff`) before giving up for the life of the connection. Default 5; 0 is read as 1.
    pub max_attempts: u32,
    /// Delay before re-opening after the first failure, doubled after each further one.
    /// Default 1 s; never less than 10 ms, so a failing server is never retried in a hot loop.
    pub initial_backoff: Duration,
    /// Longest delay between attempts; a stream that stayed open at least this long
    /// counts as a success and resets the count. Default 60 s.
    pub max_backoff: Duration,
}

impl Default for ToolsWatchConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_attempts: 5,
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(60),
        }
    }
}

impl ToolsWatchConfig {
    /// The least delay between attempts, whatever the configuration says.
    pub const MIN_BACKOFF: Duration = Duration::from_millis(10);

    /// The delay before the attempt that follows `failures` consecutive failures
    /// (0 after a stream that ended in good health).
    #[must_use]
    pub fn backoff(&self, failures: u32) -> Duration {
        let first = self.initial_backoff.max(Self::MIN_BACKOFF);
        let doubled = first.saturating_mul(1u32 << failures.saturating_sub(1).min(20));
        doubled.min(self.max_backoff.max(first))
    }

    /// [`max_attempts`](Self::max_attempts), at least 1.
    #[must_use]
    pub fn attempts(&self) -> u32 {
        self.max_attempts.max(1)
    }
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            info: ClientInfo::new("wasmgate", env!("CARGO_PKG_VERSION")),
            capabilities: Map::new(),
            versions: SUPPORTED.to_vec(),
            limits: MessageLimits::DEFAULT,
            probe_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(120),
            max_tools: 1024,
            max_resources: 1024,
            max_prompts: 1024,
            max_list_bytes: 8 * 1024 * 1024,
            max_list_pages: 100,
            max_input_rounds: 8,
            max_consecutive_malformed: 32,
            input_handler: None,
            tools_watch: ToolsWatchConfig::default(),
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

/// Receives the `params` of a server's `notifications/message` (untrusted, unparsed).
pub type LogFn = Arc<dyn Fn(Map<String, Value>) + Send + Sync>;

/// Per-call options of [`McpClient::call_tool_with`](super::McpClient::call_tool_with).
#[derive(Clone, Default)]
pub struct CallOptions {
    /// Overrides [`ClientConfig::call_timeout`].
    pub timeout: Option<Duration>,
    /// Asks the server for progress updates and delivers them here.
    pub progress: Option<ProgressFn>,
    /// Answers this call's requests for input instead of
    /// [`ClientConfig::input_handler`]: its `input_required` rounds, and a handshake-era
    /// server's requests while it is the only call with a handler in flight.
    pub input: Option<Arc<dyn InputHandler>>,
    /// Carries on from an earlier call's `input_required` round.
    pub resume: Option<Resume>,
    /// The capabilities this call's requests declare (2026-07-28 stamps them on every
    /// request) instead of [`ClientConfig::capabilities`]: what its caller's side can
    /// answer.
    pub capabilities: Option<Map<String, Value>>,
    /// The least severe log level this call wants the server's messages at (2026-07-28:
    /// `_meta["io.modelcontextprotocol/logLevel"]`; none: no messages).
    pub log_level: Option<String>,
    /// Receives the server's log messages while this is the only call in flight (a
    /// message names no request, so two calls' messages cannot be told apart).
    pub log: Option<LogFn>,
}

impl fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("progress", &self.progress.as_ref().map(|_| "Fn(Progress)"))
            .field("input", &self.input)
            .field("resume", &self.resume.is_some())
            .field("capabilities", &self.capabilities)
            .field("log_level", &self.log_level)
            .field("log", &self.log.as_ref().map(|_| "Fn(params)"))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_the_first_delay_up_to_the_cap_and_never_drops_under_the_floor() {
        let config = ToolsWatchConfig {
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(5),
            ..ToolsWatchConfig::default()
        };
        let delays: Vec<u64> = (0..6).map(|n| config.backoff(n).as_secs()).collect();
        assert_eq!(delays, [1, 1, 2, 4, 5, 5]);
        assert_eq!(config.backoff(u32::MAX), Duration::from_secs(5));
        let zero = ToolsWatchConfig {
            initial_backoff: Duration::ZERO,
            max_backoff: Duration::ZERO,
            max_attempts: 0,
            ..config
        };
        assert_eq!(zero.backoff(3), ToolsWatchConfig::MIN_BACKOFF);
        assert_eq!(zero.attempts(), 1);
    }
}
