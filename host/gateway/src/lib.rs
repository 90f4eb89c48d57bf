//! wasmgate assembled from its configuration: the providers of `wasmgate.toml` (stdio
//! servers spawned confined, Streamable HTTP servers, WASM tool components), the
//! sandbox and each provider's formatters and limits, the policy, the lock file, the
//! audit log and the guard. The CLI and the server face both start here.
//!
//! # Layout
//!
//! The modules are private; what a user names is re-exported here.
//!
//! * `config`: `wasmgate.toml` as types ([`Config`], [`ProviderConfig`], ...); `load`:
//!   reading it, with errors that name the line, the key and the fix;
//!   `oauth_settings`: an HTTP provider's `[providers.NAME.oauth]` table;
//! * `mcp_servers`: importing a desktop client's `mcpServers` JSON as providers
//!   ([`read_mcp_servers`]);
//! * `code`: each provider's code (programs, scripts, components, formatters), pinned
//!   in the lock file by role ([`review_code`], [`approve_code`]);
//! * `gateway`: [`Gateway::start`], every provider started (or withheld and retried)
//!   before anything is served, and what a running gateway answers ([`Readiness`]);
//! * `providers`: each provider built from the configuration: its code checked, its
//!   screens, formatters and media check loaded, its client (a confined stdio child, or
//!   HTTP) or its component;
//! * `diagnose`: the likely cause of a stdio server that did not answer;
//! * `egress_log`: a provider's connections and lookups in the audit log, coalesced
//!   beyond a rate so that a flood is counted without filling it;
//! * `oauth`: the [`authorizer`] of an HTTP provider and where its tokens are kept
//!   ([`token_store`]);
//! * `backend`: [`GatewayBackend`], the guard's tools and content for the MCP server
//!   face;
//! * `resource_server`: [`JwtAuthenticator`], the gateway as an OAuth resource server
//!   for `serve --http`;
//! * `reload`: [`Gateway::reload`], the rules read again while running ([`Reloaded`]);
//! * `review`: [`Gateway::reviews`] and [`Gateway::decide`], reviewing through a
//!   running gateway ([`Reviews`], [`Decision`]);
//! * `webhook`: [`Webhook`], announcing each call that waits for a reviewer
//!   (`[serve.approvals]`), signed;
//! * `cluster`: [`Member`], a gateway as one replica of several, sharing a store
//!   (`[cluster]`);
//! * `replicas`: review decisions and asks waiting for reviewers shared by the
//!   replicas through the store ([`follow_reviews`], [`SignedAsks`]);
//! * `status`: every tool's state (allowed, ask, denied, unreviewed, changed);
//! * `error`: [`StartError`], which names what failed.

mod backend;
mod cluster;
mod code;
mod config;
mod diagnose;
mod egress_log;
mod error;
mod gateway;
mod load;
mod mcp_servers;
mod oauth;
mod oauth_settings;
mod providers;
mod reload;
mod replicas;
mod resource_server;
mod review;
mod status;
mod webhook;

pub use backend::GatewayBackend;
pub use cluster::{Anchoring, Member};
pub use code::{Code, CodeError, MAX_CODE_BYTES, Review, approve_code, review_code};
pub use config::{
    ApprovalsConfig, AuditConfig, ClusterConfig, Config, ConsoleConfig, DirConfig, HeaderConfig, LimitsConfig,
    MAX_PREPARED_INSTANCES, MetricsConfig, ProviderConfig, ProviderKind, ResourceServerConfig, SandboxSettings,
    ServeConfig, TracesConfig, TracesProtocol,
};
pub use error::StartError;
pub use gateway::{Gateway, Readiness};
pub use mcp_servers::read_mcp_servers;
pub use oauth::{authorizer, token_store};
pub use oauth_settings::{OAuthSettings, SecretConfig, SecretForm};
pub use providers::ProviderInfo;
pub use reload::Reloaded;
pub use replicas::{FOLLOW_INTERVAL, Following, SignedAsks, follow_reviews};
pub use resource_server::{JwtAuthenticator, ResourceServerError};
pub use review::{CodeReview, Decided, Decision, DefinitionReview, ReviewError, Reviews, code_reviews};
pub use status::{ToolState, ToolStatus};
pub use webhook::{MAX_IN_FLIGHT, MIN_SECRET_BYTES, Webhook, WebhookError, signature};
