//! What the replicas of one gateway share, kept in Redis: [`Store`].
//!
//! Several `wasmgate serve --http` processes behind one load balancer must agree on
//! these, and each is one atomic step in the store:
//!
//! * **Spent request states** ([`SharedStore`]): `SET NX`, kept until the state's expiry
//!   and [`SPENT_MARGIN_SECS`] more (for replicas whose clocks run behind the store's),
//!   so a state issued by any replica is redeemed once between them all.
//! * **Budget buckets** ([`SharedBuckets`]): a script takes a token from every bucket a
//!   call needs, or from none, against the store's clock (not each replica's); a
//!   bucket expires once it would be full again, so idle callers cost nothing.
//! * **Audit anchors**: each replica's last durable record, moved only forward by a
//!   script, which answers with the stored anchor when the replica's log is behind it
//!   (the log was cut short) or differs at it (rewritten).
//! * **What results said** ([`wasmgate_core::SharedMemory`]): per conversation, keyed
//!   hashes of values and where each was first seen, bounded and expiring.
//! * **Asks waiting for reviewers** ([`wasmgate_core::SharedAsks`]): each published
//!   while it waits (it expires at its deadline), an answer left once for the replica
//!   that holds the call to take.
//! * **Review decisions**: a stream every replica appends its decisions to and follows.
//!
//! Asks, answers and decisions are signed by the gateway (`wasmgate_gateway`'s
//! `replicas`), not here: the store is a medium, not a judge.
//!
//! Every operation is bounded by [`Store::timeout`]; a failure is returned, never
//! papered over, and marks the store as in trouble ([`Store::trouble`]) until an
//! operation succeeds again. Keys start with `wasmgate:`.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands as _, Script};
use sha2::Digest as _;
use wasmgate_audit::Anchor;
use wasmgate_core::{BoxFuture, BucketSpec, SharedBuckets, SharedStore, StoreUnavailable};

/// The longest one operation may take before it counts as failed.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1);

/// The hash that holds every replica's anchor, by replica name.
const ANCHORS: &str = "wasmgate:anchors";

/// How long a spent state is remembered past its expiry: a replica whose clock runs
/// behind the store's by less than this still finds it spent.
pub const SPENT_MARGIN_SECS: u64 = 600;

/// Why the store did not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The URL is not a Redis URL.
    #[error("{url} is not a Redis URL ({why}); write redis://HOST:PORT/DB, or redis+unix:///PATH")]
    Url {
        /// The URL, without its password.
        url: String,
        /// What the client said.
        why: String,
    },
    /// It could not be reached, or did not answer in time.
    #[error("the shared store at {url} cannot be reached: {why}")]
    Unreachable {
        /// The URL, without its password.
        url: String,
        /// What failed.
        why: String,
    },
    /// It answered something this version does not expect.
    #[error("the shared store at {url} answered unexpectedly: {why}")]
    Unexpected {
        /// The URL, without its password.
        url: String,
        /// What was wrong.
        why: String,
    },
}

/// What became of an anchor the replica sent ([`Store::anchor`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Anchored {
    /// It is the replica's anchor now (or was already).
    Kept,
    /// The store holds a later anchor for the replica, or another at the same record:
    /// the replica's log lost records or was rewritten. The stored anchor is kept.
    Behind(Anchor),
}

/// A connection to the Redis store the replicas share; see the module docs.
pub struct Store {
    connection: ConnectionManager,
    /// [`TAKE`] and [`ANCHOR`], hashed once (a script is sent by its hash).
    take: Script,
    anchor: Script,
    remember: Script,
    recall: Script,
    /// [`PUBLISH`], [`PUBLISHED`] and [`ANSWER`]: the asks waiting for reviewers.
    publish: Script,
    published: Script,
    answer: Script,
    /// The URL as logs and errors show it: without its password.
    shown: String,
    timeout: Duration,
    /// What went wrong with the last operation, until one succeeds.
    trouble: Mutex<Option<String>>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store").field("url", &self.shown).field("timeout", &self.timeout).finish_non_exhaustive()
    }
}

