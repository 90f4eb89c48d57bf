//! The transport-neutral core: which era a request belongs to, and what answers it.
//!
//! A dual-era server decides per request (the 2026-07-28 versioning page):
//!
//! * `initialize` selects the handshake era for the connection (stdio) or a new session
//!   (HTTP), answering the client's version when we speak it, else our newest handshake
//!   version;
//! * a request whose `params._meta` names a protocol version is served statelessly: the
//!   stamp must be complete (else -32602) and the version one of our stateless versions
//!   (else -32022 with `{supported, requested}`);
//! * anything else is served in the handshake era the connection or session
//!   negotiated, and without one it is a stateless request missing its stamp (-32602).
//!   `ping` alone is answered before `initialize`, as the handshake era allows.
//!
//! [`Engine::route`] makes that decision without waiting on anything; what takes time
//! (listing, calling, subscribing) comes back as a [`Routed`] variant for the transport
//! to run where it runs its tasks ([`Routed::Run`] with a [`Job`]). The submodules:
//! `calls` (requests in flight, for cancellation), `answer` (listing, calling, reading,
//! prompts, completion), `watch` (change streams).

mod answer;

pub(crate) use answer::Around;
pub(crate) mod ask;
pub(crate) mod calls;
pub(crate) mod follow;
pub(crate) mod watch;

use std::sync::Arc;

use serde_json::{Map, Value};
use wasmgate_core::{CompleteParams, LogLevel};
use wasmgate_protocol::codes::{INVALID_PARAMS, METHOD_NOT_FOUND};
use wasmgate_protocol::server::{
    CallToolParams, GetPromptParams, ReadResourceParams, answer_initialize_version, discover_result,
    has_stateless_meta, initialize_result, parse_call_tool_params, parse_complete_params, parse_cursor,
    parse_get_prompt_params, parse_initialize_params, parse_read_resource_params, parse_resource_uri,
    parse_stateless_meta, unsupported_version_error,
};
use wasmgate_protocol::{
    CacheHints, Id, LISTEN, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, ProtocolVersion, Request,
    SubscriptionFilter, error_response, result_response,
};

use crate::backend::Backend;
use crate::config::ServerConfig;

/// How a request is served: the era, and the version it speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    /// After `initialize`, under the negotiated version (`None`: a `ping` before it).
    Handshake(Option<ProtocolVersion>),
    /// A 2026-07-28 request carrying its own stamp.
    Stateless(ProtocolVersion),
}

/// What to do with one request.
#[derive(Debug)]
pub(crate) enum Routed {
    /// Answer with this response.
    Reply(Value),
    /// Refused before dispatch (a missing or bad stamp, an unsupported version): an
    /// error response, HTTP 400.
    Refuse(Value),
    /// No such method in this era: -32601 (HTTP 404 for stateless requests).
    UnknownMethod(Value, Era),
    /// `initialize` succeeded: answer, and the connection or session now speaks
    /// `version`; `caps`: what the client declared it can be asked.
    Initialized { answer: Value, version: ProtocolVersion, caps: Caps },
    /// Work that takes time (listing, calling, reading): run it under a cancellation
    /// token and send its answer.
    Run { id: Id, version: ProtocolVersion, job: Job },
    /// `subscriptions/listen`: the tool changes the client asked for, if any.
    Listen { id: Id, version: ProtocolVersion, filter: SubscriptionFilter },
    /// A handshake-era `logging/setLevel`: the connection or session keeps the level for
    /// its later calls, and answers this.
    SetLevel { level: LogLevel, answer: Value },
    /// A handshake-era `resources/subscribe`: the connection or session follows `uri`
    /// (see the `follow` module) and answers `{}`, or the refusal.
    Subscribe { id: Id, version: ProtocolVersion, uri: String },
    /// A handshake-era `resources/unsubscribe`: the connection or session stops
    /// following `uri`, and answers this.
    Unsubscribe { uri: String, answer: Value },
}

