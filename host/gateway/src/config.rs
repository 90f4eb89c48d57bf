//! `wasmgate.toml`: how to reach each provider and where the gateway keeps its state.
//! What providers may do is the policy file's business (docs/POLICY.md); this file says
//! only how to start or reach them. Relative paths are relative to this file's directory.
//!
//! ```toml
//! policy = "policy.toml"          # default: policy.toml next to this file
//! lock = "wasmgate.lock"          # default: wasmgate.lock next to this file
//! state_dir = "state"             # provider working directories; default: $XDG_STATE_HOME/wasmgate
//! mcp_servers = "claude.json"     # optional: import a desktop client's `mcpServers`
//!
//! [audit]
//! path = "audit.jsonl"            # default: <state_dir>/audit.jsonl
//! durability = "every-call"       # or "batched" (with batch_ms) or "off"
//! key_file = "audit.key"          # optional: a keyed chain (HMAC-SHA256), 0600, 32+ bytes
//! rotate_mb = 64                  # the file is renamed audit.jsonl.N at this size; 0: never
//!
//! [limits]                        # formatter limits, unless the policy overrides them
//! deadline_ms = 1000
//!
//! [providers.calendar]            # a stdio MCP server, spawned confined
//! command = "python3"
//! args = ["calendar_server.py"]
//! env = { TZ = "UTC" }
//! read_exec = ["/opt/python"]     # extra paths it needs to run
//!
//! [providers.search]              # a Streamable HTTP MCP server
//! url = "https://search.example/mcp"
//! token_env = "SEARCH_TOKEN"
//! headers = { "X-Api-Key" = { env = "SEARCH_KEY" } }   # or a value: { "X-Team" = "blue" }
//! call_timeout_ms = 30000         # one tools/call may take this long (default 120 s)
//! # or, instead of token_env, OAuth 2.1 (see the `oauth` module): `wasmgate login search`
//! # oauth = { client_id = "wasmgate", client_secret = { env = "SEARCH_SECRET" }, issuer = "https://auth.example" }
//! required = true                 # the gateway does not start without it (default: withheld, retried)
//!
//! [providers.diary]               # a WASM tool component
//! component = "diary.wasm"
//! dirs = [{ host = "diary-data", guest = "/data", read_only = false }]
//!
//! [serve.oauth]                   # optional: `serve --http` accepts these access tokens
//! issuer = "https://auth.example.com"
//! resource = "https://gateway.example.com/mcp"
//! jwks_uri = "https://auth.example.com/.well-known/jwks.json"
//! scopes = ["mcp"]
//!
//! [serve.metrics]                 # optional: Prometheus text at /metrics of `serve --http`
//! enabled = true                  # the default; false counts nothing
//! token_env = "METRICS_TOKEN"     # a scraper's own bearer token (else /mcp's credentials)
//!
//! [serve.traces]                  # optional: a span per stage of each call, over OTLP/HTTP
//! endpoint = "http://127.0.0.1:4318/v1/traces"
//! protocol = "http/protobuf"      # the default; or "http/json"
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The largest configuration file read.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// `[cluster]`: this gateway is one of several replicas behind a load balancer, sharing
/// a Redis store (docs/DEPLOY.md).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    /// This replica's name: in every audit record and session id (letters, digits, `-`
    /// and `_`, at most 32).
    pub replica: String,
    /// The store's URL, `redis://HOST:PORT/DB` (give a password through `store_env`).
    pub store: Option<String>,
    /// The environment variable holding the store's URL instead (with its password).
    pub store_env: Option<String>,
    /// The secret every replica signs request states with (at least 32 bytes, readable
    /// by its owner only); the same file on every replica.
    pub approval_key_file: PathBuf,
    /// How often the audit log's last durable record is anchored in the store.
    #[serde(default = "anchor_interval_ms")]
    pub anchor_interval_ms: u64,
    /// The longest one operation on the store may take before it counts as failed.
    #[serde(default = "store_timeout_ms")]
    pub store_timeout_ms: u64,
    /// Whether the load balancer keeps a handshake-era session on the replica that
    /// opened it (by `Mcp-Session-Id`). Without it, `initialize` is refused and clients
    /// are told to use 2026-07-28, which needs no session.
    #[serde(default)]
    pub affinity: bool,
}

