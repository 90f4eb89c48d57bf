//! [`McpClient`]: one connection to one MCP server, over any [`Transport`].
//!
//! The client is a cheap handle (`Clone`) around shared state: a table of requests in
//! flight, the negotiated session, and the cached tool list. A reader task owns the
//! transport's inbound channel and routes every message: responses to their waiting
//! caller, notifications to the tool cache or a progress callback, server requests to a
//! reply. The modules:
//!
//! * `config`: [`ClientConfig`], [`CallOptions`], [`Progress`];
//! * `input`: the [`InputHandler`] seam for `input_required` and server requests;
//! * `in_flight`: the calls in flight, each with its handler and log receiver, for what
//!   a server sends that names no call;
//! * `router`: the in-flight table, the reader task and the one round-trip primitive
//!   (timeouts, cancellation, late and duplicate responses);
//! * `connect`: era detection (`server/discover`, then `initialize`) and negotiation;
//! * `tools`: `tools/list` paging, caps and the staleness-tracked cache;
//! * `paging`: the bounded page walk shared by `tools/list`, `resources/list`,
//!   `resources/templates/list` and `prompts/list`;
//! * `call`: `tools/call`, unknown-tool detection and `input_required` rounds;
//! * `resources`: `resources/list`, `resources/templates/list` and `resources/read`;
//! * `prompts`: `prompts/list`, `prompts/get` and `completion/complete`;
//! * `frames`: attributing an unparseable frame to the request it answered;
//! * `param_headers`: `x-mcp-header` tool parameters mirrored into HTTP headers;
//! * `notify`: what each server notification does (tool cache, subscriptions, progress);
//! * `noise`: counting what is dropped or only noted, logged at the 1st, 2nd, 4th, ...;
//! * `subscribe`: `resources/subscribe`, each URI followed by a [`ResourceSubscription`];
//! * `watch`: keeping open the stream that says the tool list changed
//!   (`subscriptions/listen`, or the handshake era's HTTP GET stream), [`ToolsWatch`].

use std::sync::atomic::AtomicI64;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use serde_json::{Map, Value};
use tokio::sync::watch as signal;
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;
use wasmgate_core::{Completion, CompletionRequest, PromptInfo, Resource, ResourceTemplate};
use wasmgate_protocol::{
    CallToolResult, ClientContext, GetPromptResult, Id, ProtocolVersion, ReadResourceResult, ServerInfo, ToolDefinition,
};

use crate::error::{ClientError, CloseReason};
use crate::transport::Transport;

mod call;
mod config;
mod connect;
mod frames;
mod in_flight;
mod input;
mod noise;
mod notify;
mod paging;
mod param_headers;
mod prompts;
mod resources;
mod router;
mod subscribe;
mod tools;
mod watch;

pub use config::{CallOptions, ClientConfig, LogFn, Progress, ProgressFn, ToolsWatchConfig};
pub use input::{InputDeclined, InputHandler, InputRequest, Resume};
pub use router::awaiting_answers;
pub use subscribe::{MAX_FOLLOWED, ResourceSubscription};
pub use watch::ToolsWatch;

/// A connection to one MCP server. Clones share the connection.
#[derive(Debug, Clone)]
pub struct McpClient {
    shared: Arc<Shared>,
}

/// What the opening negotiated.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub(crate) context: ClientContext,
    pub(crate) server_info: Option<ServerInfo>,
    pub(crate) capabilities: Map<String, Value>,
    pub(crate) instructions: Option<String>,
    /// Bumped by every re-initialization, so concurrent callers re-initialize once.
    pub(crate) epoch: u64,
}