/// Takes a token from each bucket (KEYS) or from none. ARGV: per bucket, the refill
/// interval in milliseconds and the burst. Times are the store's, in milliseconds. Every
/// read comes before the first write, and no write can fail on a value it is given, so
/// a take is whole or nothing.
/// Returns {0, 0} when taken, else {i, wait_ms} for the empty bucket with the longest
/// wait (1-based). A bucket expires when it would be full again.
const TAKE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local levels = {}
local worst, wait = 0, 0
for i, key in ipairs(KEYS) do
  local interval = tonumber(ARGV[2 * i - 1])
  local burst = tonumber(ARGV[2 * i])
  local level = burst
  local kept = redis.call('HMGET', key, 'tokens', 'at')
  if kept[1] and kept[2] then
    local since = math.max(0, now - tonumber(kept[2]))
    level = math.min(burst, tonumber(kept[1]) + since / interval)
  end
  if level < 1 then
    local w = math.ceil((1 - level) * interval)
    if w > wait then worst, wait = i, w end
  end
  levels[i] = level
end
if worst > 0 then return {worst, wait} end
for i, key in ipairs(KEYS) do
  local interval = tonumber(ARGV[2 * i - 1])
  local burst = tonumber(ARGV[2 * i])
  local left = levels[i] - 1
  redis.call('HSET', key, 'tokens', tostring(left), 'at', tostring(now))
  -- Under 10^12 ms (about 31 years), which Redis reads back as an integer.
  redis.call('PEXPIRE', key, math.min(math.ceil((burst - left) * interval) + 1000, 1000000000000))
end
return {0, 0}
";

/// Moves a replica's anchor forward. KEYS[1]: the anchors hash; ARGV: the replica, the
/// new anchor's seq, the new anchor. Returns nothing when kept, else the stored anchor
/// that is ahead of (or differs at) the new one.
const ANCHOR: &str = r"
local kept = redis.call('HGET', KEYS[1], ARGV[1])
if kept then
  local seq = tonumber(string.match(kept, '^wasmgate%-audit%-anchor:(%d+):'))
  local new = tonumber(ARGV[2])
  if seq and (seq > new or (seq == new and kept ~= ARGV[3])) then return kept end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return false
";

/// Adds what a result said to a conversation's memory. KEYS[1]: its hash of entries
/// (field: the value's keyed hash; value: the store's time in milliseconds when the value
/// was last seen, a space, the origin), KEYS[2]: the order they were last seen in (score:
/// a counter kept in the hash's field `#`). ARGV: the most entries kept, the time to live
/// in milliseconds, then per entry the hash and the origin. Entries last seen the time to
/// live ago or longer go first, the oldest first (an entry an earlier version kept
/// without a time takes the time it is met at); then each entry is added, or, already
/// there, seen again: its time is now and it moves to the end of the order, and its
/// origin stays unless the new one is flagged and the kept one is not. The markers
/// (hashes 0 and 1) are kept out of the order, so no number of values pushes them out.
const REMEMBER: &str = r#"
local most = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function last(hash)
  local n = redis.call('HINCRBY', KEYS[1], '#', 1)
  redis.call('ZADD', KEYS[2], n, hash)
end
while true do
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0)
  if #oldest == 0 then break end
  local kept = redis.call('HGET', KEYS[1], oldest[1])
  local at = kept and string.match(kept, '^(%d+) ')
  if kept and not at then
    redis.call('HSET', KEYS[1], oldest[1], now .. ' ' .. kept)
    last(oldest[1])
  elseif at and tonumber(at) > now - ttl then
    break
  else
    redis.call('ZREM', KEYS[2], oldest[1])
    redis.call('HDEL', KEYS[1], oldest[1])
  end