fn anchor_interval_ms() -> u64 {
    1000
}

fn store_timeout_ms() -> u64 {
    1000
}

/// How `wasmgate serve` lets callers in.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ServeConfig {
    /// The HTTP face as an OAuth 2.1 resource server (`[serve.oauth]`).
    pub oauth: Option<ResourceServerConfig>,
    /// `GET /metrics` over HTTP (`[serve.metrics]`).
    #[serde(default)]
    pub metrics: MetricsConfig,
    /// Traces over OTLP (`[serve.traces]`); none by default.
    pub traces: Option<TracesConfig>,
    /// Proxies whose `X-Forwarded-For` is believed, as networks (`"127.0.0.1/32"`): a
    /// request from one counts, for every per-client bound, as from the client the
    /// header names. None by default: the header is ignored.
    #[serde(default)]
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// How calls waiting for a reviewer are announced (`[serve.approvals]`).
    #[serde(default)]
    pub approvals: ApprovalsConfig,
    /// The web console at `/console` (`[serve.console]`); off by default.
    pub console: Option<ConsoleConfig>,
}

/// `[serve.console]`: the web console at `/console` of `serve --http`, for the callers
/// the policy's `[console]` names, signed in through the authorization server that
/// issues the gateway's tokens (authorization code with PKCE).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ConsoleConfig {
    /// The console's client id at the authorization server (a public client).
    pub client_id: String,
    /// The authorization server's authorization endpoint.
    pub authorization_endpoint: String,
    /// Its token endpoint: `https`, or `http` to a loopback host (the gateway's own
    /// egress rules).
    pub token_endpoint: String,
    /// Where the authorization server sends the browser back: the gateway's public URL
    /// and `/console/callback`. Default: `http://ADDR/console/callback` for the address
    /// `--http` binds.
    pub redirect_uri: Option<String>,
    /// The scopes asked for (default: none named).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// How long a sign-in lasts, in minutes (default 60; 1 to 1440).
    pub session_minutes: Option<u64>,
}

/// `[serve.approvals]`: the webhook announcing each call that waits for a reviewer
/// (the policy's `ask_reviewers`); none by default.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ApprovalsConfig {
    /// Where each announcement is POSTed: `https`, or `http` to a loopback host.
    pub webhook: Option<String>,
    /// The environment variable holding the secret announcements are signed with (at
    /// least 32 bytes); required with `webhook`.
    pub secret_env: Option<String>,
}

/// `[serve.traces]`: a span per stage of every call, sent over OTLP/HTTP. The spans carry
/// names (provider, tool, verdict, outcome, caller), never an argument or a result.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TracesConfig {
    /// The collector's traces endpoint, e.g. `http://127.0.0.1:4318/v1/traces`.
    pub endpoint: String,
    /// `http/protobuf` (the default) or `http/json`.
    #[serde(default)]
    pub protocol: TracesProtocol,
}

/// How spans are encoded for the collector.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
pub enum TracesProtocol {
    /// OTLP/HTTP with protobuf bodies.
    #[default]
    #[serde(rename = "http/protobuf")]
    Protobuf,
    /// OTLP/HTTP with JSON bodies.
    #[serde(rename = "http/json")]
    Json,
}

/// `[serve.metrics]`: Prometheus metrics at `/metrics` of `wasmgate serve --http`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MetricsConfig {
    /// Whether they are kept and served (default true). Off, nothing is counted.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// The environment variable holding a bearer token a scraper may send instead of
    /// the credentials `/mcp` asks for.
    pub token_env: Option<String>,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        Self { enabled: true, token_env: None }
    }
}

/// `[serve.oauth]`: whose access tokens `wasmgate serve --http` accepts (the
/// `resource_server` module).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ResourceServerConfig {
    /// The authorization server that issues them (`iss`).
    pub issuer: String,
    /// The gateway's own MCP endpoint as clients reach it: the tokens' audience, and the
    /// `resource` of its protected resource metadata.
    pub resource: String,
    /// Where the issuer publishes its signing keys (a JWKS).
    pub jwks_uri: String,
    /// Scopes a token must carry, all of them (none by default).
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// Formatter limits (milliseconds and bytes), each optional.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// Wall-clock limit of one formatting.
    pub deadline_ms: Option<u64>,
    /// Memory of one formatting.
    pub memory_bytes: Option<u64>,
    /// Longest text a formatter may return.
    pub output_bytes: Option<u64>,
}

