//! What wasmgate's tests share, written once: a dev-dependency only.
//!
//! # Layout
//!
//! * `issuer`: an OAuth authorization server as a resource server sees one: Ed25519
//!   [`SigningKey`]s, the [`Jwks`] that publishes them on loopback, and an [`Issuer`]
//!   that signs access tokens for the gateway;
//! * `loopback`: HTTP servers on loopback: [`Loopback`], which answers every request
//!   with a handler, and [`answer_once`], which answers one request on a thread;
//! * `mcp` (feature `mcp`): `http_client`, an MCP client of a gateway over HTTP;
//! * `postgres`: [`Postgres`], a PostgreSQL of a test's own on a loopback port (as the
//!   `postgres` user when the tests run as root);
//! * `process`: child processes: [`Killed`] (killed when dropped), [`children`],
//!   [`is_running`];
//! * `redis`: [`Redis`], a `redis-server` of a test's own on a Unix socket.
//!
//! Every helper panics with a message that says what failed: they serve tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod issuer;
mod loopback;
#[cfg(feature = "mcp")]
mod mcp;
mod postgres;
mod process;
mod redis;

pub use issuer::{ISSUER, Issuer, Jwks, RESOURCE, SigningKey, now};
pub use loopback::{Loopback, Request, Response, answer_once};
#[cfg(feature = "mcp")]
pub use mcp::http_client;
pub use postgres::{POSTGRES_USER, Postgres};
pub use process::{Killed, children, is_running};
pub use redis::Redis;
