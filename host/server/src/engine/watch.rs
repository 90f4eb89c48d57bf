//! Change streams: telling clients that a list moved (tools, and the resources and
//! prompts of a backend that reports their changes).
//!
//! * [`announce`]: the handshake era's standing channel (stdout after `initialize`, the
//!   HTTP GET stream of a session): a bare `notifications/*/list_changed` per move.
//! * [`listen`]: a 2026-07-28 `subscriptions/listen` request: the acknowledgment first
//!   (honoring each list-change kind asked for that this server reports, and each
//!   resource in `resourceSubscriptions` the backend follows), then one stamped
//!   notification per move or resource update, and the closing result when the server
//!   shuts down.
//!   A client that cancels (or closes the stream) gets nothing more.
//!
//! Both push messages into a channel the transport drains, and end when the channel
//! closes, the backend drops its change counters, or `stopping` fires. Moves that
//! happen while a notification waits for room collapse into one, which is all a client
//! needs: "the list changed, ask again".

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{broadcast, mpsc, watch};
use wasmgate_core::CancellationToken;
use wasmgate_protocol::server::{listen_acknowledged, listen_closed_result, subscription_notification};
use wasmgate_protocol::{Id, ProtocolVersion, SubscriptionFilter, notification, result_response};

use super::follow::{Followed, MAX_FOLLOWED};
use crate::backend::Backend;

/// The tool list's change notification.
pub(crate) const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// The resource list's.
pub(crate) const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// The prompt list's.
pub(crate) const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";

/// The change counters of a backend's lists: tools always, resources and prompts when it
/// reports their changes.
pub(crate) struct Changes {
    tools: Option<watch::Receiver<u64>>,
    resources: Option<watch::Receiver<u64>>,
    prompts: Option<watch::Receiver<u64>>,
}

impl Changes {
    /// Every list `backend` reports changes of.
    pub(crate) fn of(backend: &dyn Backend) -> Self {
        let offers = backend.offers();
        Self {
            tools: Some(backend.tool_changes()),
            resources: backend.resource_changes().filter(|_| offers.resources),
            prompts: backend.prompt_changes().filter(|_| offers.prompts),
        }
    }

    /// Only the lists `filter` asks for.
    fn only(self, filter: &SubscriptionFilter) -> Self {
        Self {
            tools: self.tools.filter(|_| filter.tools_list_changed),
            resources: self.resources.filter(|_| filter.resources_list_changed),
            prompts: self.prompts.filter(|_| filter.prompts_list_changed),
        }
    }

    /// What of `filter` these counters honor.
    fn honored(&self) -> SubscriptionFilter {
        SubscriptionFilter {
            tools_list_changed: self.tools.is_some(),
            resources_list_changed: self.resources.is_some(),
            prompts_list_changed: self.prompts.is_some(),
            ..SubscriptionFilter::default()
        }
    }

    fn mark_seen(&mut self) {
        for changes in [&mut self.tools, &mut self.resources, &mut self.prompts].into_iter().flatten() {
            changes.borrow_and_update();
        }
    }

    /// The next list to move, or `None` when every counter is gone.
    async fn next(&mut self) -> Option<&'static str> {
        /// A counter's next move, or never for one that is gone or not watched.
        async fn moved(changes: &mut Option<watch::Receiver<u64>>) -> bool {
            let Some(receiver) = changes else { return std::future::pending().await };
            if receiver.changed().await.is_ok() {
                return true;
            }
            *changes = None;
            false
        }
        loop {
            if self.tools.is_none() && self.resources.is_none() && self.prompts.is_none() {
                return None;
            }
            tokio::select! {
                moved = moved(&mut self.tools) => if moved { return Some(TOOLS_LIST_CHANGED) },
                moved = moved(&mut self.resources) => if moved { return Some(RESOURCES_LIST_CHANGED) },
                moved = moved(&mut self.prompts) => if moved { return Some(PROMPTS_LIST_CHANGED) },
            }
        }
    }
}

/// Sends a `notifications/*/list_changed` on every move of `changes` until `stopping`.
pub(crate) async fn announce(mut changes: Changes, out: mpsc::Sender<Value>, stopping: CancellationToken) {
    changes.mark_seen();
    loop {
        tokio::select! {
            biased;
            () = stopping.cancelled() => return,
            moved = changes.next() => {
                let Some(method) = moved else { return };
                if out.send(notification(method, None)).await.is_err() {
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
    /// The list changes the client asked for.
    pub(crate) filter: SubscriptionFilter,
}

/// Serves the subscription `listen` into `out` until the client cancels it
/// (`cancelled`), the channel closes, or the server stops (`stopping`: the closing
/// result is sent).
pub(crate) async fn listen(
    listen: Listen,
    backend: Arc<dyn Backend>,
    out: mpsc::Sender<Value>,
    stopping: CancellationToken,
    cancelled: CancellationToken,
) {
    let Listen { id, version, filter } = listen;
    let mut changes = Changes::of(backend.as_ref()).only(&filter);
    changes.mark_seen();
    // The resources asked for that the backend follows; the acknowledgment names them,
    // and only them. Only the first MAX_FOLLOWED distinct URIs are tried, followed or
    // not: each try may cost the backend a request upstream.
    let followed = Followed::default();
    let mut honored = changes.honored();
    if backend.offers().resources && backend.offers().subscriptions {
        let mut tried: Vec<&String> = Vec::new();
        for uri in &filter.resource_subscriptions {
            if tried.contains(&uri) {
                continue;
            }
            if tried.len() >= MAX_FOLLOWED {
                break;
            }
            tried.push(uri);
            let subscribed = tokio::select! {
                biased;
                () = cancelled.cancelled() => return,
                () = stopping.cancelled() => return closed(&out, &id, version).await,
                subscribed = followed.subscribe(backend.as_ref(), uri.clone()) => subscribed,
            };
            match subscribed {
                Ok(()) => honored.resource_subscriptions.push(uri.clone()),
                Err(refusal) => tracing::debug!(%uri, %refusal, "a resource subscription not honored"),
            }
        }
    }
    let mut updates = followed.updates();
    if out.send(listen_acknowledged(&id, &honored)).await.is_err() {
        return;
    }
    let (mut watching, mut following) = (true, !honored.resource_subscriptions.is_empty());
    loop {
        // Biased: a cancelled subscription never sends one more change.
        let message = tokio::select! {
            biased;
            () = cancelled.cancelled() => return,
            () = stopping.cancelled() => return closed(&out, &id, version).await,
            moved = changes.next(), if watching => match moved {
                None => {
                    watching = false;
                    continue;
                }
                Some(method) => subscription_notification(&id, method),
            },
            updated = updates.recv(), if following => match updated {
                Ok(uri) => {
                    let mut message = subscription_notification(&id, RESOURCE_UPDATED);
                    if let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) {
                        params.insert("uri".into(), Value::String(uri));
                    }
                    message
                }
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => {
                    following = false;
                    continue;
                }
            },
        };
        if out.send(message).await.is_err() {
            return;
        }
    }
}

/// Ends the subscription `id` as the server stops: its closing result.
async fn closed(out: &mpsc::Sender<Value>, id: &Id, version: ProtocolVersion) {
    let _ = out.send(result_response(id, listen_closed_result(version, id))).await;
}

/// A followed resource's change notification.
const RESOURCE_UPDATED: &str = "notifications/resources/updated";
