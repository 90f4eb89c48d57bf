//! The resources one handshake-era connection or session follows (`resources/subscribe`,
//! `resources/unsubscribe`).
//!
//! Each followed URI has a task that holds the backend's [`ResourceWatch`] and turns each
//! move of its counter into the URI on a broadcast channel; [`forward`] sends those as
//! `notifications/resources/updated` on the connection's standing channel (stdout after
//! `initialize`, a session's GET stream). Unsubscribing, or the connection or session
//! ending (the set dropped), stops the task, which drops the watch and with it the
//! subscription upstream. A connection follows at most [`MAX_FOLLOWED`] URIs.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use serde_json::{Map, Value};
use tokio::sync::{broadcast, mpsc};
use tokio::task::AbortHandle;
use wasmgate_core::{CancellationToken, Refusal, ResourceWatch};
use wasmgate_protocol::notification;

use crate::backend::Backend;

/// The most URIs one connection or session follows.
pub(crate) const MAX_FOLLOWED: usize = 64;

/// Updates waiting for a slow client before the oldest are dropped.
const BACKLOG: usize = 64;

/// The followed resources of one connection or session.
#[derive(Debug)]
pub(crate) struct Followed {
    open: Mutex<Open>,
    updates: broadcast::Sender<String>,
}

/// The URIs followed, and how many subscriptions are being opened upstream: those count
/// against [`MAX_FOLLOWED`] too, so requests at once cannot open more between them.
#[derive(Debug, Default)]
struct Open {
    followed: HashMap<String, AbortHandle>,
    opening: usize,
}

impl Default for Followed {
    fn default() -> Self {
        Self { open: Mutex::default(), updates: broadcast::channel(BACKLOG).0 }
    }
}

/// One subscription being opened, counted in [`Open::opening`] until it is followed or
/// dropped (refused upstream, or its request dropped midway).
struct Opening<'a> {
    of: &'a Followed,
    counted: bool,
}

impl Opening<'_> {
    /// No longer counted, in `open` (held locked by the caller).
    fn end(mut self, open: &mut Open) {
        open.opening = open.opening.saturating_sub(1);
        self.counted = false;
    }
}

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        if self.counted {
            let mut open = self.of.open();
            open.opening = open.opening.saturating_sub(1);
        }
    }
}

impl Followed {
    fn open(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Follows `uri` (a URI followed already stays followed once).
    pub(crate) async fn subscribe(&self, backend: &dyn Backend, uri: String) -> Result<(), Refusal> {
        let opening = {
            let mut open = self.open();
            if open.followed.contains_key(&uri) {
                return Ok(());
            }
            if open.followed.len() + open.opening >= MAX_FOLLOWED {
                return Err(Refusal::InvalidParams(format!(
                    "this connection follows (or is subscribing to) {MAX_FOLLOWED} resources already: unsubscribe from one first"
                )));
            }
            open.opening += 1;
            Opening { of: self, counted: true }
        };
        let ResourceWatch { mut changes, keep } = backend.watch_resource(uri.clone()).await?;
        let updates = self.updates.clone();
        let followed = uri.clone();
        let task = tokio::spawn(async move {
            let _keep = keep;
            while changes.changed().await.is_ok() {
                // No one listening (no GET stream open) is no failure: the update is lost,
                // as it would be without a subscription.
                let _ = updates.send(followed.clone());
            }
        });
        let mut open = self.open();
        opening.end(&mut open);
        // Counted while it was opened, it has room; another request may have followed the
        // same URI meanwhile.
        if open.followed.contains_key(&uri) || open.followed.len() >= MAX_FOLLOWED {
            task.abort();
        } else {
            open.followed.insert(uri, task.abort_handle());
        }
        Ok(())
    }

    /// Stops following `uri`; following it or not, the answer is the same.
    pub(crate) fn unsubscribe(&self, uri: &str) {
        if let Some(task) = self.open().followed.remove(uri) {
            task.abort();
        }
    }

    /// The URIs that change, as they change.
    pub(crate) fn updates(&self) -> broadcast::Receiver<String> {
        self.updates.subscribe()
    }
}

impl Drop for Followed {
    fn drop(&mut self) {
        for (_, task) in self.open.get_mut().unwrap_or_else(PoisonError::into_inner).followed.drain() {
            task.abort();
        }
    }
}

/// Sends `notifications/resources/updated` for each URI of `updates` into `out`, until
/// `stopping`, the channel closes, or the followed set is gone.
pub(crate) async fn forward(
    mut updates: broadcast::Receiver<String>,
    out: mpsc::Sender<Value>,
    stopping: CancellationToken,
) {
    loop {
        let uri = tokio::select! {
            biased;
            () = stopping.cancelled() => return,
            next = updates.recv() => match next {
                Ok(uri) => uri,
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::debug!(missed, "resource updates dropped: the client is not reading");
                    continue;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
        };
        let mut params = Map::new();
        params.insert("uri".into(), Value::String(uri));
        if out.send(notification("notifications/resources/updated", Some(params))).await.is_err() {
            return;
        }
    }
}
