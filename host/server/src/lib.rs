//! The MCP server face of wasmgate: serves a [`Backend`]'s tools to any MCP client.
//!
//! A stock MCP client (an IDE, a desktop assistant, the Python SDK, this repository's
//! own `McpClient`) connects over stdio or Streamable HTTP, in either protocol era:
//! 2026-07-28 (stateless: `server/discover`, every request stamped in `_meta`) or the
//! handshake era (`initialize`, 2025-11-25, 2025-06-18 and 2025-03-26). The server is
//! only a protocol face: what the tools are, and everything a call goes through
//! (policy, approval, sandbox, audit), is behind the [`Backend`] trait.
//!
//! # Layout
//!
//! The modules are private; what a user names is re-exported here.
//!
//! * `backend`: the [`Backend`] trait and [`CallFailure`]; what a backend serves
//!   besides tools (`Offers`, `Prompt`, `Refusal`) is `wasmgate-core`'s; `tools`:
//!   [`ToolsBackend`], a backend over a set of `Tool` values.
//! * `config`: [`ServerConfig`], shared by both transports.
//! * `cluster`: [`Cluster`], what a replica shares with the others of its gateway
//!   (the request-state key, a `SharedStore` of spent states) and what it does not
//!   (sessions, whose ids name their replica: [`valid_replica`]).
//! * `engine`: the transport-neutral core: the era of each request, its answer,
//!   requests in flight (for cancellation) and change streams.
//! * `stdio`: [`serve_stdio`], newline-delimited JSON over a reader and a writer.
//! * `http`: [`serve_http`], Streamable HTTP on a listener the caller binds, with
//!   [`HttpConfig`]'s hardening: bearer token (or an [`Authenticator`]: the gateway as
//!   an OAuth resource server, its metadata at [`METADATA_PATH`]), `Origin` check, size
//!   limits, per-client concurrency, sessions for the handshake era.
//! * `shutdown`: the graceful shutdown both transports share: stop, grace, cancel.
//! * `error`: the [`ServeError`] type.
//!
//! Client input never panics the server: every message is size- and depth-checked by
//! `wasmgate-protocol` before it is parsed, and every failure is a JSON-RPC error.

mod backend;
mod cluster;
mod config;
mod engine;
mod error;
mod http;
mod shutdown;
mod stdio;
mod tools;

pub use backend::{Backend, CallFailure};
pub use cluster::{Cluster, valid_replica};
pub use config::ServerConfig;
pub use error::ServeError;
pub use http::{AuthFailure, Authenticator, HttpConfig, METADATA_PATH, bearer, serve_http};
pub use stdio::serve_stdio;
pub use tools::ToolsBackend;

/// The newline framing of stdio, for the `stdio_framing` target in `fuzz/`; not a stable
/// API.
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::stdio::{Line, next_line};
}
