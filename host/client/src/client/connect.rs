//! Opening a connection: which era the server speaks, and which version.
//!
//! The rules, from the 2026-07-28 versioning and transport pages:
//!
//! 1. If we may speak a stateless version, probe `server/discover` with the newest one.
//!    * A `DiscoverResult`: a modern server. Take the highest version both sides list.
//!      If there is none and we may speak a handshake version, still try `initialize`
//!      (a dual-era server lists only its modern versions in `server/discover`).
//!    * `UnsupportedProtocolVersion` (-32022): a modern server; its `data.supported`
//!      decides. A stateless version in common is probed once more (even the one just
//!      refused: the retry a server may expect, bounded at one); a handshake version
//!      goes to `initialize`; none is [`ClientError::UnsupportedVersion`].
//!    * `HeaderMismatch` / `MissingRequiredClientCapability` (-32020/-32021): a modern
//!      server that refuses our request: no fallback, the connection fails.
//!    * Any other JSON-RPC error (old servers answer -32601 "method not found", or
//!      -32600/-32602 "not initialized"), no answer within `probe_timeout`, an
//!      unparseable answer, or HTTP 400/404/405 without a JSON-RPC body: a handshake-era
//!      server. Fall back.
//!    * Anything else (the process died, the connection was refused, HTTP 401/403/5xx)
//!      says nothing about the era: stop.
//! 2. `initialize` with the newest handshake version (or the one -32022 named), check
//!    the version the server answers is one of ours, then `notifications/initialized`.
//!
//! When nothing works the error names the server and lists every attempt and its answer.
//!
//! A handshake-era HTTP session can expire (404); [`request`] then initializes again,
//! once for all concurrent callers, and retries the request under a new id.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wasmgate_protocol::codes::{UNSUPPORTED_PROTOCOL_VERSION, is_modern_error};
use wasmgate_protocol::{
    ClientContext, DiscoverResult, ErrorObject, Id, ProtocolVersion, check_initialize_version, negotiate,
    parse_discover_result, parse_initialize_result, parse_unsupported_version,
};

use super::router::Reply;
use super::{Session, Shared};
use crate::error::{ClientError, TransportError};

/// Finds the era and version, or says why not.
pub(crate) async fn open(shared: &Arc<Shared>) -> Result<Session, ClientError> {
    let ours = &shared.config.versions;
    let modern: Vec<ProtocolVersion> = ours.iter().copied().filter(|v| v.is_stateless()).collect();
    let legacy: Vec<ProtocolVersion> = ours.iter().copied().filter(|v| !v.is_stateless()).collect();
    let mut tried = Vec::new();
    let mut offer = legacy.iter().max().copied();
    let mut probe = modern.iter().max().copied();
    let mut probes_left = 2;
    while let Some(version) = probe.take() {
        probes_left -= 1;
        let what = format!("server/discover ({version})");
        match discover(shared, version).await {
            Ok(found) => match found.negotiate(&modern) {
                Some(chosen) => {
                    return Ok(Session {
                        context: context(shared, chosen),
                        server_info: found.server_info,
                        capabilities: found.capabilities,
                        instructions: found.instructions,
                        epoch: 0,
                    });
                }
                None => {
                    let offered = found.supported_versions;
                    tried.push(format!("{what}: the server supports {offered:?}, none of ours"));
                    if offer.is_none() {
                        return Err(ClientError::UnsupportedVersion { offered });
                    }
                }
            },
            Err(ClientError::Rpc { code: UNSUPPORTED_PROTOCOL_VERSION, message, data }) => {
                let error = ErrorObject { code: UNSUPPORTED_PROTOCOL_VERSION, message, data };
                let offered = parse_unsupported_version(&error).map(|u| u.supported).unwrap_or_default();
                tried.push(format!("{what}: unsupported version, the server supports {offered:?}"));
                match negotiate(ours, &offered) {
                    // The same version again too: a server may refuse a first request
                    // (its version list is the answer); the probes stay bounded.
                    Some(v) if v.is_stateless() && probes_left > 0 => probe = Some(v),
                    Some(v) if !v.is_stateless() => offer = Some(v),
                    _ => return Err(ClientError::UnsupportedVersion { offered }),
                }
            }
            Err(error @ ClientError::Rpc { code, .. }) if is_modern_error(code) => {
                tried.push(format!("{what}: {error}"));
                return Err(failed(shared, tried));
            }
            Err(error) if means_handshake_era(&error) => tried.push(format!("{what}: {error}")),
            Err(error) => {
                tried.push(format!("{what}: {error}"));
                return Err(failed(shared, tried));
            }
        }
    }
    let Some(version) = offer else {
        if tried.is_empty() {
            tried.push("nothing: no protocol versions are configured".into());
        }
        return Err(failed(shared, tried));
    };
    match initialize(shared, version, &legacy).await {
        Ok(session) => Ok(session),
        Err(error @ ClientError::UnsupportedVersion { .. }) => Err(error),
        Err(error) => {
            tried.push(format!("initialize ({version}): {error}"));
            Err(failed(shared, tried))
        }
    }
}