/// A request that the backend answers, with its checked parameters.
#[derive(Debug)]
pub(crate) enum Job {
    /// `tools/list` from a cursor.
    ListTools(Option<String>),
    /// `tools/call`; `caps`: what a stateless request's stamp declares the client can be
    /// asked; `log`: the least severe level of log messages it wants (a stateless
    /// request's `_meta` logLevel; in the handshake era, the connection's level, set by
    /// whoever runs the job).
    Call { params: CallToolParams, caps: Caps, log: Option<LogLevel> },
    /// `resources/list` from a cursor.
    ListResources(Option<String>),
    /// `resources/templates/list` from a cursor.
    ListTemplates(Option<String>),
    /// `resources/read` of a URI; `caps` as for a call (a provider may ask for input).
    Read { params: ReadResourceParams, caps: Caps },
    /// `prompts/list` from a cursor.
    ListPrompts(Option<String>),
    /// `prompts/get`; `caps` as for a call (a provider may ask for input to fill it).
    GetPrompt { params: GetPromptParams, caps: Caps },
    /// `completion/complete`.
    Complete(CompleteParams),
}

impl Job {
    /// Whether the client asked for progress notifications (a `tools/call` with a
    /// progress token).
    pub(crate) fn wants_progress(&self) -> bool {
        matches!(self, Job::Call { params, .. } if params.progress_token.is_some())
    }

    /// Whether the client asked for log messages of a `tools/call`.
    pub(crate) fn wants_log(&self) -> bool {
        matches!(self, Job::Call { log: Some(_), .. })
    }

    /// Sets a handshake-era call's log level from its connection, unless it has one.
    pub(crate) fn log_at(&mut self, level: Option<LogLevel>) {
        if let Job::Call { log, .. } = self
            && log.is_none()
        {
            *log = level;
        }
    }

    /// Whether a provider may ask the client something while it runs (`tools/call`,
    /// `prompts/get`, `resources/read`).
    pub(crate) fn may_ask(&self) -> bool {
        matches!(self, Job::Call { .. } | Job::GetPrompt { .. } | Job::Read { .. })
    }
}

/// What a client can be asked, by the capabilities it declared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Caps {
    /// `elicitation`: questions to its user.
    pub(crate) elicitation: bool,
    /// `elicitation.url`: questions answered at a URL (2025-11-25 on).
    pub(crate) elicitation_url: bool,
    /// `sampling`: completions from its model.
    pub(crate) sampling: bool,
}

impl Caps {
    /// From a `ClientCapabilities` object.
    pub(crate) fn of(capabilities: &serde_json::Map<String, Value>) -> Self {
        Self {
            elicitation: capabilities.get("elicitation").is_some_and(Value::is_object),
            elicitation_url: capabilities.get("elicitation").and_then(|e| e.get("url")).is_some_and(Value::is_object),
            sampling: capabilities.get("sampling").is_some_and(Value::is_object),
        }
    }

    /// Whether it can be asked anything.
    pub(crate) fn any(self) -> bool {
        self.elicitation || self.sampling
    }
}

/// The log level a stateless request's `_meta` asks for, if any (an unknown name: none).
fn stamped_level(params: Option<&Map<String, Value>>) -> Option<LogLevel> {
    let meta = params?.get("_meta")?.as_object()?;
    LogLevel::parse(meta.get(wasmgate_protocol::META_LOG_LEVEL)?.as_str()?)
}

/// What a stateless stamp declares the client can be asked.
fn stamped(meta: Option<wasmgate_protocol::server::StatelessMeta>) -> Caps {
    meta.map_or_else(Caps::default, |m| Caps::of(&m.client_capabilities))
}

/// The server's core, shared by every connection.
pub(crate) struct Engine {
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) config: ServerConfig,
    /// Signs the state of approvals asked through `input_required` (`None` without a
    /// random source: then no question is deferred).
    approvals: Option<ask::Approvals>,
}

impl Engine {
    pub(crate) fn new(backend: Arc<dyn Backend>, config: ServerConfig) -> Self {
        let approvals = match &config.cluster {
            Some(cluster) => Some(ask::Approvals::shared(cluster.approval_key, Arc::clone(&cluster.store))),
            None => ask::Approvals::new(),
        };
        Self { backend, config, approvals }
    }