end
for i = 3, #ARGV, 2 do
  local hash, origin = ARGV[i], ARGV[i + 1]
  local kept = redis.call('HGET', KEYS[1], hash)
  if kept then
    local at, was = string.match(kept, '^(%d+) (.*)$')
    if not at then was = kept end
    if (not at or tonumber(at) > now - ttl) and
      not (string.find(origin, '"f":true', 1, true) and not string.find(was, '"f":true', 1, true)) then
      origin = was
    end
  end
  redis.call('HSET', KEYS[1], hash, now .. ' ' .. origin)
  if hash ~= '0000000000000000' and hash ~= '0000000000000001' then last(hash) end
end
local extra = redis.call('ZCARD', KEYS[2]) - most
if extra > 0 then
  local popped = redis.call('ZPOPMIN', KEYS[2], extra)
  for i = 1, #popped, 2 do redis.call('HDEL', KEYS[1], popped[i]) end
end
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return 0
"#;

/// Reads a conversation's memory (KEYS[1], as [`REMEMBER`] keeps it). ARGV: the time to
/// live in milliseconds, then the hashes. Per hash, its origin, or `false` (nil to the
/// client, in RESP2 and RESP3) when there is none or it was last seen the time to live
/// ago or longer.
const RECALL: &str = r#"
local ttl = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local found = {}
for i = 2, #ARGV do
  local kept = redis.call('HGET', KEYS[1], ARGV[i])
  local origin = false
  if kept then
    local at, rest = string.match(kept, '^(%d+) (.*)$')
    if not at then
      origin = kept
    elseif tonumber(at) > now - ttl then
      origin = rest
    end
  end
  found[i - 1] = origin
end
return found
"#;

/// The asks waiting for reviewers, by when each expires (Unix milliseconds).
const ASKS: &str = "wasmgate:asks";
/// The review decisions of every replica, a stream.
const DECISIONS: &str = "wasmgate:decisions";
/// About how many decisions the stream keeps.
pub const MAX_DECISIONS: usize = 10_000;

/// Publishes an ask. KEYS[1]: [`ASKS`], KEYS[2]: the ask's key. ARGV: its id, its JSON,
/// its time to live in milliseconds.
const PUBLISH: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
return 0
";

/// The asks published now, the one due soonest first; the expired ones are forgotten. KEYS[1]:
/// [`ASKS`]. ARGV: the most returned.
const PUBLISHED: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local ids = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
local out = {}
for _, id in ipairs(ids) do
  local ask = redis.call('GET', 'wasmgate:ask:' .. id)
  if ask then table.insert(out, ask) end
end
return out
";

/// Leaves an answer for an ask still published, and not answered yet, for as long as
/// the ask lives. KEYS[1]: the ask's key, KEYS[2]: its answer's. ARGV: the answer.
const ANSWER: &str = r"
local ttl = redis.call('PTTL', KEYS[1])
if ttl <= 0 then return 0 end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ttl) then return 1 end
return 0
";

fn ask_key(id: &str) -> String {
    format!("wasmgate:ask:{id}")
}

fn answer_key(id: &str) -> String {
    format!("wasmgate:answer:{id}")
}

impl Store {
    /// A store at `url` (`redis://[:PASSWORD@]HOST:PORT/DB`), reached lazily: nothing is
    /// sent until the first operation, and a lost connection is made again by itself.
    ///
    /// # Errors
    ///
    /// [`StoreError::Url`] when `url` is not a Redis URL.
    pub fn new(url: &str, timeout: Duration) -> Result<Self, StoreError> {
        let shown = without_password(url);
        let client =
            redis::Client::open(url).map_err(|e| StoreError::Url { url: shown.clone(), why: e.to_string() })?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(1)
            .set_max_delay(timeout);
        let connection = ConnectionManager::new_lazy_with_config(client, config)
            .map_err(|e| StoreError::Url { url: shown.clone(), why: e.to_string() })?;
        Ok(Self {
            connection,
            take: Script::new(TAKE),
            anchor: Script::new(ANCHOR),
            remember: Script::new(REMEMBER),
            recall: Script::new(RECALL),
            publish: Script::new(PUBLISH),
            published: Script::new(PUBLISHED),
            answer: Script::new(ANSWER),
            shown,
            timeout,
            trouble: Mutex::new(None),
        })
    }

