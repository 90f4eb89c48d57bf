//! [`ServerConfig`]: what the server says about itself, which versions it speaks, and
//! its bounds, whatever the transport.

use std::time::Duration;

use wasmgate_protocol::server::ServerIdentity;
use wasmgate_protocol::{MessageLimits, ProtocolVersion};

/// Configuration shared by both transports.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Who we are (`serverInfo`), self-reported to clients.
    pub info: ServerIdentity,
    /// `instructions` for the client's model, if any.
    pub instructions: Option<String>,
    /// The versions we speak. Default: 2026-07-28 (stateless) and the handshake versions
    /// 2025-11-25, 2025-06-18 and 2025-03-26 (the Streamable HTTP ones).
    pub versions: Vec<ProtocolVersion>,
    /// Size and depth limits of every incoming message (4 MiB, 64 levels by default).
    pub limits: MessageLimits,
    /// Tools per `tools/list` page; later pages are reached by an opaque cursor.
    /// Default 100; 0 is read as 1.
    pub page_size: usize,
    /// Most requests (calls, lists, reads) and open `subscriptions/listen` running at
    /// once on one stdio connection; beyond it a request is refused with a JSON-RPC
    /// error (-32603) at once, so the reader never stops and `notifications/cancelled`
    /// still gets through. Default 64. (HTTP bounds each client with
    /// [`HttpConfig::per_client_concurrency`](crate::HttpConfig::per_client_concurrency).)
    pub max_calls_in_flight: usize,
    /// After shutdown is requested, how long calls in flight may still finish before
    /// their tokens are cancelled; the same time again is then allowed for them to
    /// return. Default 10 s.
    pub shutdown_grace: Duration,
    /// How long a call waits for the client's answer to an approval question put to it
    /// by elicitation (handshake era); no answer in time is no. Default 120 s.
    pub ask_timeout: Duration,
    /// The other replicas this server shares its work with behind a load balancer, if
    /// any ([`Cluster`](crate::Cluster)). Default: none (request states are signed with
    /// a key of this process's own and spent in its memory).
    pub cluster: Option<crate::Cluster>,
}

impl ServerConfig {
    /// The defaults, under the name and version `info`.
    #[must_use]
    pub fn new(info: ServerIdentity) -> Self {
        Self {
            info,
            instructions: None,
            versions: vec![
                ProtocolVersion::V2025_03_26,
                ProtocolVersion::V2025_06_18,
                ProtocolVersion::V2025_11_25,
                ProtocolVersion::V2026_07_28,
            ],
            limits: MessageLimits::DEFAULT,
            page_size: 100,
            max_calls_in_flight: 64,
            shutdown_grace: Duration::from_secs(10),
            ask_timeout: Duration::from_secs(120),
            cluster: None,
        }
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self::new(ServerIdentity::new("wasmgate", env!("CARGO_PKG_VERSION")))
    }
}
