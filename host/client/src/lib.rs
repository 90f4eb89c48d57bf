//! The MCP client half of wasmgate: transports and [`McpClient`].
//!
//! wasmgate talks to MCP servers it does not trust. This crate is the layer that speaks
//! to them: it moves frames (transports), turns them into protocol messages with
//! `wasmgate-protocol`, and offers a small async API (connect, list tools, call a tool,
//! close) whose errors follow the failure contract (docs/ARCHITECTURE.md): a tool that ran and failed
//! is `Ok(CallToolResult { is_error: true, .. })`; a call that produced no tool result
//! is an `Err(ClientError)` that says why.
//!
//! # Layout
//!
//! * `transport`: the [`Transport`] trait (frames in, messages out) and its three
//!   implementations: [`StdioTransport`] (a child process confined by the kernel by
//!   default, through `wasmgate-confine`, its granted hosts reached through
//!   `wasmgate-egress`'s proxy; an explicit environment, bounded framing, bounded stderr
//!   logging, and a close → `SIGTERM` → `SIGKILL` shutdown of its whole process group),
//!   [`HttpTransport`] (Streamable HTTP over reqwest + rustls, JSON or bounded SSE
//!   answers, both eras' headers and sessions, OAuth 2.1 through `wasmgate-oauth`), and
//!   [`FakeTransport`] (in memory, for tests).
//! * `client`: [`McpClient`] and its configuration. Era detection (`server/discover`,
//!   falling back to `initialize`), `tools/list` paging with caps and a stale-aware
//!   cache kept honest by a change stream (`subscriptions/listen` in 2026-07-28, the
//!   GET stream of handshake-era HTTP), `tools/call` with timeouts, cancellation,
//!   progress and `input_required`.
//! * `error`: [`ClientError`], [`TransportError`], [`CloseReason`].
//!
//! The modules are private; everything a user names is re-exported here.
//!
//! Nothing here panics on server input, waits without a bound, or buffers without a cap.

mod client;
mod error;
mod transport;

pub use client::{
    CallOptions, ClientConfig, InputDeclined, InputHandler, InputRequest, LogFn, MAX_FOLLOWED, McpClient, Progress,
    ProgressFn, ResourceSubscription, Resume, ToolsWatch, ToolsWatchConfig, awaiting_answers,
};
pub use error::{ClientError, CloseReason, TransportError};
pub use transport::{
    FakeServer, FakeTransport, HttpConfig, HttpTransport, Inbound, StderrTail, StdioConfig, StdioLimits,
    StdioTransport, StreamEnd, Transport, resolve_program,
};

/// The bounded line framing, for the `stdio_framing` target in `fuzz/`; not a stable API.
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::transport::{Line, LineReader, OVERSIZED_PREFIX_BYTES};
}
