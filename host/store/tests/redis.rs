//! The store against a real Redis server (Debian's `redis-server`, which
//! `scripts/install-peers.sh` installs), started on a Unix socket of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use wasmgate_audit::Anchor;
use wasmgate_core::BucketSpec;
use wasmgate_store::{Anchored, Store, StoreError};
use wasmgate_testing::Redis;

fn in_a_minute() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 60
}

fn bucket(key: &str, per_ms: u64, burst: u32) -> BucketSpec {
    BucketSpec { key: key.into(), interval: Duration::from_millis(per_ms), burst }
}

#[tokio::test]
async fn a_state_is_spent_once_whichever_replica_asks() {
    let redis = Redis::start();
    let (a, b) = (
        Store::new(&redis.url(), Duration::from_secs(1)).unwrap(),
        Store::new(&redis.url(), Duration::from_secs(1)).unwrap(),
    );
    let expiry = in_a_minute();
    assert!(a.spend(&[1; 16], expiry).await.unwrap());
    assert!(!b.spend(&[1; 16], expiry).await.unwrap(), "spent by a");
    assert!(!a.spend(&[1; 16], expiry).await.unwrap());
    assert!(b.spend(&[2; 16], expiry).await.unwrap(), "another state");
}

#[tokio::test]
async fn a_take_is_from_every_bucket_or_from_none_and_names_the_longest_wait() {
    let redis = Redis::start();
    let store = Store::new(&redis.url(), Duration::from_secs(1)).unwrap();
    let minute = bucket("per-minute", 60_000, 2);
    let day = bucket("per-day", 86_400_000, 1);
    assert_eq!(store.take(std::slice::from_ref(&minute)).await.unwrap(), None);
    assert_eq!(store.take(&[minute.clone(), day.clone()]).await.unwrap(), None, "the last of each");
    let (index, wait) = store.take(&[minute.clone(), day.clone()]).await.unwrap().unwrap();
    assert_eq!(index, 1, "the day's bucket has the longest wait");
    assert!(wait > Duration::from_secs(86_000) && wait <= Duration::from_secs(86_400), "{wait:?}");
    // A refused take took nothing: a fast bucket beside an empty one keeps its tokens.
    let fast = bucket("fast", 1_000, 1);
    assert!(store.take(&[fast.clone(), day.clone()]).await.unwrap().is_some());
    assert_eq!(store.take(std::slice::from_ref(&fast)).await.unwrap(), None, "fast still had its token");
    // Tokens come back with time, by the store's clock.
    let quick = bucket("quick", 50, 1);
    assert_eq!(store.take(std::slice::from_ref(&quick)).await.unwrap(), None);
    let (_, wait) = store.take(std::slice::from_ref(&quick)).await.unwrap().unwrap();
    assert!(wait <= Duration::from_millis(50));
    tokio::time::sleep(Duration::from_millis(120)).await;
    assert_eq!(store.take(std::slice::from_ref(&quick)).await.unwrap(), None);
}

#[tokio::test]
async fn an_anchor_only_moves_forward_and_a_log_behind_it_is_told_so() {
    let redis = Redis::start();
    let store = Store::new(&redis.url(), Duration::from_secs(1)).unwrap();
    let anchor = |seq: u64, fill: char| Anchor { seq, hash: fill.to_string().repeat(64) };
    assert_eq!(store.anchor_of("r1").await.unwrap(), None);
    assert_eq!(store.anchor("r1", &anchor(5, 'a')).await.unwrap(), Anchored::Kept);
    assert_eq!(store.anchor("r1", &anchor(5, 'a')).await.unwrap(), Anchored::Kept, "the same again");
    assert_eq!(store.anchor("r1", &anchor(9, 'b')).await.unwrap(), Anchored::Kept);
    assert_eq!(store.anchor("r1", &anchor(7, 'c')).await.unwrap(), Anchored::Behind(anchor(9, 'b')), "cut short");
    assert_eq!(store.anchor("r1", &anchor(9, 'd')).await.unwrap(), Anchored::Behind(anchor(9, 'b')), "rewritten");
    assert_eq!(store.anchor("r2", &anchor(1, 'e')).await.unwrap(), Anchored::Kept);
    let all = store.anchors().await.unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all["r1"], anchor(9, 'b'));
    assert_eq!(store.anchor_of("r2").await.unwrap(), Some(anchor(1, 'e')));
}

