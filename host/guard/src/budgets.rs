//! [`Budgets`]: the token buckets of the policy's `[[budgets]]`, one per budget and
//! caller (and tool, with `each = "tool"`).
//!
//! A call covered by several budgets takes a token from each, or from none: it is
//! refused when any of them is empty, and then the others keep theirs (a refused call
//! costs nothing). That all-or-nothing take over several buckets is why the buckets are
//! counted here rather than by a rate-limiting crate, whose limiters each take on their
//! own.
//!
//! Buckets are keyed by the budget's [`fingerprint`](wasmgate_policy::Budget::fingerprint):
//! a reload that keeps a budget as written keeps what its buckets hold. At most
//! [`MAX_BUCKETS`] are kept; a full bucket is the same as none, so full ones are dropped
//! first, and when every kept bucket is in use a new caller is refused for a second
//! rather than let through uncounted.
//!
//! Several replicas of one gateway count in one place instead: [`Budgets::shared`] hands
//! each take to a [`SharedBuckets`] store, which takes from all the call's buckets or
//! from none in one step. A store that cannot be reached refuses the call
//! ([`BudgetRefusal::Unavailable`]): a replica never falls back to counting on its own, which
//! would let each replica grant the whole budget again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use sha2::Digest as _;
use wasmgate_core::{BucketSpec, SharedBuckets, StoreUnavailable};
use wasmgate_policy::{Budget, Each, Policy};

/// The most buckets kept at once.
pub const MAX_BUCKETS: usize = 65_536;

/// Why a call may not run now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limited {
    /// The budget that is used up (its description), or why the call was not counted.
    pub budget: String,
    /// When a call may succeed again.
    pub retry_after: Duration,
}

/// Why a call may not take from its budgets.
#[derive(Debug)]
pub enum BudgetRefusal {
    /// A budget is used up.
    Limited(Limited),
    /// The shared store that counts the budgets cannot be reached.
    Unavailable(StoreUnavailable),
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// What it holds at `now`, refilled since it was last counted.
    fn level(&self, budget: &Budget, now: Instant) -> f64 {
        let refilled = now.saturating_duration_since(self.at).as_secs_f64() / budget.interval().as_secs_f64();
        (self.tokens + refilled).min(f64::from(budget.burst))
    }
}

/// The buckets of every budget; see the module docs.
#[derive(Debug, Default)]
pub struct Budgets {
    buckets: Mutex<HashMap<(String, String, String), Bucket>>,
    /// Where the buckets are counted instead, when replicas share them.
    shared: Option<Arc<dyn SharedBuckets>>,
}

impl Budgets {
    /// Buckets counted in `store`, shared with every replica that uses it.
    #[must_use]
    pub fn shared(store: Arc<dyn SharedBuckets>) -> Self {
        Self { buckets: Mutex::default(), shared: Some(store) }
    }

    /// Takes a token for a call as [`take`](Self::take) does, in the shared store when
    /// there is one.
    ///
    /// # Errors
    ///
    /// [`BudgetRefusal::Limited`] when a budget is used up; [`BudgetRefusal::Unavailable`] when the
    /// shared store cannot be reached (the call is not let through uncounted).
    pub async fn take_now(
        &self,
        policy: &Policy,
        provider: &str,
        tool: &str,
        subject: &str,
        facts: Option<&Map<String, Value>>,
    ) -> Result<(), BudgetRefusal> {
        let Some(store) = &self.shared else {
            return self.take(policy, provider, tool, subject, facts, Instant::now()).map_err(BudgetRefusal::Limited);
        };
        let covering = covering(policy, provider, tool, facts);
        if covering.is_empty() {
            return Ok(());
        }
        let subject = bounded(subject);
        let specs: Vec<BucketSpec> = covering
            .iter()
            .map(|budget| {
                let (fingerprint, subject, tool) = key(budget, &subject, provider, tool);
                // Lengths first, so no choice of names makes two keys alike.
                let key =
                    format!("{}:{fingerprint}{}:{subject}{}:{tool}", fingerprint.len(), subject.len(), tool.len());
                BucketSpec { key, interval: budget.interval(), burst: budget.burst }
            })
            .collect();
        match store.take(&specs).await {
            Ok(None) => Ok(()),
            Ok(Some((index, retry_after))) => {
                let budget = covering.get(index).map_or_else(|| "a budget".to_owned(), |b| b.describe());
                Err(BudgetRefusal::Limited(Limited { budget, retry_after }))
            }
            Err(unavailable) => Err(BudgetRefusal::Unavailable(unavailable)),
        }
    }

