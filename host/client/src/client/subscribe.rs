//! Following changes to one resource's content (`resources/subscribe`).
//!
//! * Only a server whose `resources` capability says `subscribe: true` is asked;
//!   otherwise subscribing is [`ClientError::Unsupported`] and nothing is sent.
//! * **Handshake era**: `resources/subscribe {uri}`, answered `{}`; when the last
//!   [`ResourceSubscription`] for the URI is dropped, `resources/unsubscribe {uri}`
//!   (best effort, from a task of its own).
//! * **2026-07-28**: a `subscriptions/listen` of its own with `resourceSubscriptions:
//!   [uri]`, live once acknowledged honoring the URI; an acknowledgment that leaves the
//!   URI out, an answer or error before it, or none within `request_timeout`, fails the
//!   subscription. Dropping the last subscription cancels the request (stdio:
//!   `notifications/cancelled`; HTTP: its stream closed).
//! * `notifications/resources/updated` for a followed URI moves its counter, whichever
//!   stream it came on; an update for a URI nobody follows is ignored. Updates that
//!   arrive faster than they are read collapse into one: "the resource changed, read
//!   it again".
//! * One connection follows at most [`MAX_FOLLOWED`] URIs; subscriptions to one URI share
//!   one upstream subscription.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, Weak};

use serde_json::{Map, Value};
use tokio::sync::{oneshot, watch as signal};
use wasmgate_protocol::{Id, LISTEN, SubscriptionFilter};

use super::connect::request;
use super::{Session, Shared};
use crate::error::ClientError;

/// The most URIs one connection follows at once.
pub const MAX_FOLLOWED: usize = 256;

/// The followed URIs of a connection, and the acknowledgments awaited.
#[derive(Debug, Default)]
pub(crate) struct Followed {
    uris: HashMap<String, Entry>,
    /// 2026-07-28 listen requests waiting for their acknowledgment.
    acks: HashMap<Id, oneshot::Sender<SubscriptionFilter>>,
}

#[derive(Debug)]
struct Entry {
    changes: signal::Sender<u64>,
    holders: usize,
    /// The `subscriptions/listen` request that carries it (2026-07-28).
    listen: Option<Id>,
}

/// Changes to one resource's content, followed until dropped.
#[derive(Debug)]
pub struct ResourceSubscription {
    uri: String,
    changes: signal::Receiver<u64>,
    shared: Weak<Shared>,
}

impl ResourceSubscription {
    /// The URI followed.
    #[must_use]
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// A receiver of the change counter, for whoever waits on changes elsewhere (it
    /// keeps moving only while this subscription is held).
    #[must_use]
    pub fn changes(&self) -> signal::Receiver<u64> {
        self.changes.clone()
    }

    /// Waits for the next change; false once the subscription ended (the connection
    /// closed, or the server stopped it).
    pub async fn changed(&mut self) -> bool {
        self.changes.changed().await.is_ok()
    }
}

impl Drop for ResourceSubscription {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.upgrade() {
            shared.release(&self.uri);
        }
    }
}

pub(crate) async fn subscribe(shared: &Arc<Shared>, uri: &str) -> Result<ResourceSubscription, ClientError> {
    let session = shared.session()?;
    let offered = session.capabilities.get("resources").and_then(|r| r.get("subscribe")) == Some(&Value::Bool(true));
    if !offered {
        return Err(ClientError::Unsupported(format!(
            "the server {:?} does not offer resource subscriptions (resources.subscribe)",
            shared.server
        )));
    }
    let changes = {
        let mut followed = shared.followed();
        if let Some(entry) = followed.uris.get_mut(uri) {
            entry.holders += 1;
            let changes = entry.changes.subscribe();
            drop(followed);
            return Ok(ResourceSubscription { uri: uri.to_owned(), changes, shared: Arc::downgrade(shared) });
        }
        if followed.uris.len() >= MAX_FOLLOWED {
            return Err(ClientError::LimitExceeded { what: "followed resources".into(), limit: MAX_FOLLOWED });
        }
        let (changes, receiver) = signal::channel(0);
        followed.uris.insert(uri.to_owned(), Entry { changes, holders: 1, listen: None });
        receiver
    };
    // From here the entry is ours: dropping the subscription releases it, a failure too.
    let subscription = ResourceSubscription { uri: uri.to_owned(), changes, shared: Arc::downgrade(shared) };
    if session.version().is_stateless() {
        listen(shared, &session, uri).await?;
    } else {
        let build =
            |session: &Session, id: &Id| Ok(session.context.request(id, "resources/subscribe", uri_params(uri))?);
        request(shared, "resources/subscribe", &build, &[], shared.config.request_timeout, None).await?;
    }
    Ok(subscription)
}

