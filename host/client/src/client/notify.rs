//! What the server's notifications do to the client, whichever stream they came on.
//!
//! The reader task hands every notification here, in arrival order, so a notification
//! on a subscription stream is always seen before the response that follows it:
//!
//! * `notifications/tools/list_changed` makes the cached tool list stale. It counts
//!   whether it came on stdio, on the handshake era's GET stream, on a POST's SSE answer
//!   or stamped with a `subscriptionId`: being stale without need costs one `tools/list`,
//!   missing a change serves the model tools that no longer exist.
//! * `notifications/subscriptions/acknowledged` for the open `subscriptions/listen`
//!   request moves the watch to active if the server agreed to send tool changes, and to
//!   failed if it did not (see the `watch` module).
//! * `notifications/cancelled` from the server ends a subscription on stdio (the only
//!   use the 2026-07-28 spec allows it); naming any other request it is ignored.
//! * `notifications/resources/list_changed` and `notifications/prompts/list_changed`
//!   move their counters, for hosts that pass the change on;
//!   `notifications/resources/updated` moves the counter of a followed resource (see
//!   the `subscribe` module), and an acknowledgment of its listen request goes to it.
//! * `notifications/progress` reaches the callback of its call; `notifications/message`
//!   reaches the log receiver of the one call in flight, or is logged; anything else is
//!   dropped.

use serde_json::{Map, Value};
use wasmgate_protocol::{Id, Notification, parse_acknowledged};

use super::Shared;
use super::config::Progress;
use super::watch::ToolsWatch;
use crate::error::ClientError;
use crate::transport::stderr::escape;

impl Shared {
    pub(crate) fn on_notification(&self, notification: Notification) {
        let params = notification.params.unwrap_or_default();
        match notification.method.as_str() {
            "notifications/tools/list_changed" => {
                self.tools_changed();
                if let Some(count) = self.noise.list_changes.count() {
                    tracing::info!(server = %self.server, count, "tool list changed; cache marked stale");
                }
            }
            "notifications/resources/list_changed" => self.resource_changes.send_modify(|n| *n += 1),
            "notifications/prompts/list_changed" => self.prompt_changes.send_modify(|n| *n += 1),
            "notifications/resources/updated" => self.on_resource_updated(&params),
            wasmgate_protocol::ACKNOWLEDGED => self.on_acknowledged(&params),
            "notifications/cancelled" => self.on_server_cancelled(&params),
            "notifications/progress" => {
                let Some(token) = params.get("progressToken").and_then(|t| Id::from_value(t).ok()) else { return };
                let Some(progress) = params.get("progress").and_then(Value::as_f64) else { return };
                if let Some(callback) = self.progress_callback(&token) {
                    callback(Progress {
                        progress,
                        total: params.get("total").and_then(Value::as_f64),
                        message: params.get("message").and_then(Value::as_str).map(str::to_owned),
                    });
                }
            }
            "notifications/message" => {
                if let Some(log) = self.calls_in_flight.only_log() {
                    log(params);
                } else if tracing::enabled!(tracing::Level::DEBUG) {
                    // Serialized only when someone reads it: a server can send many of
                    // these, up to the frame limit each, and the reader must keep up.
                    let text = Value::Object(params).to_string();
                    tracing::debug!(server = %self.server, log = %escape(&text.as_bytes()[..text.len().min(1024)]), "server log");
                }
            }
            other => tracing::debug!(server = %self.server, method = other, "notification ignored"),
        }
    }

    fn on_acknowledged(&self, params: &Map<String, Value>) {
        let ack = match parse_acknowledged(params) {
            Ok(ack) => ack,
            Err(error) => {
                tracing::warn!(server = %self.server, %error, "malformed subscription acknowledgment dropped");
                return;
            }
        };
        if self.on_resource_acknowledged(&ack.subscription_id, ack.notifications.clone()) {
            return;
        }
        if self.listening().as_ref() != Some(&ack.subscription_id) {
            tracing::debug!(server = %self.server, id = %ack.subscription_id, "acknowledgment of another subscription");
            return;
        }
        if ack.notifications.tools_list_changed {
            // A list fetched before the stream opened may predate a change nobody will
            // announce now: move the generation first, then trust the cache again.
            self.tools_changed();
            self.tools_watch.send_replace(ToolsWatch::Active);
            tracing::info!(server = %self.server, "subscribed to tool list changes");
        } else {
            tracing::warn!(server = %self.server, "the server will not send tool list changes on the subscription");
            self.tools_watch.send_replace(ToolsWatch::Failed);
        }
    }

    fn on_server_cancelled(&self, params: &Map<String, Value>) {
        let Some(id) = params.get("requestId").and_then(|id| Id::from_value(id).ok()) else { return };
        if self.listening().as_ref() == Some(&id) {
            tracing::info!(server = %self.server, %id, "the server ended the subscription");
            self.fail_if_pending(&id, ClientError::Cancelled);
        } else {
            tracing::debug!(server = %self.server, %id, "server cancellation of a request that is no subscription ignored");
        }
    }
}
