//! GET and DELETE, which only the handshake era has.
//!
//! GET with a session opens the standalone event stream on which the server announces
//! list changes, and updates of the resources the session follows, until the session
//! ends or the server stops. DELETE ends the session.
//! Without a session header both answer 405, as a 2026-07-28 server does.

use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::Value;
use tokio::sync::mpsc;
use wasmgate_core::Caller;
use wasmgate_protocol::codes::INVALID_REQUEST;

use super::Shared;
use super::reply::{refuse, sse, status};
use super::sessions::{named, repeated};
use crate::engine::follow::forward;
use crate::engine::watch::{Changes, announce};

/// The GET handler.
pub(crate) async fn get(
    State(shared): State<Arc<Shared>>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
) -> Response {
    let id = match named(&headers) {
        Ok(Some(id)) => id,
        Ok(None) => return status(StatusCode::METHOD_NOT_ALLOWED),
        Err(error) => return repeated(&error),
    };
    let Some(session) = shared.sessions.get(id, caller.as_ref().map(|Extension(caller)| caller)) else {
        return refuse(StatusCode::NOT_FOUND, INVALID_REQUEST, &shared.sessions.not_found(id));
    };
    let (tx, rx) = mpsc::channel::<Value>(16);
    // Ends with the session, the server, or the client (the stream's guard).
    let stop = session.stop.child_token();
    let guard = stop.clone().drop_guard();
    let changes = Changes::of(shared.engine.backend.as_ref());
    let updates = session.followed.updates();
    let open = session.stream();
    shared.life.tasks.spawn(async move {
        tokio::join!(announce(changes, tx.clone(), stop.clone()), forward(updates, tx, stop));
        drop(open);
    });
    sse(rx, guard)
}

/// The DELETE handler.
pub(crate) async fn delete(
    State(shared): State<Arc<Shared>>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
) -> Response {
    let id = match named(&headers) {
        Ok(Some(id)) => id,
        Ok(None) => return status(StatusCode::METHOD_NOT_ALLOWED),
        Err(error) => return repeated(&error),
    };
    if shared.sessions.end(id, caller.as_ref().map(|Extension(caller)| caller)) {
        status(StatusCode::NO_CONTENT)
    } else {
        refuse(StatusCode::NOT_FOUND, INVALID_REQUEST, &shared.sessions.not_found(id))
    }
}
