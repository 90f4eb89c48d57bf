//! HTTP responses: JSON bodies, refusals, and SSE streams of JSON-RPC messages.

use std::convert::Infallible;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::DropGuard;
use wasmgate_protocol::error_response;

/// A JSON body with `status`.
pub(crate) fn json(status: StatusCode, body: &Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// A refusal before any request was read: `status` with a JSON-RPC error without an id.
pub(crate) fn refuse(status: StatusCode, code: i64, message: &str) -> Response {
    json(status, &error_response(None, code, message, None))
}

/// A bare status (202 for notifications, 405 for unsupported methods).
pub(crate) fn status(status: StatusCode) -> Response {
    status.into_response()
}

/// An SSE stream of the messages `rx` yields. `guard` lives as long as the stream: the
/// body is dropped when the client goes away, and the guard then cancels whatever feeds it.
pub(crate) fn sse(rx: mpsc::Receiver<Value>, guard: DropGuard) -> Response {
    let events = futures_util::stream::unfold((rx, guard), |(mut rx, guard)| async move {
        let message = rx.recv().await?;
        Some((Ok::<_, Infallible>(Event::default().event("message").data(message.to_string())), (rx, guard)))
    });
    let mut response = Sse::new(events).keep_alive(KeepAlive::default()).into_response();
    // Proxies (nginx) would otherwise buffer the stream, as the transport page warns.
    response.headers_mut().insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}