fn failed(shared: &Shared, tried: Vec<String>) -> ClientError {
    ClientError::ConnectFailed { server: shared.server.clone(), tried }
}

/// Whether a failed probe identifies a handshake-era server (see the module docs).
fn means_handshake_era(error: &ClientError) -> bool {
    match error {
        ClientError::Rpc { .. } | ClientError::Timeout { .. } | ClientError::MalformedMessage { .. } => true,
        ClientError::Http { status, .. } => matches!(status, 400 | 404 | 405),
        _ => false,
    }
}

fn context(shared: &Shared, version: ProtocolVersion) -> ClientContext {
    ClientContext::new(version, shared.config.info.clone(), shared.config.capabilities.clone())
}

/// Probes `server/discover` under `version`.
async fn discover(shared: &Arc<Shared>, version: ProtocolVersion) -> Result<DiscoverResult, ClientError> {
    let id = shared.next_id();
    let message = context(shared, version).discover(&id)?;
    let reply =
        shared.round_trip("server/discover", id, message, Vec::new(), shared.config.probe_timeout, None).await?;
    Ok(parse_discover_result(&Value::Object(reply.result))?)
}

/// `initialize` offering `version`; the answer must be one of `acceptable`.
async fn initialize(
    shared: &Arc<Shared>,
    version: ProtocolVersion,
    acceptable: &[ProtocolVersion],
) -> Result<Session, ClientError> {
    let id = shared.next_id();
    let message = context(shared, version).initialize(&id)?;
    let reply = shared.round_trip("initialize", id, message, Vec::new(), shared.config.request_timeout, None).await?;
    let init = parse_initialize_result(&Value::Object(reply.result))?;
    let chosen = check_initialize_version(acceptable, &init.protocol_version)
        .map_err(|_| ClientError::UnsupportedVersion { offered: vec![init.protocol_version.clone()] })?;
    let context = context(shared, chosen);
    shared.transport.set_protocol_version(chosen);
    // Bounded like every other send: a stdio server that stopped reading its input, or
    // an HTTP server that never answers the POST, would otherwise hold `connect` (and a
    // gateway's start-up) forever.
    let limit = shared.config.request_timeout;
    match tokio::time::timeout(limit, shared.transport.send(context.initialized()?)).await {
        Ok(sent) => sent?,
        Err(_) => return Err(ClientError::Timeout { method: "notifications/initialized".into(), after: limit }),
    }
    Ok(Session {
        context,
        server_info: Some(init.server_info),
        capabilities: init.capabilities,
        instructions: init.instructions,
        epoch: 0,
    })
}

/// Builds a request from the current session and an id.
pub(crate) type Build<'a> = &'a (dyn Fn(&Session, &Id) -> Result<Value, ClientError> + Send + Sync);

/// One request under the current session; after an expired HTTP session, initializes
/// again and retries once. Returns the answer and the session it was sent under.
pub(crate) async fn request(
    shared: &Arc<Shared>,
    method: &str,
    build: Build<'_>,
    headers: &[(String, String)],
    timeout: Duration,
    cancel: Option<&CancellationToken>,
) -> Result<(Reply, Session), ClientError> {
    let session = shared.session()?;
    let id = shared.next_id();
    let message = build(&session, &id)?;
    match shared.round_trip(method, id, message, headers.to_vec(), timeout, cancel).await {
        Err(ClientError::Transport(TransportError::SessionExpired)) if !session.version().is_stateless() => {
            reinitialize(shared, session.epoch).await?;
            let session = shared.session()?;
            let id = shared.next_id();
            let message = build(&session, &id)?;
            let reply = shared.round_trip(method, id, message, headers.to_vec(), timeout, cancel).await?;
            Ok((reply, session))
        }
        outcome => outcome.map(|reply| (reply, session)),
    }
}

/// Initializes again after the session of `seen_epoch` expired, once for all callers.
pub(crate) async fn reinitialize(shared: &Arc<Shared>, seen_epoch: u64) -> Result<(), ClientError> {
    let _one_at_a_time = shared.reinit.lock().await;
    let current = shared.session()?;
    if current.epoch != seen_epoch {
        return Ok(());
    }
    tracing::info!(server = %shared.server, "HTTP session expired; initializing again");
    let mut session = initialize(shared, current.version(), &[current.version()]).await?;
    session.epoch = seen_epoch + 1;
    if let Ok(mut slot) = shared.session.write() {
        *slot = Some(session);
    }
    Ok(())
}