    /// The capabilities announced: tools (with change notifications) and whatever else
    /// the backend offers (resource and prompt lists with `listChanged` when it reports
    /// their changes).
    fn capabilities(&self) -> Map<String, Value> {
        let offers = self.backend.offers();
        let flag = |key: &str, on: bool| {
            let mut map = Map::new();
            map.insert(key.into(), Value::Bool(on));
            Value::Object(map)
        };
        let mut caps = Map::new();
        caps.insert("tools".into(), flag("listChanged", true));
        if offers.resources {
            let mut resources = Map::new();
            resources.insert("listChanged".into(), Value::Bool(self.backend.resource_changes().is_some()));
            if offers.subscriptions {
                resources.insert("subscribe".into(), Value::Bool(true));
            }
            caps.insert("resources".into(), Value::Object(resources));
        }
        if offers.prompts {
            caps.insert("prompts".into(), flag("listChanged", self.backend.prompt_changes().is_some()));
        }
        if offers.completions {
            caps.insert("completions".into(), Value::Object(Map::new()));
        }
        if offers.logging {
            caps.insert("logging".into(), Value::Object(Map::new()));
        }
        caps
    }

    /// Decides the era of `request` on a connection or session that negotiated
    /// `handshake` (if any), and routes it; see the module docs.
    pub(crate) fn route(&self, request: Request, handshake: Option<ProtocolVersion>) -> Routed {
        let Request { id, method, params } = request;
        let params = params.as_ref();
        // A stamped `initialize` is a 2026-07-28 request, and that era has no such
        // method: it falls through to -32601 (HTTP 404) below.
        if method == "initialize" && !has_stateless_meta(params) {
            return self.initialize(&id, params);
        }
        let era = if has_stateless_meta(params) || (handshake.is_none() && method != "ping") {
            match self.stateless_version(&id, params) {
                Ok(version) => Era::Stateless(version),
                Err(refusal) => return Routed::Refuse(refusal),
            }
        } else {
            Era::Handshake(handshake)
        };
        let invalid =
            |e: wasmgate_protocol::ProtocolError| error_response(Some(&id), INVALID_PARAMS, &e.to_string(), None);
        let offers = self.backend.offers();
        let params_of = params;
        let job = |parsed: Result<Job, wasmgate_protocol::ProtocolError>, version| match parsed {
            Ok(job) => Routed::Run { id: id.clone(), version, job },
            Err(e) => Routed::Reply(invalid(e)),
        };
        if let Era::Handshake(Some(version)) | Era::Stateless(version) = era {
            let stateless = matches!(era, Era::Stateless(_));
            let caps = || if stateless { stamped(parse_stateless_meta(params_of).ok()) } else { Caps::default() };
            let parsed = match method.as_str() {
                "tools/list" => Some(parse_cursor(params).map(Job::ListTools)),
                "tools/call" => Some(parse_call_tool_params(params).map(|params| Job::Call {
                    params,
                    caps: caps(),
                    log: if stateless && offers.logging { stamped_level(params_of) } else { None },
                })),
                "resources/list" if offers.resources => Some(parse_cursor(params).map(Job::ListResources)),
                "resources/templates/list" if offers.resources => Some(parse_cursor(params).map(Job::ListTemplates)),
                "resources/read" if offers.resources => {
                    Some(parse_read_resource_params(params).map(|params| Job::Read { params, caps: caps() }))
                }
                "prompts/list" if offers.prompts => Some(parse_cursor(params).map(Job::ListPrompts)),
                "prompts/get" if offers.prompts => {
                    Some(parse_get_prompt_params(params).map(|params| Job::GetPrompt { params, caps: caps() }))
                }
                "completion/complete" if offers.completions => Some(parse_complete_params(params).map(Job::Complete)),
                _ => None,
            };
            if let Some(parsed) = parsed {
                return job(parsed, version);
            }
        }
        match (era, method.as_str()) {
            (Era::Handshake(_), "ping") => Routed::Reply(result_response(&id, Map::new())),
            (Era::Handshake(Some(_)), "logging/setLevel") if offers.logging => {
                let level = params.and_then(|p| p.get("level")).and_then(Value::as_str).and_then(LogLevel::parse);
                match level {
                    Some(level) => Routed::SetLevel { level, answer: result_response(&id, Map::new()) },
                    None => Routed::Reply(error_response(
                        Some(&id),
                        INVALID_PARAMS,
                        "params.level must be one of debug, info, notice, warning, error, critical, alert, emergency",
                        None,
                    )),
                }
            }
            (Era::Handshake(Some(version)), "resources/subscribe") if offers.resources && offers.subscriptions => {
                match parse_resource_uri(params) {
                    Ok(uri) => Routed::Subscribe { id, version, uri },
                    Err(e) => Routed::Reply(invalid(e)),
                }
            }
            (Era::Handshake(Some(_)), "resources/unsubscribe") if offers.resources && offers.subscriptions => {
                match parse_resource_uri(params) {
                    Ok(uri) => Routed::Unsubscribe { uri, answer: result_response(&id, Map::new()) },
                    Err(e) => Routed::Reply(invalid(e)),
                }
            }
            (Era::Stateless(version), "server/discover") => {
                let result = discover_result(
                    version,
                    &self.config.versions,
                    self.capabilities(),
                    &self.config.info,
                    self.config.instructions.as_deref(),
                    CacheHints::default(),
                );
                Routed::Reply(result_response(&id, result))
            }
            (Era::Stateless(version), LISTEN) => {
                let filter = params.and_then(|p| p.get("notifications"));
                match filter.map(|f| SubscriptionFilter::parse(f, "params.notifications")) {
                    Some(Ok(filter)) => Routed::Listen { id, version, filter },
                    Some(Err(e)) => Routed::Reply(invalid(e)),
                    None => Routed::Reply(error_response(
                        Some(&id),
                        INVALID_PARAMS,
                        "missing required field params.notifications",
                        None,
                    )),
                }
            }
            _ => {
                let message = format!("Method not found: {method}");
                Routed::UnknownMethod(error_response(Some(&id), METHOD_NOT_FOUND, &message, None), era)
            }
        }
    }