    /// The URL, without its password.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.shown
    }

    /// How long one operation may take.
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// What went wrong with the last operation, when it failed and none has succeeded
    /// since: why the replica is not ready.
    #[must_use]
    pub fn trouble(&self) -> Option<String> {
        self.trouble.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Runs `operation` within the timeout, noting whether the store answered.
    async fn run<T>(&self, operation: impl Future<Output = redis::RedisResult<T>>) -> Result<T, StoreError> {
        let outcome = match tokio::time::timeout(self.timeout, operation).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e))
                if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_connection_refusal() =>
            {
                Err(StoreError::Unreachable { url: self.shown.clone(), why: e.to_string() })
            }
            Ok(Err(e)) => Err(StoreError::Unexpected { url: self.shown.clone(), why: e.to_string() }),
            Err(_) => Err(StoreError::Unreachable {
                url: self.shown.clone(),
                why: format!("no answer within {} ms", self.timeout.as_millis()),
            }),
        };
        let mut trouble = self.trouble.lock().unwrap_or_else(PoisonError::into_inner);
        match &outcome {
            Ok(_) => {
                if trouble.take().is_some() {
                    tracing::info!(store = %self.shown, "the shared store answers again");
                }
            }
            Err(e) => {
                if trouble.is_none() {
                    tracing::warn!(error = %e, "the shared store failed");
                }
                *trouble = Some(e.to_string());
            }
        }
        outcome
    }

    /// Asks the store whether it is there.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when it does not answer.
    pub async fn ping(&self) -> Result<(), StoreError> {
        let mut connection = self.connection.clone();
        self.run(async move { redis::cmd("PING").query_async::<String>(&mut connection).await }).await.map(drop)
    }

    /// Marks the request state `nonce` spent until `expiry` (Unix seconds): `true` the
    /// first time.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store does not answer; the state is then not spent.
    pub async fn spend(&self, nonce: &[u8; 16], expiry: u64) -> Result<bool, StoreError> {
        let key = format!("wasmgate:spent:{}", hex::encode(nonce));
        let mut connection = self.connection.clone();
        let set = async move {
            redis::cmd("SET")
                .arg(&key)
                .arg(1)
                .arg("NX")
                .arg("EXAT")
                .arg(expiry.max(1).saturating_add(SPENT_MARGIN_SECS))
                .query_async::<Option<String>>(&mut connection)
                .await
        };
        Ok(self.run(set).await?.is_some())
    }

    /// Takes a token from each of `buckets`, or from none: `None` when taken, else the
    /// index of an empty one and how long it stays empty.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store does not answer; nothing is taken then.
    pub async fn take(&self, buckets: &[BucketSpec]) -> Result<Option<(usize, Duration)>, StoreError> {
        if buckets.is_empty() {
            return Ok(None);
        }
        let mut invocation = self.take.prepare_invoke();
        for bucket in buckets {
            let digest = sha2::Sha256::digest(bucket.key.as_bytes());
            invocation.key(format!("wasmgate:bucket:{}", hex::encode(digest)));
            let interval_ms = bucket.interval.as_secs_f64() * 1000.0;
            invocation.arg(format!("{interval_ms}")).arg(bucket.burst.max(1));
        }
        let mut connection = self.connection.clone();
        let (index, wait_ms): (u64, u64) =
            self.run(async move { invocation.invoke_async(&mut connection).await }).await?;
        if index == 0 {
            return Ok(None);
        }
        let index = usize::try_from(index - 1).ok().filter(|i| *i < buckets.len()).ok_or_else(|| {
            StoreError::Unexpected { url: self.shown.clone(), why: format!("no bucket {index} was asked for") }
        })?;
        Ok(Some((index, Duration::from_millis(wait_ms))))
    }

    /// Adds `entries` (a value's keyed hash, its origin) to `conversation`'s memory, keeping
    /// at most `most` entries (the least recently seen out first; the markers, hashes 0 and
    /// 1, apart), each for `ttl` after it was last seen.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store does not answer.
    pub async fn remember(
        &self,
        conversation: &str,
        entries: &[(u64, String)],
        most: usize,
        ttl: Duration,
    ) -> Result<(), StoreError> {
        if entries.is_empty() {
            return Ok(());
        }
        let key = memory_key(conversation);
        let mut invocation = self.remember.prepare_invoke();
        invocation.key(&key).key(format!("{key}:order"));
        invocation.arg(most.max(1)).arg(ttl_ms(ttl));
        for (hash, origin) in entries {
            invocation.arg(format!("{hash:016x}")).arg(origin);
        }
        let mut connection = self.connection.clone();
        let _: i64 = self.run(async move { invocation.invoke_async(&mut connection).await }).await?;
        Ok(())
    }

    /// The origins `conversation`'s memory holds for `hashes`, in their order: none for
    /// an entry last seen `ttl` ago or longer.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store does not answer.
    pub async fn recall(
        &self,
        conversation: &str,
        hashes: &[u64],
        ttl: Duration,
    ) -> Result<Vec<Option<String>>, StoreError> {
        if hashes.is_empty() {
            return Ok(Vec::new());
        }
        let mut invocation = self.recall.prepare_invoke();
        invocation.key(memory_key(conversation));
        invocation.arg(ttl_ms(ttl));
        for hash in hashes {
            invocation.arg(format!("{hash:016x}"));
        }
        let mut connection = self.connection.clone();
        let found: Vec<Option<String>> =
            self.run(async move { invocation.invoke_async(&mut connection).await }).await?;
        if found.len() != hashes.len() {
            let why = format!("{} origins for {} hashes", found.len(), hashes.len());
            return Err(StoreError::Unexpected { url: self.shown.clone(), why });
        }
        Ok(found)
    }

    /// Moves `replica`'s anchor to `head`, unless the store holds a later one, or
    /// another at the same record ([`Anchored::Behind`]).
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store does not answer, or holds an anchor that does not
    /// read as one.
    pub async fn anchor(&self, replica: &str, head: &Anchor) -> Result<Anchored, StoreError> {
        let mut invocation = self.anchor.prepare_invoke();
        invocation.key(ANCHORS).arg(replica).arg(head.seq).arg(head.to_string());
        let mut connection = self.connection.clone();
        let kept: Option<String> = self.run(async move { invocation.invoke_async(&mut connection).await }).await?;
        match kept {
            None => Ok(Anchored::Kept),
            Some(kept) => Ok(Anchored::Behind(self.parse(&kept)?)),
        }
    }

    /// The anchor the store holds for `replica`, if any.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store does not answer, or holds something that is not
    /// an anchor.
    pub async fn anchor_of(&self, replica: &str) -> Result<Option<Anchor>, StoreError> {
        let mut connection = self.connection.clone();
        let replica = replica.to_owned();
        let kept: Option<String> = self.run(async move { connection.hget(ANCHORS, replica).await }).await?;
        kept.map(|kept| self.parse(&kept)).transpose()
    }

    /// Every replica's anchor, by replica name.
    ///
    /// # Errors
    ///
    /// As [`anchor_of`](Self::anchor_of).
    pub async fn anchors(&self) -> Result<BTreeMap<String, Anchor>, StoreError> {
        let mut connection = self.connection.clone();
        let kept: BTreeMap<String, String> = self.run(async move { connection.hgetall(ANCHORS).await }).await?;
        kept.into_iter().map(|(replica, anchor)| Ok((replica, self.parse(&anchor)?))).collect()
    }

    /// Publishes the ask `id` (`ask`, its JSON) for `ttl`.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store does not answer.
    pub async fn publish_ask(&self, id: &str, ask: &str, ttl: Duration) -> Result<(), StoreError> {
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).clamp(1, 1_000_000_000_000);
        let mut invocation = self.publish.prepare_invoke();
        invocation.key(ASKS).key(ask_key(id)).arg(id).arg(ask).arg(ttl_ms);
        let mut connection = self.connection.clone();
        let _: i64 = self.run(async move { invocation.invoke_async(&mut connection).await }).await?;
        Ok(())
    }

    /// Withdraws the ask `id`, and any answer left for it.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store does not answer.
    pub async fn withdraw_ask(&self, id: &str) -> Result<(), StoreError> {
        let mut pipe = redis::pipe();
        pipe.atomic().del(ask_key(id)).ignore().del(answer_key(id)).ignore().zrem(ASKS, id).ignore();
        let mut connection = self.connection.clone();
        self.run(async move { pipe.query_async::<()>(&mut connection).await }).await
    }

    /// The asks published now (their JSON), at most `most`, the one due soonest first.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store does not answer.
    pub async fn published_asks(&self, most: usize) -> Result<Vec<String>, StoreError> {
        let mut invocation = self.published.prepare_invoke();
        invocation.key(ASKS).arg(most.max(1));
        let mut connection = self.connection.clone();
        self.run(async move { invocation.invoke_async(&mut connection).await }).await
    }

    /// Leaves `answer` for the ask `id` if it is published and not answered: whether it was.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store does not answer.
    pub async fn answer_ask(&self, id: &str, answer: &str) -> Result<bool, StoreError> {
        let mut invocation = self.answer.prepare_invoke();
        invocation.key(ask_key(id)).key(answer_key(id)).arg(answer);
        let mut connection = self.connection.clone();
        let left: i64 = self.run(async move { invocation.invoke_async(&mut connection).await }).await?;
        Ok(left == 1)
    }

    /// Takes the answer left for the ask `id`.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store does not answer.
    pub async fn take_answer(&self, id: &str) -> Result<Option<String>, StoreError> {
        let mut connection = self.connection.clone();
        let key = answer_key(id);
        self.run(async move { redis::cmd("GETDEL").arg(key).query_async::<Option<String>>(&mut connection).await })
            .await
    }

    /// Appends `entry` (a review decision, signed by its replica) to the cluster's
    /// decisions, keeping about the last [`MAX_DECISIONS`].
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store does not answer.
    pub async fn publish_decision(&self, entry: &str) -> Result<(), StoreError> {
        let mut command = redis::cmd("XADD");
        command.arg(DECISIONS).arg("MAXLEN").arg("~").arg(MAX_DECISIONS).arg("*").arg("entry").arg(entry);
        let mut connection = self.connection.clone();
        self.run(async move { command.query_async::<String>(&mut connection).await }).await.map(drop)
    }

    /// The decisions after `after` (a stream id; empty for all), at most `most`: each id and
    /// entry, in order.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store does not answer.
    pub async fn decisions(&self, after: &str, most: usize) -> Result<Vec<(String, String)>, StoreError> {
        let mut command = redis::cmd("XRANGE");
        command
            .arg(DECISIONS)
            .arg(if after.is_empty() { "-".to_owned() } else { format!("({after}") })
            .arg("+")
            .arg("COUNT")
            .arg(most.max(1));
        let mut connection = self.connection.clone();
        let found: Vec<(String, Vec<(String, String)>)> =
            self.run(async move { command.query_async(&mut connection).await }).await?;
        Ok(found
            .into_iter()
            .filter_map(|(id, fields)| fields.into_iter().find(|(k, _)| k == "entry").map(|(_, entry)| (id, entry)))
            .collect())
    }

    fn parse(&self, anchor: &str) -> Result<Anchor, StoreError> {
        anchor.parse().map_err(|why: wasmgate_audit::NotAnAnchor| StoreError::Unexpected {
            url: self.shown.clone(),
            why: why.to_string(),
        })
    }
}