/// Where compiled components are cached.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SandboxSettings {
    /// The cache directory; default `$XDG_CACHE_HOME/wasmgate/components`.
    pub cache_dir: Option<PathBuf>,
    /// Compile in memory and cache nothing.
    #[serde(default)]
    pub no_cache: bool,
    /// Pool slots for component instances made ahead of their calls and stores torn down
    /// after them (docs/SANDBOX.md); default 16, 0 turns it off, at most
    /// [`MAX_PREPARED_INSTANCES`].
    #[serde(default, deserialize_with = "prepared_instances")]
    pub prepared_instances: Option<u32>,
}

/// The most `sandbox.prepared_instances`: each one reserves a pool slot's address space.
pub const MAX_PREPARED_INSTANCES: u32 = 256;

fn prepared_instances<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    let n = u32::deserialize(d)?;
    if n > MAX_PREPARED_INSTANCES {
        return Err(serde::de::Error::custom(format!(
            "{n} is too many: at most {MAX_PREPARED_INSTANCES} (each reserves a pool slot); the default is {}",
            wasmgate_sandbox::SandboxConfig::default().prepared_instances
        )));
    }
    Ok(Some(n))
}

/// One provider: exactly one of `command`, `url` or `component`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// A stdio server's program.
    pub command: Option<PathBuf>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Its whole environment (nothing else is inherited).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Extra paths it may read and execute (an interpreter outside the system paths).
    #[serde(default)]
    pub read_exec: Vec<PathBuf>,
    /// A Streamable HTTP server's URL.
    pub url: Option<String>,
    /// The environment variable holding its bearer token.
    pub token_env: Option<String>,
    /// Extra headers of every request to it: `{ env = "VAR" }` or a value.
    #[serde(default)]
    pub headers: BTreeMap<String, HeaderConfig>,
    /// OAuth 2.1 to it (`[providers.NAME.oauth]`, see `oauth`).
    pub oauth: Option<crate::oauth_settings::OAuthSettings>,
    /// A WASM tool component.
    pub component: Option<PathBuf>,
    /// The component's directory grants.
    #[serde(default)]
    pub dirs: Vec<DirConfig>,
    /// How long one `tools/call` to a stdio or HTTP server may take, in milliseconds
    /// (default: the client's, 120 s). A component's calls are bounded by the
    /// limits' `deadline_ms` instead.
    pub call_timeout_ms: Option<u64>,
    /// Whether the gateway may not start without this provider. By default a provider that
    /// cannot be started is withheld (its tools absent, the reason in `wasmgate tools` and
    /// the audit log) and tried again, and the others are served.
    #[serde(default)]
    pub required: bool,
    /// Whether its tool and prompt names are shown prefixed with the provider's name
    /// (`NAME__tool`, the default). `false` shows them as the provider wrote them (the
    /// drop-in mode); the gateway then refuses to start when another provider shows
    /// one of the same names.
    pub prefix: Option<bool>,
}

impl ProviderConfig {
    /// The names its tools and prompts are shown under.
    #[must_use]
    pub fn naming(&self) -> wasmgate_core::Naming {
        if self.prefix == Some(false) { wasmgate_core::Naming::AsIs } else { wasmgate_core::Naming::Prefixed }
    }
}

/// An extra header of an HTTP provider. `Debug` never shows a value.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum HeaderConfig {
    /// The value itself.
    Value(String),
    /// An environment variable of the gateway holding it.
    Env {
        /// The variable.
        env: String,
    },
}

impl std::fmt::Debug for HeaderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Value(_) => f.write_str("Value(<redacted>)"),
            Self::Env { env } => f.debug_struct("Env").field("env", env).finish(),
        }
    }
}