    fn initialize(&self, id: &Id, params: Option<&Map<String, Value>>) -> Routed {
        let offered = match parse_initialize_params(params) {
            Ok(params) => params,
            Err(e) => return Routed::Refuse(error_response(Some(id), INVALID_PARAMS, &e.to_string(), None)),
        };
        let Some(version) = answer_initialize_version(&self.config.versions, &offered.protocol_version) else {
            // A modern-only server names what it speaks: the client's only diagnostic.
            let versions = &self.config.versions;
            return Routed::Refuse(unsupported_version_error(Some(id), versions, &offered.protocol_version));
        };
        tracing::debug!(offered = %offered.protocol_version, answered = %version, client = %offered.client_info, "initialize");
        let result =
            initialize_result(version, self.capabilities(), &self.config.info, self.config.instructions.as_deref());
        let caps = Caps::of(&offered.capabilities);
        Routed::Initialized { answer: result_response(id, result), version, caps }
    }

    /// The version of a stateless request, or the error response refusing it.
    fn stateless_version(&self, id: &Id, params: Option<&Map<String, Value>>) -> Result<ProtocolVersion, Value> {
        let meta = parse_stateless_meta(params).map_err(|e| {
            let message = format!(
                "Invalid params: a request needs _meta[\"{META_PROTOCOL_VERSION}\"] and \
                 _meta[\"{META_CLIENT_CAPABILITIES}\"], or an initialize first ({e})"
            );
            error_response(Some(id), INVALID_PARAMS, &message, None)
        })?;
        ProtocolVersion::parse(&meta.protocol_version)
            .filter(|v| v.is_stateless() && self.config.versions.contains(v))
            .ok_or_else(|| unsupported_version_error(Some(id), &self.config.versions, &meta.protocol_version))
    }
}
