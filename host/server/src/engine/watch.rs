//! Change streams: telling clients that the tool list moved.
//!
//! * [`announce`]: the handshake era's standing channel (stdout after `initialize`, the
//!   HTTP GET stream of a session): a bare `notifications/tools/list_changed` per move.
//! * [`listen`]: a 2026-07-28 `subscriptions/listen` request: the acknowledgment first
//!   (honoring `toolsListChanged` when asked, the only kind this server has), then one
//!   stamped notification per move, and the closing result when the server shuts down.
//!   A client that cancels (or closes the stream) gets nothing more.
//!
//! Both push messages into a channel the transport drains, and end when the channel
//! closes, the backend drops its change counter, or `stopping` fires. Moves that
//! happen while a notification waits for room collapse into one, which is all a client
//! needs: "the list changed, ask again".

use serde_json::Value;
use tokio::sync::{mpsc, watch};
use wasmgate_agent::CancellationToken;
use wasmgate_protocol::server::{listen_acknowledged, listen_closed_result, subscription_notification};
use wasmgate_protocol::{Id, ProtocolVersion, SubscriptionFilter, notification, result_response};

/// The change notification's method.
pub(crate) const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";

/// Sends `notifications/tools/list_changed` on every move of `changes` until `stopping`.
pub(crate) async fn announce(mut changes: watch::Receiver<u64>, out: mpsc::Sender<Value>, stopping: CancellationToken) {
    changes.borrow_and_update();
    loop {
        tokio::select! {
            biased;
            () = stopping.cancelled() => return,
            moved = changes.changed() => {
                if moved.is_err() || out.send(notification(TOOLS_LIST_CHANGED, None)).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// A subscription opened by the request `id`.
#[derive(Debug)]
pub(crate) struct Listen {
    pub(crate) id: Id,
    pub(crate) version: ProtocolVersion,
    /// Whether the client asked for tool-list changes.
    pub(crate) tools: bool,
}

/// Serves the subscription `listen` into `out` until the client cancels it
/// (`cancelled`), the channel closes, or the server stops (`stopping`: the closing
/// result is sent).
pub(crate) async fn listen(
    listen: Listen,
    mut changes: watch::Receiver<u64>,
    out: mpsc::Sender<Value>,
    stopping: CancellationToken,
    cancelled: CancellationToken,
) {
    let Listen { id, version, tools } = listen;
    let honored = SubscriptionFilter { tools_list_changed: tools, ..SubscriptionFilter::default() };
    changes.borrow_and_update();
    if out.send(listen_acknowledged(&id, &honored)).await.is_err() {
        return;
    }
    let mut watching = tools;
    loop {
        // Biased: a cancelled subscription never sends one more change.
        tokio::select! {
            biased;
            () = cancelled.cancelled() => return,
            () = stopping.cancelled() => {
                let _ = out.send(result_response(&id, listen_closed_result(version, &id))).await;
                return;
            }
            moved = changes.changed(), if watching => {
                if moved.is_err() {
                    watching = false;
                } else if out.send(subscription_notification(&id, TOOLS_LIST_CHANGED)).await.is_err() {
                    return;
                }
            }
        }
    }
}
