//! POST: one JSON-RPC message per request.
//!
//! * A notification or a response gets 202 (a `notifications/cancelled` naming a
//!   session's call cancels it first), even from a client at its concurrency limit
//!   (see [`guard`](super::guard)): they are what frees its requests.
//! * A stamped request is served statelessly, after its headers are checked; any
//!   `Mcp-Session-Id` is ignored, as 2026-07-28 asks.
//! * `initialize` opens a session; an unstamped request names its session (unknown:
//!   404, which tells the client to initialize again).
//!
//! Answers are JSON, except `subscriptions/listen`, whose answer is an event stream
//! that stays open. Statuses: 400 for a message refused before dispatch (parse error,
//! invalid request, missing stamp, unsupported version, header mismatch), 404 for a
//! stateless request to an unknown method, 429 with `Retry-After` for a stateless call
//! over its caller's budget, 200 for every other answer (an unknown tool
//! is a JSON-RPC error in a 200). A call's token is cancelled when the client closes
//! the connection (in 2026-07-28 that is how a client cancels) or, in a session, when
//! `notifications/cancelled` names it.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde_json::Value;
use tokio::sync::mpsc;
use wasmgate_core::{Caller, CancellationToken};
use wasmgate_protocol::codes::{
    HEADER_MISMATCH, INTERNAL_ERROR, INVALID_REQUEST, MISSING_REQUIRED_CLIENT_CAPABILITY, PARSE_ERROR, RATE_LIMITED,
    UNAVAILABLE,
};
use wasmgate_protocol::server::{has_stateless_meta, parse_cancelled};
use wasmgate_protocol::{Id, Message, ProtocolVersion, Request, classify, error_response, parse_message};

use super::Shared;
use super::guard::{OVER_LIMIT_BODY_BYTES, OverLimit, too_many};
use super::limit::Client;
use super::reply::{json, refuse, sse, status};
use super::sessions::{Refused, SESSION_ID, Session, named, repeated};
use crate::engine::Around;
use crate::engine::ask::Live;
use crate::engine::watch::{Listen, listen};
use crate::engine::{Era, Routed};

/// The POST handler; see the module docs.
pub(crate) async fn post(
    State(shared): State<Arc<Shared>>,
    over_limit: Option<Extension<OverLimit>>,
    client: Option<Extension<Client>>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let caller = caller.map(|Extension(caller)| Arc::new(caller));
    // The guard, which every request to the endpoint passes, says who the client is.
    let peer = client.map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |Extension(Client(client))| client);
    let over_limit = over_limit.is_some();
    let max_body_bytes = if over_limit { OVER_LIMIT_BODY_BYTES } else { shared.http.max_body_bytes };
    let read = tokio::time::timeout(shared.http.body_read_timeout, Limited::new(body, max_body_bytes).collect());
    let Ok(read) = read.await else {
        let message = format!("The request body did not arrive within {:?}", shared.http.body_read_timeout);
        return refuse(StatusCode::REQUEST_TIMEOUT, INVALID_REQUEST, &message);
    };
    let bytes = match read {
        Ok(collected) => collected.to_bytes(),
        Err(e) if over_limit && e.downcast_ref::<LengthLimitError>().is_some() => return too_many(),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
            let message = format!("Request body is over the limit of {} bytes", shared.http.max_body_bytes);
            return refuse(StatusCode::PAYLOAD_TOO_LARGE, INVALID_REQUEST, &message);
        }
        Err(_) => return refuse(StatusCode::BAD_REQUEST, INVALID_REQUEST, "The request body could not be read"),
    };
    if shared.life.stopping.is_cancelled() {
        return refuse(StatusCode::SERVICE_UNAVAILABLE, INTERNAL_ERROR, "The server is shutting down");
    }
    let value = match parse_message(&bytes, shared.engine.config.limits) {
        Ok(value) => value,
        Err(e) => return refuse(StatusCode::BAD_REQUEST, PARSE_ERROR, &format!("Parse error: {e}")),
    };
    let id = value.get("id").and_then(|id| Id::from_value(id).ok());
    let session = match named(&headers) {
        Ok(session) => session.map(str::to_owned),
        Err(error) => return repeated(&error),
    };
    match classify(value) {
        Ok(Message::Request(_)) if over_limit => too_many(),
        Ok(Message::Request(request)) => self::request(&shared, peer, &headers, session, request, caller).await,
        Ok(Message::Notification(n)) => {
            tracing::debug!(method = %n.method, session = session.is_some(), "notification");
            if n.method == "notifications/cancelled"
                && let Ok(cancelled) = parse_cancelled(n.params.as_ref())
                && let Some(session) = session.and_then(|s| shared.sessions.get(&s, caller.as_deref()))
            {
                session.in_flight.cancel(&cancelled.request_id);
            }
            status(StatusCode::ACCEPTED)
        }
        Ok(Message::Response(response)) => {
            if let Some(session) = session.and_then(|s| shared.sessions.get(&s, caller.as_deref())) {
                session.replies.resolve(&response.id, Some(Value::Object(response.result)));
            }
            status(StatusCode::ACCEPTED)
        }
        Ok(Message::ErrorResponse(response)) => {
            if let (Some(id), Some(session)) =
                (response.id, session.and_then(|s| shared.sessions.get(&s, caller.as_deref())))
            {
                session.replies.resolve(&id, None);
            }
            status(StatusCode::ACCEPTED)
        }
        Err(e) => json(
            StatusCode::BAD_REQUEST,
            &error_response(id.as_ref(), e.jsonrpc_code(), &format!("Invalid request: {e}"), None),
        ),
    }
}

