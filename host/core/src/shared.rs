//! What the replicas of one gateway keep in a store they share: which request states
//! were spent ([`SharedStore`]), the buckets of budgets ([`SharedBuckets`]), what
//! untrusted results said ([`SharedMemory`]), and the asks waiting for reviewers
//! ([`SharedAsks`]).
//!
//! The server face and the guard need these; a store crate implements them. Defined
//! here, below both, so that the store builds on this vocabulary alone, and a store that
//! cannot be asked says so with [`StoreUnavailable`], its cause kept.

use std::fmt;
use std::time::Duration;

use crate::error::BoxError;
use crate::tool::BoxFuture;

/// The shared store could not be asked (unreachable, too slow, an answer it did not
/// expect): what refuses whatever needed it. Shows its cause's text.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct StoreUnavailable(pub BoxError);

/// Where the replicas of a gateway remember the request states they spent.
pub trait SharedStore: Send + Sync + fmt::Debug {
    /// Marks the state with `nonce` (redeemable until `expiry`, in Unix seconds) spent:
    /// `Ok(true)` the first time any replica does, `Ok(false)` after that, `Err` when the
    /// store cannot be asked (the state is then not redeemed).
    fn spend<'a>(&'a self, nonce: &'a [u8; 16], expiry: u64) -> BoxFuture<'a, Result<bool, StoreUnavailable>>;
}

/// One bucket a call takes a token from, as a [`SharedBuckets`] store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketSpec {
    /// Which bucket: the budget's fingerprint, the caller and (with `each = "tool"`) the
    /// tool, joined; the same text on every replica.
    pub key: String,
    /// How long one token takes to come back.
    pub interval: Duration,
    /// The most tokens it holds (it starts full).
    pub burst: u32,
}

/// Token buckets kept outside the process, in a store every replica of a gateway shares.
pub trait SharedBuckets: Send + Sync + fmt::Debug {
    /// Takes a token from each of `buckets`, or from none: `Ok(None)` when taken,
    /// `Ok(Some((i, wait)))` when `buckets[i]` is empty for `wait` (the longest wait of
    /// the empty ones), `Err` when the store cannot be asked.
    fn take<'a>(
        &'a self,
        buckets: &'a [BucketSpec],
    ) -> BoxFuture<'a, Result<Option<(usize, Duration)>, StoreUnavailable>>;
}

/// What untrusted results said, per conversation, kept where every replica of a gateway
/// reads it: entries by a keyed hash of the value (never the value), each an origin
/// record the guard wrote and reads back.
pub trait SharedMemory: Send + Sync + fmt::Debug {
    /// Adds `entries` (hash, origin) to `conversation`'s memory where it has no entry
    /// for the hash yet, or one last seen `ttl` ago or longer; an entry there is seen
    /// again (it keeps its origin, unless the new one is flagged and it is not). Keeps at
    /// most `most` (the least recently seen out first), and forgets each entry `ttl` after
    /// it was last seen. Hashes 0 and 1 are no value's but markers of the conversation
    /// (what started the sequence rules): they are kept apart from the `most`, and no
    /// number of values pushes them out.
    fn remember<'a>(
        &'a self,
        conversation: &'a str,
        entries: &'a [(u64, String)],
        most: usize,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreUnavailable>>;

    /// The origins `conversation`'s memory holds for `hashes`, in their order: none
    /// for an entry last seen `ttl` ago or longer.
    fn recall<'a>(
        &'a self,
        conversation: &'a str,
        hashes: &'a [u64],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Vec<Option<String>>, StoreUnavailable>>;
}

/// The asks waiting for reviewers, published where every replica of a gateway sees
/// them: a reviewer at any replica sees every ask, and answers the one another replica
/// holds through the store, where that replica takes the answer.
pub trait SharedAsks: Send + Sync + fmt::Debug {
    /// Publishes the ask `id` (its JSON) until it is withdrawn or `ttl` passes.
    fn publish<'a>(&'a self, id: &'a str, ask: &'a str, ttl: Duration) -> BoxFuture<'a, Result<(), StoreUnavailable>>;

    /// Withdraws the ask `id` and any answer left for it (answered, or its call gone).
    fn withdraw<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), StoreUnavailable>>;

    /// The asks published now (their JSON), at most `most`.
    fn published<'a>(&'a self, most: usize) -> BoxFuture<'a, Result<Vec<String>, StoreUnavailable>>;

    /// Leaves `answer` (its JSON) for the ask `id`: `Ok(true)` when the ask is published
    /// and had no answer yet, `Ok(false)` otherwise.
    fn answer<'a>(&'a self, id: &'a str, answer: &'a str) -> BoxFuture<'a, Result<bool, StoreUnavailable>>;

    /// Takes the answer left for the ask `id`, if there is one.
    fn take_answer<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreUnavailable>>;
}
