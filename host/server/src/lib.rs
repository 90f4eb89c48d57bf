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
//! * [`backend`]: the [`Backend`] trait, [`CallFailure`], and the optional [`Offers`]
//!   (resources, prompts, completion) with their answers and [`Refusal`]; [`tools`]: [`ToolsBackend`],
//!   a backend over a set of `Tool` values.
//! * [`config`]: [`ServerConfig`], shared by both transports.
//! * [`cluster`]: [`Cluster`], what a replica shares with the others of its gateway
//!   (the request-state key, a `SharedStore` of spent states) and what it does not
//!   (sessions).
//! * `engine` (private): the transport-neutral core: the era of each request, its
//!   answer, requests in flight (for cancellation) and change streams.
//! * [`stdio`]: [`serve_stdio`], newline-delimited JSON over a reader and a writer.
//! * [`http`]: [`serve_http`], Streamable HTTP on a listener the caller binds, with
//!   [`HttpConfig`]'s hardening: bearer token, `Origin` check, size limits, per-client
//!   concurrency, sessions for the handshake era.
//! * `shutdown` (private): the graceful shutdown both transports share: stop, grace,
//!   cancel.
//! * [`error`]: the [`ServeError`] type.
//!
//! Client input never panics the server: every message is size- and depth-checked by
//! `wasmgate-protocol` before it is parsed, and every failure is a JSON-RPC error.

pub mod backend;
pub mod cluster;
pub mod config;
mod engine;
pub mod error;
pub mod http;
mod shutdown;
pub mod stdio;
pub mod tools;

pub use backend::{Backend, CallFailure};
pub use cluster::Cluster;
pub use config::ServerConfig;
pub use error::ServeError;
pub use http::{AuthFailure, Authenticator, Caller, HttpConfig, serve_http};
pub use stdio::serve_stdio;
pub use tools::ToolsBackend;
pub use wasmgate_protocol::server::ServerIdentity;