async fn request(
    shared: &Arc<Shared>,
    peer: IpAddr,
    headers: &HeaderMap,
    session_id: Option<String>,
    request: Request,
    caller: Option<Arc<Caller>>,
) -> Response {
    let mut session = None;
    if has_stateless_meta(request.params.as_ref()) {
        let checked = match super::headers::check_stateless(headers, &request) {
            Ok(()) => param_headers(shared, headers, &request).await,
            mismatch => mismatch,
        };
        if let Err(mismatch) = checked {
            let message = format!("Header mismatch: {mismatch}");
            return json(StatusCode::BAD_REQUEST, &error_response(Some(&request.id), HEADER_MISMATCH, &message, None));
        }
    } else if request.method != "initialize"
        && let Some(session_id) = &session_id
    {
        let Some(found) = shared.sessions.get(session_id, caller.as_deref()) else {
            return refuse(StatusCode::NOT_FOUND, INVALID_REQUEST, &shared.sessions.not_found(session_id));
        };
        // The session's version governs how the request is read; a header naming another
        // version this server speaks in a session is allowed (the specification asks
        // clients to send the negotiated one, and refuses only unsupported ones), any
        // other is refused.
        let refused = match super::headers::single(headers, "mcp-protocol-version") {
            Err(error) => Some(format!("Invalid request: {error}")),
            Ok(Some(v)) if v.as_bytes() != found.version.as_str().as_bytes() => {
                let named = v.to_str().ok().and_then(ProtocolVersion::parse);
                let spoken =
                    named.is_some_and(|named| !named.is_stateless() && shared.engine.config.versions.contains(&named));
                (!spoken).then(|| {
                    format!(
                        "Unsupported MCP-Protocol-Version header: this session speaks {}, and the header names no \
                         version a session here speaks",
                        found.version
                    )
                })
            }
            Ok(_) => None,
        };
        if let Some(message) = refused {
            return json(StatusCode::BAD_REQUEST, &error_response(Some(&request.id), INVALID_REQUEST, &message, None));
        }
        session = Some(found);
    }
    // The conversation: a handshake-era session, or else (2026-07-28) the caller.
    let conversation: Arc<str> = match (&session, &session_id, &caller) {
        (Some(_), Some(id), _) => format!("session {id}").into(),
        (_, _, Some(caller)) => format!("caller {}", caller.subject).into(),
        _ => format!("client {peer}").into(),
    };
    let routed = shared.engine.route(request, session.as_ref().map(|s| s.version));
    dispatch(shared, peer, session, routed, (caller, conversation)).await
}

