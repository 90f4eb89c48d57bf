//! Requests in flight on one connection or session, by id: what
//! `notifications/cancelled` finds, and what a duplicate id collides with.
//!
//! Each entry holds the request's cancellation token and whether the *client*
//! cancelled it: a request the client cancelled gets no answer (the spec's "MUST NOT
//! send any further messages for it"), while one the server cancelled at shutdown still
//! reports how it ended.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use wasmgate_core::CancellationToken;
use wasmgate_protocol::Id;

#[derive(Debug)]
struct Entry {
    token: CancellationToken,
    by_client: bool,
}

/// The registry. Shared by the reader and the tasks it starts.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    entries: Mutex<HashMap<Id, Entry>>,
}

impl InFlight {
    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<Id, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers `id` with a token that `parent` also cancels; `None` when `id` is
    /// already in flight.
    pub(crate) fn start(self: &Arc<Self>, id: &Id, parent: &CancellationToken) -> Option<Ticket> {
        let mut entries = self.entries();
        if entries.contains_key(id) {
            return None;
        }
        let token = parent.child_token();
        entries.insert(id.clone(), Entry { token: token.clone(), by_client: false });
        Some(Ticket { registry: Arc::clone(self), id: id.clone(), token })
    }

    /// The client cancelled `id`: fires its token. Unknown ids (already finished, or
    /// never seen) are ignored, as the spec asks.
    pub(crate) fn cancel(&self, id: &Id) {
        if let Some(entry) = self.entries().get_mut(id) {
            entry.by_client = true;
            entry.token.cancel();
        }
    }

    /// How many requests are in flight.
    pub(crate) fn len(&self) -> usize {
        self.entries().len()
    }
}

/// One request in flight; dropping it ends the entry.
#[derive(Debug)]
pub(crate) struct Ticket {
    registry: Arc<InFlight>,
    id: Id,
    token: CancellationToken,
}

impl Ticket {
    /// The request's cancellation token.
    pub(crate) fn token(&self) -> CancellationToken {
        self.token.clone()
    }

    /// Whether the client cancelled the request (its answer must then not be sent).
    pub(crate) fn cancelled_by_client(&self) -> bool {
        self.registry.entries().get(&self.id).is_some_and(|e| e.by_client)
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.registry.entries().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_client_cancel_fires_the_token_and_marks_the_request() {
        let registry = Arc::new(InFlight::default());
        let parent = CancellationToken::new();
        let ticket = registry.start(&Id::Int(1), &parent).unwrap();
        assert!(registry.start(&Id::Int(1), &parent).is_none(), "a duplicate id is refused");
        registry.cancel(&Id::Int(2));
        assert!(!ticket.token().is_cancelled());
        registry.cancel(&Id::Int(1));
        assert!(ticket.token().is_cancelled() && ticket.cancelled_by_client());
        drop(ticket);
        assert_eq!(registry.len(), 0);
    }

    #[test]
    fn the_parent_cancels_without_marking_the_client() {
        let registry = Arc::new(InFlight::default());
        let parent = CancellationToken::new();
        let ticket = registry.start(&Id::from("a"), &parent).unwrap();
        parent.cancel();
        assert!(ticket.token().is_cancelled() && !ticket.cancelled_by_client());
    }
}
