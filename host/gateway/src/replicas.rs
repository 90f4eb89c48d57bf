//! Reviews and approvals across the replicas of a cluster (`[cluster]`), through the
//! store they share:
//!
//! * Each review decision a replica takes ([`GatewayBackend::decide`]: the console,
//!   `wasmgate review`) is published to the store, signed with a key derived from the
//!   cluster's secret. Every other replica follows the decisions ([`follow_reviews`],
//!   every [`FOLLOW_INTERVAL`]) and takes each as its own reviewer's: the same checks (a
//!   hash that does not match what this replica is offered is refused and logged), its
//!   own `review` record naming the reviewer and the replica (`alice (console) on r1`),
//!   its own lock file. A decision this replica took already, or that concerns nothing
//!   pending here, changes nothing. At start a replica goes through every decision the
//!   store keeps (about [`wasmgate_store::MAX_DECISIONS`]).
//! * Each ask waiting for reviewers is published while it waits, and answered from any
//!   replica ([`wasmgate_guard::Reviewers::share_with`]); asks and answers are signed
//!   the same way ([`SignedAsks`]), so whoever can write to the store but has not the
//!   cluster's secret cannot approve a call.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hmac::{Hmac, Mac as _};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use wasmgate_core::{BoxFuture, SharedAsks, StoreUnavailable};
use wasmgate_store::Store;

use crate::backend::GatewayBackend;
use crate::gateway::Gateway;
use crate::review::{Decision, ReviewError};

/// How often a replica looks for the decisions the others published.
pub const FOLLOW_INTERVAL: Duration = Duration::from_millis(500);

/// The most decisions read at one look.
const FOLLOW_BATCH: usize = 100;

/// `text` signed with `key`: `HEX(HMAC-SHA256).text`.
pub(crate) fn sign(key: &[u8; 32], text: &str) -> String {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else { return String::new() };
    mac.update(text.as_bytes());
    format!("{}.{text}", hex::encode(mac.finalize().into_bytes()))
}

/// The text `signed` carries, if `key` signed it.
pub(crate) fn verified<'a>(key: &[u8; 32], signed: &'a str) -> Option<&'a str> {
    let (tag, text) = signed.split_once('.')?;
    let tag = hex::decode(tag).ok()?;
    let mut mac = Hmac::<Sha256>::new_from_slice(key).ok()?;
    mac.update(text.as_bytes());
    mac.verify_slice(&tag).ok().map(|()| text)
}

/// The store's asks and answers, signed with the cluster's key; what is not signed with
/// it is dropped (and logged).
#[derive(Debug)]
pub struct SignedAsks {
    pub(crate) store: Arc<Store>,
    pub(crate) key: [u8; 32],
}

impl SignedAsks {
    fn open(&self, signed: String) -> Option<String> {
        let text = verified(&self.key, &signed).map(str::to_owned);
        if text.is_none() {
            tracing::warn!("an ask or an answer in the shared store is not signed with the cluster's key; ignored");
        }
        text
    }
}

impl SharedAsks for SignedAsks {
    fn publish<'a>(&'a self, id: &'a str, ask: &'a str, ttl: Duration) -> BoxFuture<'a, Result<(), StoreUnavailable>> {
        Box::pin(async move {
            self.store.publish_ask(id, &sign(&self.key, ask), ttl).await.map_err(|e| StoreUnavailable(e.into()))
        })
    }

    fn withdraw<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), StoreUnavailable>> {
        Box::pin(async move { self.store.withdraw_ask(id).await.map_err(|e| StoreUnavailable(e.into())) })
    }

    fn published<'a>(&'a self, most: usize) -> BoxFuture<'a, Result<Vec<String>, StoreUnavailable>> {
        Box::pin(async move {
            let asks = self.store.published_asks(most).await.map_err(|e| StoreUnavailable(e.into()))?;
            Ok(asks.into_iter().filter_map(|signed| self.open(signed)).collect())
        })
    }

    fn answer<'a>(&'a self, id: &'a str, answer: &'a str) -> BoxFuture<'a, Result<bool, StoreUnavailable>> {
        Box::pin(async move {
            self.store.answer_ask(id, &sign(&self.key, answer)).await.map_err(|e| StoreUnavailable(e.into()))
        })
    }

    fn take_answer<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreUnavailable>> {
        Box::pin(async move {
            let answer = self.store.take_answer(id).await.map_err(|e| StoreUnavailable(e.into()))?;
            Ok(answer.and_then(|signed| self.open(signed)))
        })
    }
}

/// A decision as the store keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SharedDecision {
    /// The replica that took it.
    pub replica: String,
    /// Who took it, as that replica's audit log names them.
    pub reviewer: String,
    pub decision: Decision,
}

/// The task following the other replicas' decisions; stopped when dropped.
#[derive(Debug)]
pub struct Following(tokio::task::AbortHandle);

impl Drop for Following {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Takes, as they come, the review decisions the other replicas of `gateway`'s cluster
/// publish (see the module docs), telling `backend`'s clients what they change; `path`
/// is the configuration file. `None` when the gateway is no replica.
#[must_use]
pub fn follow_reviews(gateway: Arc<Gateway>, backend: Arc<GatewayBackend>, path: PathBuf) -> Option<Following> {
    let member = gateway.member.clone()?;
    let task = tokio::spawn(async move {
        let mut after = String::new();
        loop {
            let decisions = match member.store.decisions(&after, FOLLOW_BATCH).await {
                Ok(decisions) => decisions,
                Err(error) => {
                    tracing::debug!(%error, "the shared store cannot be asked for the other replicas' decisions");
                    tokio::time::sleep(FOLLOW_INTERVAL).await;
                    continue;
                }
            };
            let full = decisions.len() == FOLLOW_BATCH;
            for (id, signed) in decisions {
                after = id;
                let Some(shared) = verified(&member.review_key, &signed)
                    .and_then(|text| serde_json::from_str::<SharedDecision>(text).ok())
                else {
                    tracing::warn!(
                        "a review decision in the shared store is not signed with the cluster's key; ignored"
                    );
                    continue;
                };
                if shared.replica == member.replica() {
                    continue;
                }
                let reviewer = format!("{} on {}", shared.reviewer, shared.replica);
                match backend.apply(&gateway, &path, &shared.decision, &reviewer).await {
                    Ok(outcome) => {
                        tracing::info!(%outcome, replica = %shared.replica, "took another replica's review decision")
                    }
                    Err(ReviewError::NotPending(what)) => {
                        tracing::debug!(%what, "another replica's decision concerns nothing pending here");
                    }
                    Err(error) => {
                        tracing::warn!(%error, replica = %shared.replica, "another replica's review decision is refused here")
                    }
                }
            }
            if !full {
                tokio::time::sleep(FOLLOW_INTERVAL).await;
            }
        }
    });
    Some(Following(task.abort_handle()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn only_what_the_cluster_key_signed_is_taken() {
        let (key, other) = ([7u8; 32], [8u8; 32]);
        let signed = sign(&key, "{\"approve\":true}");
        assert_eq!(verified(&key, &signed), Some("{\"approve\":true}"));
        assert_eq!(verified(&other, &signed), None, "another key");
        let forged = signed.replacen("true", "false", 1);
        assert_eq!(verified(&key, &forged), None, "the text changed");
        for junk in ["", ".", "zz.{}", "{\"approve\":true}"] {
            assert_eq!(verified(&key, junk), None, "{junk:?}");
        }
    }
}