async fn dispatch(
    shared: &Arc<Shared>,
    peer: IpAddr,
    session: Option<Arc<Session>>,
    routed: Routed,
    (caller, conversation): (Option<Arc<Caller>>, Arc<str>),
) -> Response {
    let engine = &shared.engine;
    match routed {
        Routed::Reply(answer) => json(StatusCode::OK, &answer),
        Routed::Refuse(answer) => json(StatusCode::BAD_REQUEST, &answer),
        Routed::UnknownMethod(answer, Era::Stateless(_)) => json(StatusCode::NOT_FOUND, &answer),
        Routed::UnknownMethod(answer, Era::Handshake(_)) => json(StatusCode::OK, &answer),
        Routed::Initialized { .. } if engine.config.cluster.as_ref().is_some_and(|c| !c.affinity) => {
            let message = "This gateway is one of several replicas behind a load balancer that does not keep a \
                           session on one replica, so it opens no handshake-era sessions (initialize). Use protocol \
                           version 2026-07-28, which needs no session, or route by Mcp-Session-Id (docs/DEPLOY.md)";
            refuse(StatusCode::BAD_REQUEST, INVALID_REQUEST, message)
        }
        Routed::Initialized { answer, version, caps } => {
            match shared.sessions.create(peer, caller.as_deref(), version, caps, &shared.life) {
                Ok(id) => {
                    let mut response = json(StatusCode::OK, &answer);
                    if let Ok(value) = HeaderValue::from_str(&id) {
                        response.headers_mut().insert(SESSION_ID, value);
                    }
                    response
                }
                Err(Refused::Full) => refuse(StatusCode::SERVICE_UNAVAILABLE, INTERNAL_ERROR, "Too many open sessions"),
                Err(Refused::ClientFull) => {
                    let message = "Too many open sessions from this client: end one (DELETE) first";
                    refuse(StatusCode::TOO_MANY_REQUESTS, INVALID_REQUEST, message)
                }
                Err(Refused::NoRandomness) => {
                    refuse(StatusCode::INTERNAL_SERVER_ERROR, INTERNAL_ERROR, "No session id")
                }
            }
        }
        Routed::SetLevel { level, answer } => {
            if let Some(session) = &session {
                *session.log_level.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(level);
            }
            json(StatusCode::OK, &answer)
        }
        Routed::Subscribe { id, version, uri } => match &session {
            Some(session) => json(StatusCode::OK, &engine.subscribe(&session.followed, &id, version, uri).await),
            None => {
                let message = "resources/subscribe needs a session: initialize first";
                json(StatusCode::BAD_REQUEST, &error_response(Some(&id), INVALID_REQUEST, message, None))
            }
        },
        Routed::Unsubscribe { uri, answer } => {
            if let Some(session) = &session {
                session.followed.unsubscribe(&uri);
            }
            json(StatusCode::OK, &answer)
        }
        Routed::Run { id, version, mut job } => {
            if let Some(session) = &session {
                job.log_at(*session.log_level.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
            }
            let (ticket, token) = match &session {
                Some(session) => match session.in_flight.start(&id, &session.abort) {
                    Some(ticket) => {
                        let token = ticket.token();
                        (Some(ticket), token)
                    }
                    None => return duplicate(&id),
                },
                None => (None, shared.life.abort.child_token()),
            };
            // The call runs in a task of its own, so that a client closing the connection
            // (which drops this future or the stream, and with it the guard) cancels it
            // cooperatively: the backend sees its token fire and ends the call its own way.
            let cancel_when_dropped = token.clone().drop_guard();
            let owner = Arc::clone(shared);
            let asks = session.as_ref().filter(|s| s.caps.any() && job.may_ask());
            if job.wants_progress() || job.wants_log() || asks.is_some() {
                // Progress and questions go out on an SSE stream, the answer last; the
                // stream ends with it.
                let (tx, rx) = mpsc::channel::<Value>(PROGRESS_BACKLOG);
                let live = asks.map(|session| {
                    let (out, replies) = (tx.clone(), Arc::clone(&session.replies));
                    let (timeout, cancel) = (owner.engine.config.ask_timeout, token.clone());
                    Arc::new(Live { out, replies, timeout, cancel, caps: session.caps })
                });
                shared.life.tasks.spawn(async move {
                    let around = Around { notify: Some(tx.clone()), live, caller, conversation: Some(conversation) };
                    let answer = owner.engine.run(&id, version, job, token, around).await;
                    drop(ticket);
                    let _ = tx.send(answer).await;
                });
                return sse(rx, cancel_when_dropped);
            }
            let call = shared.life.tasks.spawn(async move {
                let around = Around { caller, conversation: Some(conversation), ..Around::default() };
                let answer = owner.engine.run(&id, version, job, token, around).await;
                drop(ticket);
                answer
            });
            match call.await {
                Ok(answer) => answered(&answer, version),
                Err(_) => refuse(StatusCode::INTERNAL_SERVER_ERROR, INTERNAL_ERROR, "The call failed"),
            }
        }
        Routed::Listen { id, version, filter } => {
            let (tx, rx) = mpsc::channel::<Value>(16);
            let cancelled = CancellationToken::new();
            let (backend, stopping) = (Arc::clone(&engine.backend), shared.life.stopping.clone());
            shared.life.tasks.spawn(listen(Listen { id, version, filter }, backend, tx, stopping, cancelled.clone()));
            sse(rx, cancelled.drop_guard())
        }
    }
}

/// An answer sent as plain JSON, with its status: 400 for a missing client capability,
/// as 2026-07-28 asks of a server that cannot serve a request without it; for a used-up
/// budget, 429 with `Retry-After` (503 for a gateway that cannot reach its shared store) to a 2026-07-28 request (whose every request is an
/// HTTP request of its own), while a session's client gets the JSON-RPC error alone, as
/// its era has no status for one message; 200 otherwise (a JSON-RPC error is still an
/// answer).
fn answered(answer: &Value, version: ProtocolVersion) -> Response {
    match answer.pointer("/error/code").and_then(Value::as_i64) {
        Some(MISSING_REQUIRED_CLIENT_CAPABILITY) => json(StatusCode::BAD_REQUEST, answer),
        Some(code @ (RATE_LIMITED | UNAVAILABLE)) if version.is_stateless() => {
            let status =
                if code == RATE_LIMITED { StatusCode::TOO_MANY_REQUESTS } else { StatusCode::SERVICE_UNAVAILABLE };
            let mut response = json(status, answer);
            let wait = answer.pointer("/error/data/retryAfter").and_then(Value::as_u64).unwrap_or(1);
            if let Ok(value) = HeaderValue::from_str(&wait.to_string()) {
                response.headers_mut().insert(axum::http::header::RETRY_AFTER, value);
            }
            response
        }
        _ => json(StatusCode::OK, answer),
    }
}

/// The `Mcp-Param-*` check of a stateless `tools/call`, against the served tool's
/// schema. Other requests, and calls of tools not served (answered "unknown tool"
/// later), have nothing to check.
async fn param_headers(shared: &Shared, headers: &HeaderMap, request: &Request) -> Result<(), String> {
    if request.method != "tools/call" {
        return Ok(());
    }
    let params = request.params.as_ref();
    let Some(name) = params.and_then(|p| p.get("name")).and_then(Value::as_str) else { return Ok(()) };
    let empty = serde_json::Map::new();
    let arguments = params.and_then(|p| p.get("arguments")).and_then(Value::as_object).unwrap_or(&empty);
    match shared.engine.backend.tool(name).await {
        Some(tool) => super::headers::check_params(headers, &tool.input_schema, arguments),
        None => Ok(()),
    }
}

/// Progress notifications a slow client may leave unread before later ones are dropped.
const PROGRESS_BACKLOG: usize = 64;

fn duplicate(id: &Id) -> Response {
    let message = format!("Invalid request: id {id} is already in flight in this session");
    json(StatusCode::BAD_REQUEST, &error_response(Some(id), INVALID_REQUEST, &message, None))
}
