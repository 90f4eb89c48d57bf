//! The MCP client half of wasmgate: transports and [`McpClient`].
//!
//! wasmgate talks to MCP servers it does not trust. This crate is the layer that speaks
//! to them: it moves frames (transports), turns them into protocol messages with
//! `wasmgate-protocol`, and offers a small async API (connect, list tools, call a tool,
//! close) whose errors follow DESIGN.md's failure contract: a tool that ran and failed
//! is `Ok(CallToolResult { is_error: true, .. })`; a call that produced no tool result
//! is an `Err(ClientError)` that says why.
//!
//! # Layout
//!
//! * [`transport`]: the [`Transport`] trait (frames in, messages out) and its three
//!   implementations: [`StdioTransport`] (a child process confined by the kernel by
//!   default, see [`confine`], with an explicit environment, bounded framing, bounded stderr logging, and a close → `SIGTERM` → `SIGKILL`
//!   shutdown of its whole process group), [`HttpTransport`] (Streamable HTTP over
//!   reqwest + rustls, JSON or bounded SSE answers, both eras' headers and sessions), and
//!   [`fake`] (in memory, for tests).
//! * [`client`]: [`McpClient`] and its configuration. Era detection (`server/discover`,
//!   falling back to `initialize`), `tools/list` paging with caps and a stale-aware
//!   cache kept honest by a change stream (`subscriptions/listen` in 2026-07-28, the
//!   GET stream of handshake-era HTTP), `tools/call` with timeouts, cancellation,
//!   progress and `input_required`.
//! * [`error`]: [`ClientError`], [`TransportError`], [`CloseReason`].
//!
//! Nothing here panics on server input, waits without a bound, or buffers without a cap.

pub mod client;
pub mod error;
pub mod transport;

pub use client::{
    CallOptions, ClientConfig, InputDeclined, InputHandler, InputRequest, LogFn, McpClient, Progress, ProgressFn,
    ResourceSubscription, Resume, ToolsWatch, ToolsWatchConfig,
};
pub use error::{ClientError, CloseReason, TransportError};
pub use tokio_util::sync::CancellationToken;
pub use transport::fake::{self, FakeServer, FakeTransport};
pub use transport::http::{Bearer, HttpConfig, HttpTransport};
pub use transport::process::resolve_program;
pub use transport::stderr::StderrTail;
pub use transport::stdio::{StdioConfig, StdioLimits, StdioTransport};
pub use transport::{BoxFuture, Inbound, StreamEnd, Transport};
/// Kernel confinement of stdio servers (the `wasmgate-confine` crate).
pub use wasmgate_confine as confine;
pub use wasmgate_confine::{Confinement, ConfinementReport, Enforcement, Network, ResourceLimits};