    /// Takes a token for a call of `provider`'s `tool` by `subject` (whose facts are
    /// `facts`) from every budget of `policy` that covers it, at `now`; or, when one is
    /// empty, takes none and says which and for how long.
    ///
    /// # Errors
    ///
    /// [`Limited`] when a budget that covers the call is used up.
    pub fn take(
        &self,
        policy: &Policy,
        provider: &str,
        tool: &str,
        subject: &str,
        facts: Option<&Map<String, Value>>,
        now: Instant,
    ) -> Result<(), Limited> {
        let covering = covering(policy, provider, tool, facts);
        if covering.is_empty() {
            return Ok(());
        }
        let subject = bounded(subject);
        let key = |budget: &Budget| key(budget, &subject, provider, tool);
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        let mut levels = Vec::with_capacity(covering.len());
        let mut empty: Option<Limited> = None;
        for budget in &covering {
            let key = key(budget);
            let level = buckets.get(&key).map_or(f64::from(budget.burst), |bucket| bucket.level(budget, now));
            if level < 1.0 {
                let wait = budget.interval().mul_f64(1.0 - level);
                if empty.as_ref().is_none_or(|e| wait > e.retry_after) {
                    empty = Some(Limited { budget: budget.describe(), retry_after: wait });
                }
            }
            levels.push((key, level));
        }
        if let Some(limited) = empty {
            return Err(limited);
        }
        let new = levels.iter().filter(|(key, _)| !buckets.contains_key(key)).count();
        if buckets.len() + new > MAX_BUCKETS {
            let budgets = policy.budgets();
            buckets.retain(|(fingerprint, _, _), bucket| {
                budgets
                    .iter()
                    .find(|b| b.fingerprint() == fingerprint)
                    .is_some_and(|b| bucket.level(b, now) < f64::from(b.burst))
            });
            if buckets.len() + new > MAX_BUCKETS {
                let budget = "too many callers are being counted at once".to_owned();
                return Err(Limited { budget, retry_after: Duration::from_secs(1) });
            }
        }
        for (key, level) in levels {
            buckets.insert(key, Bucket { tokens: level - 1.0, at: now });
        }
        Ok(())
    }

    /// How many buckets are kept.
    #[must_use]
    pub fn len(&self) -> usize {
        self.buckets.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Whether none is kept.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The budgets of `policy` that cover a call of `provider`'s `tool` by a caller of `facts`.
fn covering<'p>(policy: &'p Policy, provider: &str, tool: &str, facts: Option<&Map<String, Value>>) -> Vec<&'p Budget> {
    policy.budgets().iter().filter(|b| b.covers(provider, tool, facts)).collect()
}

/// The key of `budget`'s bucket for `subject`'s call of `provider`'s `tool`.
fn key(budget: &Budget, subject: &str, provider: &str, tool: &str) -> (String, String, String) {
    let tool = match budget.each {
        Each::Caller => String::new(),
        Each::Tool => format!("{provider}/{tool}"),
    };
    (budget.fingerprint().to_owned(), subject.to_owned(), tool)
}

/// The longest subject kept as it is in a bucket's key.
const MAX_SUBJECT_BYTES: usize = 128;