impl Session {
    pub(crate) fn version(&self) -> ProtocolVersion {
        self.context.version()
    }
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) server: String,
    pub(crate) transport: Arc<dyn Transport>,
    pub(crate) config: ClientConfig,
    pub(crate) next_id: AtomicI64,
    pub(crate) table: Mutex<router::Table>,
    pub(crate) session: RwLock<Option<Session>>,
    /// Bumped by `notifications/tools/list_changed`, an unknown-tool error, and a tool
    /// change stream (re)opening; the cache is stale when it was filled under another value.
    pub(crate) tools_generation: signal::Sender<u64>,
    /// Moved by each `notifications/resources/list_changed`.
    pub(crate) resource_changes: signal::Sender<u64>,
    /// Moved by each `notifications/prompts/list_changed`.
    pub(crate) prompt_changes: signal::Sender<u64>,
    /// Whether a stream tells us of tool changes (see the `watch` module).
    pub(crate) tools_watch: signal::Sender<ToolsWatch>,
    /// The id of the open `subscriptions/listen` request.
    pub(crate) listening: Mutex<Option<Id>>,
    /// The task keeping the tool change stream open.
    pub(crate) watcher: Mutex<Option<AbortHandle>>,
    pub(crate) tools_cache: Mutex<Option<tools::Cache>>,
    /// Serialises refreshes of the tool list.
    pub(crate) refresh: tokio::sync::Mutex<()>,
    /// Serialises re-initializations after an expired HTTP session.
    pub(crate) reinit: tokio::sync::Mutex<()>,
    pub(crate) reader: Mutex<Option<AbortHandle>>,
    /// Permits for answers to server requests still being produced or sent (see
    /// [`router::MAX_SERVER_REQUESTS_IN_FLIGHT`]).
    pub(crate) server_requests: Arc<tokio::sync::Semaphore>,
    /// What the server sent that was dropped or only noted, counted for the log.
    pub(crate) noise: noise::Noise,
    /// The calls in flight and their own input handlers.
    pub(crate) calls_in_flight: in_flight::CallsInFlight,
    /// The resources followed (`resources/subscribe`).
    pub(crate) followed: Mutex<subscribe::Followed>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        let reader = self.reader.get_mut().unwrap_or_else(PoisonError::into_inner).take();
        let watcher = self.watcher.get_mut().unwrap_or_else(PoisonError::into_inner).take();
        for task in reader.into_iter().chain(watcher) {
            task.abort();
        }
    }
}

impl McpClient {
    /// Connects to `server` over `transport`: probes `server/discover`, falls back to
    /// `initialize`, and negotiates a version (see the `connect` module for the rules).
    /// On failure the transport is closed (a child process is stopped).
    ///
    /// # Errors
    ///
    /// [`ClientError::ConnectFailed`] naming the server and every attempt, or
    /// [`ClientError::UnsupportedVersion`] when the server speaks none of our versions.
    pub async fn connect(
        server: impl Into<String>,
        mut transport: impl Transport,
        config: ClientConfig,
    ) -> Result<Self, ClientError> {
        let server = server.into();
        let Some(inbound) = transport.take_inbound() else {
            transport.close().await;
            return Err(ClientError::ConnectFailed {
                server,
                tried: vec!["nothing: the transport's inbound channel was already taken".into()],
            });
        };
        let shared = Arc::new(Shared {
            server,
            transport: Arc::new(transport),
            config,
            next_id: AtomicI64::new(1),
            table: Mutex::new(router::Table::default()),
            session: RwLock::new(None),
            tools_generation: signal::Sender::new(0),
            resource_changes: signal::Sender::new(0),
            prompt_changes: signal::Sender::new(0),
            tools_watch: signal::Sender::new(ToolsWatch::Off),
            listening: Mutex::new(None),
            watcher: Mutex::new(None),
            tools_cache: Mutex::new(None),
            refresh: tokio::sync::Mutex::new(()),
            reinit: tokio::sync::Mutex::new(()),
            reader: Mutex::new(None),
            server_requests: Arc::new(tokio::sync::Semaphore::new(router::MAX_SERVER_REQUESTS_IN_FLIGHT)),
            noise: noise::Noise::default(),
            calls_in_flight: in_flight::CallsInFlight::default(),
            followed: Mutex::default(),
        });
        let reader = tokio::spawn(router::run(Arc::downgrade(&shared), inbound));
        if let Ok(mut slot) = shared.reader.lock() {
            *slot = Some(reader.abort_handle());
        }
        match connect::open(&shared).await {
            Ok(session) => {
                tracing::info!(server = %shared.server, version = %session.version(), "connected");
                shared.transport.set_protocol_version(session.version());
                if let Ok(mut slot) = shared.session.write() {
                    *slot = Some(session);
                }
                watch::start(&shared);
                Ok(Self { shared })
            }
            Err(error) => {
                shared.fail_all(CloseReason::ClosedByClient);
                shared.transport.close().await;
                Err(error)
            }
        }
    }