fn uri_params(uri: &str) -> Map<String, Value> {
    let mut params = Map::new();
    params.insert("uri".into(), Value::String(uri.to_owned()));
    params
}

/// Opens the 2026-07-28 subscription for `uri` and waits for its acknowledgment.
async fn listen(shared: &Arc<Shared>, session: &Session, uri: &str) -> Result<(), ClientError> {
    let id = shared.next_id();
    let filter = SubscriptionFilter { resource_subscriptions: vec![uri.to_owned()], ..SubscriptionFilter::default() };
    let message = session.context.subscriptions_listen(&id, &filter)?;
    let (acked, ack) = oneshot::channel();
    {
        let mut followed = shared.followed();
        followed.acks.insert(id.clone(), acked);
        if let Some(entry) = followed.uris.get_mut(uri) {
            entry.listen = Some(id.clone());
        }
    }
    let outcome = async {
        let answer = shared.register_listen(&id)?;
        shared.transport.send(message).await?;
        let refused = |why: String| ClientError::Unsupported(format!("the server {:?} {why}", shared.server));
        tokio::select! {
            honored = ack => match honored {
                Ok(honored) if honored.resource_subscriptions.iter().any(|u| u == uri) => Ok(()),
                _ => Err(refused(format!("will not send updates of {uri}"))),
            },
            answered = answer => match answered {
                Ok(Err(error)) => Err(error),
                _ => Err(refused(format!("ended the subscription to {uri} before acknowledging it"))),
            },
            () = tokio::time::sleep(shared.config.request_timeout) => {
                Err(refused(format!("did not acknowledge the subscription to {uri} in time")))
            }
        }
    }
    .await;
    shared.followed().acks.remove(&id);
    outcome
}

impl Shared {
    pub(crate) fn followed(&self) -> std::sync::MutexGuard<'_, Followed> {
        self.followed.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `notifications/resources/updated`: moves the URI's counter, if it is followed.
    pub(crate) fn on_resource_updated(&self, params: &Map<String, Value>) {
        let Some(uri) = params.get("uri").and_then(Value::as_str) else { return };
        match self.followed().uris.get(uri) {
            Some(entry) => entry.changes.send_modify(|n| *n = n.wrapping_add(1)),
            None => tracing::debug!(server = %self.server, "update of a resource nobody follows ignored"),
        }
    }

    /// An acknowledgment of a resource subscription's listen request; false when `id`
    /// is not one.
    pub(crate) fn on_resource_acknowledged(&self, id: &Id, honored: SubscriptionFilter) -> bool {
        match self.followed().acks.remove(id) {
            Some(waiter) => {
                let _ = waiter.send(honored);
                true
            }
            None => false,
        }
    }

    /// One subscription to `uri` fewer; the last one ends the upstream subscription.
    fn release(self: &Arc<Self>, uri: &str) {
        let listen = {
            let mut followed = self.followed();
            let Some(entry) = followed.uris.get_mut(uri) else { return };
            entry.holders = entry.holders.saturating_sub(1);
            if entry.holders > 0 {
                return;
            }
            followed.uris.remove(uri).and_then(|entry| entry.listen)
        };
        if let Some(id) = listen {
            self.abandon(&id, LISTEN, "no longer followed");
            return;
        }
        if self.session().is_ok_and(|session| session.version().is_stateless()) {
            return;
        }
        // Best effort, from a task of its own: a drop cannot wait for the answer.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let (shared, uri) = (Arc::clone(self), uri.to_owned());
        runtime.spawn(async move {
            let build = |session: &Session, id: &Id| {
                Ok(session.context.request(id, "resources/unsubscribe", uri_params(&uri))?)
            };
            let timeout = shared.config.request_timeout;
            if let Err(error) = request(&shared, "resources/unsubscribe", &build, &[], timeout, None).await {
                tracing::debug!(server = %shared.server, %error, "resources/unsubscribe failed");
            }
        });
    }
}