#[tokio::test]
async fn a_store_that_is_down_fails_every_operation_says_so_and_recovers_when_back() {
    let mut redis = Redis::start();
    let store = Store::new(&redis.url(), Duration::from_millis(500)).unwrap();
    store.ping().await.unwrap();
    assert_eq!(store.trouble(), None);
    redis.stop();
    let spent = store.spend(&[3; 16], in_a_minute()).await;
    assert!(matches!(spent, Err(StoreError::Unreachable { .. })), "{spent:?}");
    assert!(store.take(&[bucket("b", 1000, 1)]).await.is_err(), "no bucket is counted");
    assert!(store.anchor("r1", &Anchor { seq: 1, hash: "a".repeat(64) }).await.is_err());
    let trouble = store.trouble().expect("the trouble is kept for /readyz");
    assert!(trouble.contains("cannot be reached"), "{trouble}");
    redis.restart();
    let mut back = false;
    for _ in 0..50 {
        if store.ping().await.is_ok() {
            back = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(back, "the connection is made again by itself");
    assert_eq!(store.trouble(), None);
    assert!(store.spend(&[3; 16], in_a_minute()).await.unwrap(), "nothing was spent while it was down");
}

#[test]
fn a_url_that_is_not_redis_is_refused_with_what_to_write() {
    let refused = Store::new("http://example.invalid", Duration::from_secs(1)).unwrap_err();
    assert!(matches!(refused, StoreError::Url { .. }));
    assert!(refused.to_string().contains("redis://HOST:PORT/DB"), "{refused}");
}

/// Origins as the guard writes them: from a plain result, and from a flagged passage.
const PLAIN: &str = r#"{"p":"mail","t":"read","r":3,"k":"url","f":false}"#;
const FLAGGED: &str = r#"{"p":"web","t":"get","r":9,"k":"url","f":true}"#;
/// A memory's usual time to live, and one short enough to pass in a test (which waits a
/// second where it must be past).
const HOUR: Duration = Duration::from_secs(3_600);
const SECOND: Duration = Duration::from_millis(900);

#[tokio::test]
async fn a_conversations_memory_is_one_for_every_replica_bounded_oldest_out_and_expires() {
    let redis = Redis::start();
    let (a, b) = (
        Store::new(&redis.url(), Duration::from_secs(1)).unwrap(),
        Store::new(&redis.url(), Duration::from_secs(1)).unwrap(),
    );
    let hour = HOUR;
    let (plain, flagged) = (PLAIN.to_owned(), FLAGGED.to_owned());
    // A marker (hash 0 or 1) first, then values.
    a.remember("alice", &[(0, flagged.clone()), (11, plain.clone()), (12, plain.clone())], 3, hour).await.unwrap();
    assert_eq!(b.recall("alice", &[11, 12, 13], hour).await.unwrap(), [Some(plain.clone()), Some(plain.clone()), None]);
    assert_eq!(b.recall("bob", &[11], hour).await.unwrap(), [None], "another conversation");
    // First seen stays, unless it is seen again in a flagged passage.
    b.remember("alice", &[(11, flagged.clone()), (12, plain.clone())], 3, hour).await.unwrap();
    a.remember("alice", &[(11, plain.clone())], 3, hour).await.unwrap();
    assert_eq!(a.recall("alice", &[11], hour).await.unwrap(), [Some(flagged.clone())]);
    // Two more: the value seen least recently goes (12: 11 was seen after it); the
    // marker, older still, stays, whatever comes.
    a.remember("alice", &[(13, plain.clone()), (14, plain.clone())], 3, hour).await.unwrap();
    assert_eq!(
        a.recall("alice", &[11, 12, 13, 14], hour).await.unwrap(),
        [Some(flagged.clone()), None, Some(plain.clone()), Some(plain.clone())]
    );
    a.remember("alice", &[(1, flagged.clone())], 3, hour).await.unwrap();
    let more: Vec<(u64, String)> = (100..120).map(|hash| (hash, plain.clone())).collect();
    a.remember("alice", &more, 3, hour).await.unwrap();
    assert_eq!(
        a.recall("alice", &[0, 1, 14], hour).await.unwrap(),
        [Some(flagged.clone()), Some(flagged.clone()), None]
    );
    assert_eq!(a.recall("alice", &[117, 118, 119], hour).await.unwrap().iter().flatten().count(), 3);
    // And all of it with its time to live.
    a.remember("short", &[(7, flagged)], 3, Duration::from_millis(50)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(a.recall("short", &[7], hour).await.unwrap(), [None]);
    assert!(a.recall("alice", &[], hour).await.unwrap().is_empty());
    // A connection that speaks RESP3 reads a recall alike.
    let resp3 = Store::new(&format!("{}?protocol=resp3", redis.url()), Duration::from_secs(1)).unwrap();
    assert_eq!(resp3.recall("alice", &[117, 12], hour).await.unwrap(), [Some(plain.clone()), None]);
}

#[tokio::test]
async fn each_entry_of_a_memory_lives_its_own_time_however_recent_the_others() {
    let redis = Redis::start();
    let a = Store::new(&redis.url(), Duration::from_secs(1)).unwrap();
    let (hour, second) = (HOUR, SECOND);
    let (plain, flagged) = (PLAIN.to_owned(), FLAGGED.to_owned());
    a.remember("alice", &[(21, plain.clone()), (23, plain.clone()), (0, flagged.clone())], 5, hour).await.unwrap();
    a.remember("bob", &[(41, plain.clone()), (0, flagged.clone())], 5, hour).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    // A later write does not make them younger.
    a.remember("alice", &[(22, plain.clone())], 5, hour).await.unwrap();
    // Seeing them again does, and keeps the first origin (a flagged one is not replaced).
    a.remember("bob", &[(41, flagged.clone()), (0, plain.clone())], 5, hour).await.unwrap();
    assert_eq!(
        a.recall("bob", &[41, 0], second).await.unwrap(),
        [Some(flagged.clone()), Some(flagged.clone())],
        "seen again, from then"
    );
    assert_eq!(a.recall("alice", &[21, 23, 0], second).await.unwrap(), [None, None, None], "older than a second");
    assert_eq!(
        a.recall("alice", &[21, 23, 0, 22], hour).await.unwrap(),
        [Some(plain.clone()), Some(plain.clone()), Some(flagged.clone()), Some(plain.clone())]
    );
    // Seen again past its time to live, an entry is added anew, a marker too; a write
    // forgets what is older.
    a.remember("alice", &[(21, flagged.clone()), (0, plain.clone())], 5, second).await.unwrap();
    assert_eq!(
        a.recall("alice", &[21, 0, 22], second).await.unwrap(),
        [Some(flagged.clone()), Some(plain.clone()), Some(plain.clone())]
    );
    assert_eq!(a.recall("alice", &[23], hour).await.unwrap(), [None], "forgotten at the write");
}

#[tokio::test]
async fn an_entry_an_earlier_version_kept_without_a_time_is_timed_from_the_next_write() {
    use sha2::Digest as _;
    let redis = Redis::start();
    let a = Store::new(&redis.url(), Duration::from_secs(1)).unwrap();
    let (hour, second) = (HOUR, SECOND);
    let plain = PLAIN.to_owned();
    // As the earlier version kept it: the origin alone, ordered by the counter `#`.
    let key = format!("wasmgate:flow:{}", hex::encode(sha2::Sha256::digest(b"alice")));
    let mut direct = redis::Client::open(redis.url()).unwrap().get_multiplexed_async_connection().await.unwrap();
    redis::pipe()
        .hset(&key, format!("{:016x}", 31), &plain)
        .hset(&key, "#", 1)
        .zadd(format!("{key}:order"), format!("{:016x}", 31), 1)
        .query_async::<()>(&mut direct)
        .await
        .unwrap();
    assert_eq!(a.recall("alice", &[31], second).await.unwrap(), [Some(plain.clone())], "kept, time unknown");
    a.remember("alice", &[(32, plain.clone())], 5, hour).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    // Timed from the write that met it: forgotten with the one written with it.
    a.remember("alice", &[(33, plain.clone())], 5, second).await.unwrap();
    assert_eq!(a.recall("alice", &[31, 32, 33], hour).await.unwrap(), [None, None, Some(plain.clone())]);
}

#[tokio::test]
async fn a_memory_that_cannot_be_reached_says_so() {
    let redis = Redis::start();
    let store = Store::new(&redis.url(), Duration::from_millis(500)).unwrap();
    drop(redis);
    let error = store.recall("alice", &[1], Duration::from_secs(1)).await.unwrap_err();
    assert!(matches!(error, StoreError::Unreachable { .. }), "{error:?}");
    assert!(store.remember("alice", &[(1, "{}".into())], 3, Duration::from_secs(1)).await.is_err());
}

#[tokio::test]
async fn an_ask_is_seen_from_every_replica_answered_once_and_gone_when_withdrawn_or_expired() {
    let redis = Redis::start();
    let (a, b) = (
        Store::new(&redis.url(), Duration::from_secs(1)).unwrap(),
        Store::new(&redis.url(), Duration::from_secs(1)).unwrap(),
    );
    a.publish_ask("c-1", "{\"id\":\"c-1\"}", Duration::from_secs(60)).await.unwrap();
    a.publish_ask("c-2", "{\"id\":\"c-2\"}", Duration::from_millis(200)).await.unwrap();
    assert_eq!(b.published_asks(10).await.unwrap(), ["{\"id\":\"c-2\"}", "{\"id\":\"c-1\"}"], "soonest due first");
    assert_eq!(b.published_asks(1).await.unwrap(), ["{\"id\":\"c-2\"}"], "at most as many as asked");
    assert!(!b.answer_ask("c-9", "yes").await.unwrap(), "no such ask");
    assert!(b.answer_ask("c-1", "yes").await.unwrap());
    assert!(!b.answer_ask("c-1", "no").await.unwrap(), "answered once");
    assert_eq!(a.take_answer("c-1").await.unwrap().as_deref(), Some("yes"));
    assert_eq!(a.take_answer("c-1").await.unwrap(), None, "taken once");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(b.published_asks(10).await.unwrap(), ["{\"id\":\"c-1\"}"], "c-2 expired");
    assert!(!b.answer_ask("c-2", "yes").await.unwrap(), "an expired ask takes no answer");
    a.withdraw_ask("c-1").await.unwrap();
    assert!(b.published_asks(10).await.unwrap().is_empty());
    assert!(!b.answer_ask("c-1", "yes").await.unwrap(), "a withdrawn ask takes no answer");
}

#[tokio::test]
async fn decisions_are_read_in_order_from_where_a_replica_stopped() {
    let redis = Redis::start();
    let store = Store::new(&redis.url(), Duration::from_secs(1)).unwrap();
    assert!(store.decisions("", 10).await.unwrap().is_empty());
    for i in 0..5 {
        store.publish_decision(&format!("d{i}")).await.unwrap();
    }
    let first = store.decisions("", 2).await.unwrap();
    assert_eq!(first.iter().map(|(_, d)| d.as_str()).collect::<Vec<_>>(), ["d0", "d1"]);
    let rest = store.decisions(&first[1].0, 10).await.unwrap();
    assert_eq!(rest.iter().map(|(_, d)| d.as_str()).collect::<Vec<_>>(), ["d2", "d3", "d4"]);
    assert!(store.decisions(&rest[2].0, 10).await.unwrap().is_empty());
}