/// The first key set on `provider` that its kind does not use.
pub(crate) fn misplaced_key(provider: &ProviderConfig) -> Option<&'static str> {
    let kind = provider.kind();
    [
        ("args", !provider.args.is_empty(), ProviderKind::Stdio),
        ("env", !provider.env.is_empty(), ProviderKind::Stdio),
        ("read_exec", !provider.read_exec.is_empty(), ProviderKind::Stdio),
        ("token_env", provider.token_env.is_some(), ProviderKind::Http),
        ("headers", !provider.headers.is_empty(), ProviderKind::Http),
        ("oauth", provider.oauth.is_some(), ProviderKind::Http),
        ("dirs", !provider.dirs.is_empty(), ProviderKind::Component),
    ]
    .into_iter()
    .find(|(_, set, used_by)| *set && *used_by != kind)
    .map(|(key, ..)| key)
}

/// A directory granted to a WASM tool component.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct DirConfig {
    /// The host directory.
    pub host: PathBuf,
    /// Where the component sees it (absolute).
    pub guest: String,
    /// Read-only unless set to false.
    #[serde(default = "yes")]
    pub read_only: bool,
}

fn yes() -> bool {
    true
}

/// How a provider is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderKind {
    /// A stdio server.
    Stdio,
    /// A Streamable HTTP server.
    Http,
    /// A WASM tool component.
    Component,
}

/// How durable audit records are (docs/AUDIT.md).
use wasmgate_audit::Durability;

/// The audit settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditConfig {
    /// The log file.
    pub path: PathBuf,
    /// `every-call` (default), `batched` or `off`.
    pub durability: Durability,
    /// Argument keys redacted beyond the defaults.
    pub redact: Vec<String>,
    /// The key of a keyed chain, if any.
    pub key_file: Option<PathBuf>,
    /// The size the log file is rotated at (`rotate_mb`, default 64 MiB); `None` never.
    pub rotate_bytes: Option<u64>,
}

/// A loaded, checked `wasmgate.toml`, with every path made absolute.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file it came from.
    pub path: PathBuf,
    /// The policy file.
    pub policy: PathBuf,
    /// The lock file of reviewed definitions.
    pub lock: PathBuf,
    /// Where provider working directories live.
    pub state_dir: PathBuf,
    /// The audit log.
    pub audit: AuditConfig,
    /// Formatter limits.
    pub limits: LimitsConfig,
    /// The component cache.
    pub sandbox: SandboxSettings,
    /// The providers, by name.
    pub providers: BTreeMap<String, ProviderConfig>,
    /// How `wasmgate serve` lets callers in.
    pub serve: ServeConfig,
    /// The replicas this gateway shares its work with, if any.
    pub cluster: Option<ClusterConfig>,
}

impl ProviderConfig {
    /// Which kind this is (checked at load: exactly one).
    #[must_use]
    pub fn kind(&self) -> ProviderKind {
        if self.url.is_some() {
            ProviderKind::Http
        } else if self.component.is_some() {
            ProviderKind::Component
        } else {
            ProviderKind::Stdio
        }
    }

    /// How the kind is named in messages: `stdio`, `HTTP` or `component`.
    pub(crate) fn kind_name(&self) -> &'static str {
        match self.kind() {
            ProviderKind::Stdio => "stdio",
            ProviderKind::Http => "HTTP",
            ProviderKind::Component => "component",
        }
    }
}

/// A provider's `command` as written in a file in `base`: a bare name is left for the
/// `PATH` lookup when the server starts; a path with a separator is the file's, like
/// every other path in it.
pub(crate) fn file_relative_command(base: &Path, command: PathBuf) -> PathBuf {
    if command.components().count() > 1 { base.join(command) } else { command }
}

/// The text of a configuration file of at most [`MAX_CONFIG_BYTES`], read with that
/// bound (not from its metadata: a pipe or a device has no length until read).
pub(crate) fn read_bounded(path: &Path) -> std::io::Result<String> {
    let text = wasmgate_policy::read_capped_text(std::fs::File::open(path)?, MAX_CONFIG_BYTES)?;
    text.ok_or_else(|| std::io::Error::other(format!("the file is over {MAX_CONFIG_BYTES} bytes")))
}