    /// Why the connection is closed (the server's process exited, the transport failed,
    /// or [`close`](Self::close) was called), or `None` while it is open.
    #[must_use]
    pub fn closed(&self) -> Option<CloseReason> {
        self.shared.closed_reason()
    }

    /// The server's configured name.
    #[must_use]
    pub fn server(&self) -> &str {
        &self.shared.server
    }

    /// The negotiated protocol version.
    #[must_use]
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.shared.session().ok().map(|s| s.version())
    }

    /// The server's self-reported identity (display only: untrusted).
    #[must_use]
    pub fn server_info(&self) -> Option<ServerInfo> {
        self.shared.session().ok().and_then(|s| s.server_info)
    }

    /// The server's `instructions` (untrusted text).
    #[must_use]
    pub fn instructions(&self) -> Option<String> {
        self.shared.session().ok().and_then(|s| s.instructions)
    }

    /// The server's declared capabilities.
    #[must_use]
    pub fn server_capabilities(&self) -> Map<String, Value> {
        self.shared.session().map(|s| s.capabilities).unwrap_or_default()
    }

    /// All tools, from the cache unless it is stale (see [`tools_stale`](Self::tools_stale)).
    ///
    /// # Errors
    ///
    /// Any request failure; [`ClientError::LimitExceeded`] past the tool, byte or page
    /// caps; [`ClientError::MalformedMessage`] for a malformed page, a repeated cursor or
    /// a tool name that appears twice.
    pub async fn list_tools(&self) -> Result<Vec<ToolDefinition>, ClientError> {
        tools::list(&self.shared).await
    }

    /// Whether the next [`list_tools`](Self::list_tools) will ask the server again: never
    /// fetched, `notifications/tools/list_changed` received, a call hit an unknown tool,
    /// or the stream that would announce changes is not open ([`ToolsWatch`]).
    #[must_use]
    pub fn tools_stale(&self) -> bool {
        tools::is_stale(&self.shared)
    }

    /// How the client learns of tool list changes: the current [`ToolsWatch`] and its
    /// changes (`borrow` it, or `wait_for` a state).
    #[must_use]
    pub fn tools_watch(&self) -> signal::Receiver<ToolsWatch> {
        self.shared.tools_watch.subscribe()
    }

    /// A counter that moves whenever the cached tool list becomes stale (a change
    /// notification, an unknown tool, a change stream opening), for hosts that refresh
    /// eagerly: `changed().await` on it, then [`list_tools`](Self::list_tools).
    #[must_use]
    pub fn tool_list_changes(&self) -> signal::Receiver<u64> {
        self.shared.tools_generation.subscribe()
    }

    /// A counter that moves with each `notifications/resources/list_changed` the server
    /// sends (resources are not cached: a host that serves them lists them again).
    #[must_use]
    pub fn resource_list_changes(&self) -> signal::Receiver<u64> {
        self.shared.resource_changes.subscribe()
    }

    /// The same for `notifications/prompts/list_changed`.
    #[must_use]
    pub fn prompt_list_changes(&self) -> signal::Receiver<u64> {
        self.shared.prompt_changes.subscribe()
    }

    /// Calls a tool with the default options. A tool that ran and failed is
    /// `Ok` with `is_error: true`.
    ///
    /// # Errors
    ///
    /// See [`ClientError`]: `UnknownTool`, `Timeout`, `Cancelled`, `TransportClosed`,
    /// `MalformedMessage`, `Unsupported` (input nobody can give), `Rpc`, ...
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        cancel: CancellationToken,
    ) -> Result<CallToolResult, ClientError> {
        call::call_tool(&self.shared, name, arguments, &cancel, CallOptions::default()).await
    }

    /// [`call_tool`](Self::call_tool) with a timeout override and a progress callback.
    ///
    /// # Errors
    ///
    /// As [`call_tool`](Self::call_tool).
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        cancel: CancellationToken,
        options: CallOptions,
    ) -> Result<CallToolResult, ClientError> {
        call::call_tool(&self.shared, name, arguments, &cancel, options).await
    }

    /// All resources the server lists, every page, fetched afresh each time (no cache).
    /// A server that did not declare the `resources` capability is not asked: the
    /// answer is an empty list.
    ///
    /// # Errors
    ///
    /// Any request failure; [`ClientError::LimitExceeded`] past the resource
    /// ([`ClientConfig::max_resources`]), byte or page caps; [`ClientError::MalformedMessage`]
    /// for a malformed page, a repeated cursor or a URI that appears twice.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, ClientError> {
        resources::list(&self.shared).await
    }

    /// Reads the resource at `uri`, within [`ClientConfig::request_timeout`]. Cancelling
    /// `cancel` abandons the read and tells the server, as for [`call_tool`](Self::call_tool).
    ///
    /// # Errors
    ///
    /// [`ClientError::Unsupported`] when the server did not declare the `resources`
    /// capability, or asks for input and no input handler answers; `Timeout`, `Cancelled`, `TransportClosed`,
    /// `MalformedMessage` (contents that are not exactly one of text or blob, ...), and
    /// [`ClientError::Rpc`] for the server's own refusal (an unknown URI is -32602, or
    /// -32002 before 2026-07-28).
    pub async fn read_resource(&self, uri: &str, cancel: CancellationToken) -> Result<ReadResourceResult, ClientError> {
        resources::read(&self.shared, uri, &cancel, CallOptions::default()).await
    }

    /// [`read_resource`](Self::read_resource) with a call's options: a timeout override,
    /// and who answers the server's `input_required` rounds and how (as for
    /// [`call_tool_with`](Self::call_tool_with); progress is not asked for).
    ///
    /// # Errors
    ///
    /// As [`read_resource`](Self::read_resource), and as a call for its input:
    /// [`ClientError::InputDeferred`] when its handler put a request off to its caller.
    pub async fn read_resource_with(
        &self,
        uri: &str,
        cancel: CancellationToken,
        options: CallOptions,
    ) -> Result<ReadResourceResult, ClientError> {
        resources::read(&self.shared, uri, &cancel, options).await
    }

    /// Follows changes to the content of the resource at `uri` until the subscription is
    /// dropped (see the `subscribe` module).
    ///
    /// # Errors
    ///
    /// [`ClientError::Unsupported`] when the server does not offer subscriptions or will
    /// not follow this URI; [`ClientError::LimitExceeded`] past
    /// [`MAX_FOLLOWED`](subscribe::MAX_FOLLOWED) URIs; the request's own failures.
    pub async fn subscribe_resource(&self, uri: &str) -> Result<ResourceSubscription, ClientError> {
        subscribe::subscribe(&self.shared, uri).await
    }

    /// All resource templates the server lists, every page, fetched afresh each time (no
    /// cache). A server that did not declare the `resources` capability is not asked: the
    /// answer is an empty list.
    ///
    /// # Errors
    ///
    /// Any request failure; [`ClientError::LimitExceeded`] past the template
    /// ([`ClientConfig::max_resources`]), byte or page caps;
    /// [`ClientError::MalformedMessage`] for a malformed page, a repeated cursor or a URI
    /// template that appears twice.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ClientError> {
        resources::list_templates(&self.shared).await
    }

    /// All prompts the server lists, every page, fetched afresh each time (no cache). A
    /// server that did not declare the `prompts` capability is not asked: the answer is
    /// an empty list.
    ///
    /// # Errors
    ///
    /// Any request failure; [`ClientError::LimitExceeded`] past the prompt
    /// ([`ClientConfig::max_prompts`]), byte or page caps; [`ClientError::MalformedMessage`]
    /// for a malformed page (a prompt with too many or repeated arguments, ...), a
    /// repeated cursor or a prompt name that appears twice.
    pub async fn list_prompts(&self) -> Result<Vec<PromptInfo>, ClientError> {
        prompts::list(&self.shared).await
    }

    /// Gets the prompt `name`, filled in with `arguments` (each value a string), within
    /// [`ClientConfig::request_timeout`]. Cancelling `cancel` abandons the request and
    /// tells the server, as for [`call_tool`](Self::call_tool).
    ///
    /// # Errors
    ///
    /// [`ClientError::Unsupported`] when the server did not declare the `prompts`
    /// capability, or asks for input and no input handler answers; [`ClientError::InvalidRequest`] (nothing
    /// sent) for an argument that is not a string; `Timeout`, `Cancelled`,
    /// `TransportClosed`, `MalformedMessage` (a message with an unknown role, too many
    /// messages, ...), and [`ClientError::Rpc`] for the server's own refusal (an unknown
    /// prompt or a missing argument is -32602).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        cancel: CancellationToken,
    ) -> Result<GetPromptResult, ClientError> {
        prompts::get(&self.shared, name, &arguments, &cancel, CallOptions::default()).await
    }

    /// [`get_prompt`](Self::get_prompt) with a call's options: a timeout override, and
    /// who answers the server's `input_required` rounds and how (as for
    /// [`call_tool_with`](Self::call_tool_with); progress is not asked for).
    ///
    /// # Errors
    ///
    /// As [`get_prompt`](Self::get_prompt), and as a call for its input:
    /// [`ClientError::InputDeferred`] when its handler put a request off to its caller.
    pub async fn get_prompt_with(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        cancel: CancellationToken,
        options: CallOptions,
    ) -> Result<GetPromptResult, ClientError> {
        prompts::get(&self.shared, name, &arguments, &cancel, options).await
    }

    /// Asks for completions of one argument of a prompt or resource template, within
    /// [`ClientConfig::request_timeout`]. Cancelling `cancel` abandons the request and
    /// tells the server.
    ///
    /// # Errors
    ///
    /// [`ClientError::Unsupported`] when the server did not declare the `completions`
    /// capability; [`ClientError::InvalidRequest`] (nothing sent) for a reference that
    /// is not a prompt or resource template reference, or a context argument that is not
    /// a string; `Timeout`, `Cancelled`, `TransportClosed`, `MalformedMessage` (more than
    /// 100 values, a value that is not a string, ...), and [`ClientError::Rpc`] for the
    /// server's own refusal.
    pub async fn complete(
        &self,
        params: CompletionRequest,
        cancel: CancellationToken,
    ) -> Result<Completion, ClientError> {
        prompts::complete(&self.shared, &params, &cancel).await
    }

    /// Ends the tool change subscription, fails every call in flight, closes the
    /// transport, and reports how the server ended (a process's exit status). Idempotent.
    pub async fn close(&self) -> CloseReason {
        watch::stop(&self.shared).await;
        self.shared.fail_all(CloseReason::ClosedByClient);
        self.shared.transport.close().await
    }
}

impl Shared {
    pub(crate) fn session(&self) -> Result<Session, ClientError> {
        self.session.read().ok().and_then(|s| s.clone()).ok_or_else(|| ClientError::TransportClosed {
            reason: self.closed_reason().unwrap_or(CloseReason::ClosedByClient),
        })
    }
}