impl SharedStore for Store {
    fn spend<'a>(&'a self, nonce: &'a [u8; 16], expiry: u64) -> BoxFuture<'a, Result<bool, StoreUnavailable>> {
        Box::pin(async move { Store::spend(self, nonce, expiry).await.map_err(|e| StoreUnavailable(e.into())) })
    }
}

impl wasmgate_core::SharedMemory for Store {
    fn remember<'a>(
        &'a self,
        conversation: &'a str,
        entries: &'a [(u64, String)],
        most: usize,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreUnavailable>> {
        Box::pin(async move {
            Store::remember(self, conversation, entries, most, ttl).await.map_err(|e| StoreUnavailable(e.into()))
        })
    }

    fn recall<'a>(
        &'a self,
        conversation: &'a str,
        hashes: &'a [u64],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Vec<Option<String>>, StoreUnavailable>> {
        Box::pin(
            async move { Store::recall(self, conversation, hashes, ttl).await.map_err(|e| StoreUnavailable(e.into())) },
        )
    }
}

impl wasmgate_core::SharedAsks for Store {
    fn publish<'a>(&'a self, id: &'a str, ask: &'a str, ttl: Duration) -> BoxFuture<'a, Result<(), StoreUnavailable>> {
        Box::pin(async move { self.publish_ask(id, ask, ttl).await.map_err(|e| StoreUnavailable(e.into())) })
    }

    fn withdraw<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), StoreUnavailable>> {
        Box::pin(async move { self.withdraw_ask(id).await.map_err(|e| StoreUnavailable(e.into())) })
    }

    fn published<'a>(&'a self, most: usize) -> BoxFuture<'a, Result<Vec<String>, StoreUnavailable>> {
        Box::pin(async move { self.published_asks(most).await.map_err(|e| StoreUnavailable(e.into())) })
    }

    fn answer<'a>(&'a self, id: &'a str, answer: &'a str) -> BoxFuture<'a, Result<bool, StoreUnavailable>> {
        Box::pin(async move { self.answer_ask(id, answer).await.map_err(|e| StoreUnavailable(e.into())) })
    }

    fn take_answer<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreUnavailable>> {
        Box::pin(async move { Store::take_answer(self, id).await.map_err(|e| StoreUnavailable(e.into())) })
    }
}