/// `subject`, or its SHA-256 when it is long: a bucket's key stays small whatever a
/// token's `sub` holds.
fn bounded(subject: &str) -> String {
    if subject.len() <= MAX_SUBJECT_BYTES {
        return subject.to_owned();
    }
    let digest = sha2::Sha256::digest(subject.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;
    use wasmgate_core::BoxFuture;

    const POLICY: &str = r#"
[providers.cal]
unlisted = "allow"
[providers.mail]
unlisted = "allow"

[[budgets]]
provider = "cal"
rate = 2
per = "second"

[[budgets]]
tools = "send"
rate = 1
per = "minute"
each = "tool"

[[budgets]]
groups = ["free"]
rate = 1
per = "hour"
"#;

    fn policy(text: &str) -> Policy {
        Policy::from_toml(text, "policy.toml").unwrap()
    }

    #[test]
    fn a_bucket_gives_its_burst_then_one_call_per_interval_for_each_caller_apart() {
        let (p, budgets, t0) = (policy(POLICY), Budgets::default(), Instant::now());
        assert!(budgets.take(&p, "cal", "list", "ann", None, t0).is_ok());
        assert!(budgets.take(&p, "cal", "list", "ann", None, t0).is_ok());
        let limited = budgets.take(&p, "cal", "other", "ann", None, t0).unwrap_err();
        assert_eq!(limited.budget, "budgets[0] (2 calls per second)");
        assert_eq!(limited.retry_after, Duration::from_millis(500));
        // Another caller has a bucket of its own; mail is not covered.
        assert!(budgets.take(&p, "cal", "list", "bob", None, t0).is_ok());
        assert!(budgets.take(&p, "mail", "list", "ann", None, t0).is_ok());
        // Half a second brings one token back, and only one.
        let later = t0 + Duration::from_millis(500);
        assert!(budgets.take(&p, "cal", "list", "ann", None, later).is_ok());
        let again = budgets.take(&p, "cal", "list", "ann", None, later).unwrap_err();
        assert_eq!(again.retry_after, Duration::from_millis(500));
    }

    #[test]
    fn a_call_refused_by_one_budget_takes_nothing_from_the_others() {
        let text = format!("{POLICY}\n[[budgets]]\nprovider = \"cal\"\ntools = \"send\"\nrate = 1\nper = \"day\"\n");
        let (p, budgets, t0) = (policy(&text), Budgets::default(), Instant::now());
        assert!(budgets.take(&p, "cal", "send", "ann", None, t0).is_ok());
        // The per-minute `send` budget is empty; budgets[0] still has its second token.
        let limited = budgets.take(&p, "cal", "send", "ann", None, t0).unwrap_err();
        assert_eq!(limited.budget, "budgets[3] (1 calls per day)", "the longest wait is named");
        assert_eq!(limited.retry_after, Duration::from_secs(86_400));
        assert!(budgets.take(&p, "cal", "list", "ann", None, t0).is_ok(), "budgets[0] kept its token");
    }

    #[test]
    fn each_tool_counts_apart_and_groups_pick_the_callers() {
        let (p, budgets, t0) = (policy(POLICY), Budgets::default(), Instant::now());
        let free = json!({"subject": "f", "groups": ["free"]});
        let free = free.as_object();
        assert!(budgets.take(&p, "mail", "send", "ann", None, t0).is_ok());
        assert!(budgets.take(&p, "mail", "send", "ann", None, t0).is_err());
        assert!(budgets.take(&p, "cal", "send", "ann", None, t0).is_ok(), "one bucket per tool");
        assert!(budgets.take(&p, "mail", "read", "f", free, t0).is_ok());
        let limited = budgets.take(&p, "mail", "read", "f", free, t0).unwrap_err();
        assert_eq!(limited.retry_after, Duration::from_secs(3600));
        assert!(budgets.take(&p, "mail", "read", "g", None, t0).is_ok(), "not in the group: not covered");
    }

    #[test]
    fn a_reload_keeps_the_buckets_of_a_budget_written_the_same_way() {
        let budgets = Budgets::default();
        let t0 = Instant::now();
        let before = policy(POLICY);
        for _ in 0..2 {
            assert!(budgets.take(&before, "cal", "x", "ann", None, t0).is_ok());
        }
        let same = policy(POLICY);
        assert!(budgets.take(&same, "cal", "x", "ann", None, t0).is_err(), "the same budget, still empty");
        let raised = policy(&POLICY.replace("rate = 2", "rate = 5"));
        assert!(budgets.take(&raised, "cal", "x", "ann", None, t0).is_ok(), "a changed budget starts full");
    }

    /// A shared store that answers `answer` and keeps what it was asked.
    #[derive(Debug)]
    struct Store {
        answer: Result<Option<(usize, Duration)>, String>,
        asked: Mutex<Vec<BucketSpec>>,
    }

    impl SharedBuckets for Store {
        fn take<'a>(
            &'a self,
            buckets: &'a [BucketSpec],
        ) -> BoxFuture<'a, Result<Option<(usize, Duration)>, StoreUnavailable>> {
            self.asked.lock().unwrap().extend(buckets.iter().cloned());
            Box::pin(std::future::ready(self.answer.clone().map_err(|why| StoreUnavailable(why.into()))))
        }
    }

    fn now<T>(future: impl std::future::Future<Output = T>) -> T {
        use futures_util::FutureExt as _;
        future.now_or_never().unwrap()
    }

    #[test]
    fn shared_budgets_are_taken_in_the_store_and_never_counted_here_when_it_is_gone() {
        let p = policy(POLICY);
        let store = |answer| Arc::new(Store { answer, asked: Mutex::default() });
        let taken = store(Ok(None));
        let budgets = Budgets::shared(Arc::clone(&taken) as Arc<dyn SharedBuckets>);
        assert!(now(budgets.take_now(&p, "cal", "send", "ann", None)).is_ok());
        let asked = taken.asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 2, "budgets[0] and the per-tool budgets[1] cover it: {asked:?}");
        assert_eq!((asked[0].interval, asked[0].burst), (Duration::from_millis(500), 2));
        assert!(asked[1].key.ends_with("cal/send"), "{}", asked[1].key);
        assert_ne!(asked[0].key, asked[1].key);
        assert!(budgets.is_empty(), "nothing is counted in this process");
        // Not covered: the store is not asked.
        assert!(now(budgets.take_now(&p, "mail", "list", "ann", None)).is_ok());
        assert_eq!(taken.asked.lock().unwrap().len(), 2);

        let empty = Budgets::shared(store(Ok(Some((1, Duration::from_secs(60))))));
        let limited =
            Limited { budget: "budgets[1] (1 calls per minute)".into(), retry_after: Duration::from_secs(60) };
        let refused = now(empty.take_now(&p, "cal", "send", "ann", None));
        assert!(matches!(refused, Err(BudgetRefusal::Limited(ref l)) if *l == limited), "{refused:?}");

        let gone = Budgets::shared(store(Err("connection refused".into())));
        let refused = now(gone.take_now(&p, "cal", "x", "ann", None));
        assert!(
            matches!(&refused, Err(BudgetRefusal::Unavailable(e)) if e.to_string() == "connection refused"),
            "{refused:?}"
        );
        assert!(gone.is_empty(), "no bucket was taken here instead");
    }

    #[test]
    fn a_long_subject_is_kept_as_its_hash_and_still_counted_as_itself() {
        let (p, budgets, t0) = (policy(POLICY), Budgets::default(), Instant::now());
        let long = "s".repeat(10_000);
        for _ in 0..2 {
            assert!(budgets.take(&p, "cal", "x", &long, None, t0).is_ok());
        }
        assert!(budgets.take(&p, "cal", "x", &long, None, t0).is_err());
        assert!(budgets.take(&p, "cal", "x", &"s".repeat(9_999), None, t0).is_ok(), "another subject");
        assert_eq!(bounded(&long).len(), "sha256:".len() + 64);
        assert_eq!(bounded("ann"), "ann");
    }

    #[test]
    fn the_buckets_kept_are_bounded_and_full_ones_go_first() {
        let (p, budgets, t0) = (policy(POLICY), Budgets::default(), Instant::now());
        for i in 0..MAX_BUCKETS {
            assert!(budgets.take(&p, "cal", "x", &format!("c{i}"), None, t0).is_ok());
        }
        let limited = budgets.take(&p, "cal", "x", "one-too-many", None, t0).unwrap_err();
        assert_eq!(limited.budget, "too many callers are being counted at once");
        // A second later every bucket is full again, so they make room.
        let later = t0 + Duration::from_secs(1);
        assert!(budgets.take(&p, "cal", "x", "one-too-many", None, later).is_ok());
        assert_eq!(budgets.len(), 1);
    }
}
