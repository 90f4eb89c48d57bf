//! wasmgate assembled from its configuration: the providers of `wasmgate.toml` (stdio
//! servers spawned confined, Streamable HTTP servers, WASM tool components), the
//! sandbox and each provider's formatters and limits, the policy, the lock file, the
//! audit log and the guard. The CLI and the server face both start here.
//!
//! # Layout
//!
//! * [`config`]: `wasmgate.toml` ([`Config`]), checked with errors that name the line,
//!   the key and the fix;
//! * [`mcp_servers`]: importing a desktop client's `mcpServers` JSON as providers;
//! * [`code`]: each provider's code (programs, scripts, components, formatters), pinned
//!   in the lock file by role;
//! * [`start`]: [`Gateway::start`], every provider started (or withheld and retried)
//!   before anything is served;
//! * [`backend`]: [`GatewayBackend`], the guard's tools and content for the MCP server
//!   face;
//! * [`reload`]: [`Gateway::reload`], the rules read again while running;
//! * [`cluster`]: [`Member`](cluster::Member), a gateway as one replica of several,
//!   sharing a store (`[cluster]`);
//! * [`status`]: every tool's state (allowed, ask, denied, unreviewed, changed);
//! * [`error`]: [`StartError`], which names what failed.

pub mod backend;
pub mod cluster;
pub mod code;
pub mod config;
mod load;
mod diagnose;
pub mod error;
pub mod mcp_servers;
pub mod oauth;
mod oauth_settings;
pub mod reload;
pub mod resource_server;
pub mod start;
pub mod status;

pub use backend::GatewayBackend;
pub use config::{Config, ProviderConfig, ProviderKind};
pub use error::StartError;
pub use start::{Gateway, ProviderInfo};
pub use status::{ToolState, ToolStatus};