impl SharedBuckets for Store {
    fn take<'a>(
        &'a self,
        buckets: &'a [BucketSpec],
    ) -> BoxFuture<'a, Result<Option<(usize, Duration)>, StoreUnavailable>> {
        Box::pin(async move { Store::take(self, buckets).await.map_err(|e| StoreUnavailable(e.into())) })
    }
}

/// A time to live as the scripts take it: whole milliseconds, at least one, at most
/// about thirty years.
fn ttl_ms(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).clamp(1, 1_000_000_000_000)
}

/// The key of a conversation's memory: its name hashed, so a name of any length or
/// character is one key.
fn memory_key(conversation: &str) -> String {
    format!("wasmgate:flow:{}", hex::encode(sha2::Sha256::digest(conversation.as_bytes())))
}

/// `url` with its password (if any, in the user part or the query) replaced by `***`.
#[must_use]
pub fn without_password(url: &str) -> String {
    // The query can carry a password too (`redis+unix:///path?pass=...`): none of it is shown.
    let (url, query) = url.split_once('?').map_or((url, ""), |(url, _)| (url, "?***"));
    format!("{}{query}", without_userinfo_password(url))
}

fn without_userinfo_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let (authority, path) = rest.split_once('/').map_or((rest, None), |(a, p)| (a, Some(p)));
    let Some((userinfo, host)) = authority.rsplit_once('@') else { return url.to_owned() };
    let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
    let path = path.map(|p| format!("/{p}")).unwrap_or_default();
    format!("{scheme}://{user}:***@{host}{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_its_password() {
        assert_eq!(without_password("redis://:s3cret@10.0.0.5:6379/2"), "redis://:***@10.0.0.5:6379/2");
        assert_eq!(without_password("redis://gw:s3cret@host/0"), "redis://gw:***@host/0");
        assert_eq!(without_password("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert_eq!(without_password("not a url"), "not a url");
        assert_eq!(
            without_password("redis+unix:///run/redis.sock?db=1&pass=s3cret"),
            "redis+unix:///run/redis.sock?***"
        );
    }
}
