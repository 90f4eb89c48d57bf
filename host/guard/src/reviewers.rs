//! Asks answered out of band: a call whose `ask` the policy routes to the gateway's
//! reviewers (a provider's `ask_reviewers`) waits here, instead of asking the caller's
//! client, until a reviewer answers or its deadline passes.
//!
//! * A pending ask is shown with its caller, provider, tool, arguments (redacted as the
//!   audit log redacts them) and the reason the policy asks.
//! * Nobody answers their own call: a reviewer whose name is the caller's is refused.
//! * Nobody answering by the deadline is a denial; so is a full queue
//!   ([`MAX_PENDING`]). A call whose caller goes away takes its ask with it.
//! * The answer names who gave it, for the audit log's `approval` record.
//! * Across replicas ([`Reviewers::share_with`]): each ask is published in the store the
//!   replicas share while it waits, so a reviewer at any replica sees it
//!   ([`Reviewers::pending_anywhere`]) and answers it ([`Reviewers::answer_anywhere`]):
//!   the answer is left in the store, and the replica that holds the call takes it
//!   (it looks every [`POLL`]), checking again that it is not the caller's own.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::oneshot;

use wasmgate_core::SharedAsks;

use crate::approver::{Approval, ApprovalRequest, Subject};

/// How often a call waiting for a reviewer looks in the shared store for an answer a
/// reviewer at another replica left.
pub const POLL: Duration = Duration::from_millis(250);

/// The longest ask id taken from a reviewer.
const MAX_ID_CHARS: usize = 256;

/// The most asks waiting at once; past them, an ask is denied at once.
pub const MAX_PENDING: usize = 1024;

/// One ask waiting for a reviewer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingAsk {
    /// What an answer names.
    pub id: String,
    /// The call's audit id.
    pub call: String,
    /// Who made the call (absent when nobody is named).
    pub caller: Option<String>,
    /// The provider.
    pub provider: String,
    /// The provider's tool name.
    pub tool: String,
    /// The call's arguments, redacted as in the audit log.
    pub arguments: Value,
    /// Why the policy asks.
    pub reason: String,
    /// `call`, or `result` (a flagged result to be shown to the model).
    pub subject: String,
    /// When it was asked, and when it is denied unless answered (Unix milliseconds).
    pub asked_ms: u64,
    /// See `asked_ms`.
    pub deadline_ms: u64,
}

/// A reviewer: the names compared with a caller's (no one answers their own call), and
/// how the audit log names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reviewer {
    /// Every name a call of the same person carries as its caller (a local user's login
    /// name, and the names the gateway gives its own user's stdio calls; a token's
    /// subject).
    pub names: Vec<String>,
    /// How the audit log names them (`local user alice (uid 1000)`).
    pub shown: String,
}

/// Why an answer was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// Nothing waits under that id (answered already, past its deadline, or abandoned).
    #[error("no ask {0} waits (answered already, past its deadline, or its caller went away)")]
    NotPending(String),
    /// The reviewer made the call.
    #[error("ask {0} is {1}'s own call, and nobody answers their own call; another reviewer must")]
    OwnCall(String, String),
    /// The store the replicas share cannot be asked, and the ask is not this replica's.
    #[error("ask {0} is not this replica's, and the shared store cannot be asked: {1}")]
    Unavailable(String, String),
}

/// An answer a reviewer at another replica left in the shared store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct SharedAnswer {
    approve: bool,
    /// The reviewer's names, checked again against the caller's by the replica that
    /// holds the call.
    names: Vec<String>,
    shown: String,
}

/// What announces each ask as it starts to wait (the gateway's webhook).
pub type Announcer = Arc<dyn Fn(&PendingAsk) + Send + Sync>;

struct Waiting {
    ask: PendingAsk,
    answer: oneshot::Sender<(bool, String)>,
}

/// The asks waiting for reviewers; see the module docs.
#[derive(Default)]
pub struct Reviewers {
    waiting: Mutex<BTreeMap<String, Waiting>>,
    announcer: Mutex<Option<Announcer>>,
    /// The store the replicas share, when the gateway is one of several.
    shared: Mutex<Option<Arc<dyn SharedAsks>>>,
}

impl std::fmt::Debug for Reviewers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reviewers").field("pending", &self.pending().len()).finish()
    }
}

/// Removes an ask from the queue when its call stops waiting, however it stops, and
/// withdraws it from the shared store.
struct Unqueue<'a> {
    reviewers: &'a Reviewers,
    id: String,
    shared: Option<Arc<dyn SharedAsks>>,
}

impl Drop for Unqueue<'_> {
    fn drop(&mut self) {
        self.reviewers.waiting.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.id);
        if let (Some(store), Ok(runtime)) = (self.shared.take(), tokio::runtime::Handle::try_current()) {
            let id = std::mem::take(&mut self.id);
            runtime.spawn(async move {
                if let Err(error) = store.withdraw(&id).await {
                    tracing::warn!(ask = %id, %error, "cannot withdraw the ask from the shared store; it expires at its deadline");
                }
            });
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Reviewers {
    /// Has `announcer` told of each ask as it starts to wait, from now on.
    pub fn announce_with(&self, announcer: Announcer) {
        *self.announcer.lock().unwrap_or_else(PoisonError::into_inner) = Some(announcer);
    }

    /// Publishes every ask in `store` while it waits, and takes answers from it: the
    /// gateway is one replica of several.
    pub fn share_with(&self, store: Arc<dyn SharedAsks>) {
        *self.shared.lock().unwrap_or_else(PoisonError::into_inner) = Some(store);
    }

    fn shared(&self) -> Option<Arc<dyn SharedAsks>> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The asks waiting at this replica and, with a shared store, at every other, oldest
    /// first. A store that cannot be asked leaves the others out (and is logged).
    pub async fn pending_anywhere(&self) -> Vec<PendingAsk> {
        let mut asks = self.pending();
        if let Some(store) = self.shared() {
            for ask in published(store.as_ref()).await.unwrap_or_default() {
                if !asks.iter().any(|a| a.id == ask.id) {
                    asks.push(ask);
                }
            }
        }
        asks.sort_by_key(|a| a.asked_ms);
        asks
    }

    /// Answers the ask `id` as `reviewer`, wherever it waits: here, as
    /// [`Reviewers::answer`] does, or at another replica, through the shared store.
    ///
    /// # Errors
    ///
    /// [`AnswerError`]: nothing waits under `id` (here or in the store), it is the
    /// reviewer's own call, or the store cannot be asked.
    pub async fn answer_anywhere(&self, id: &str, approve: bool, reviewer: &Reviewer) -> Result<(), AnswerError> {
        let not_pending = || AnswerError::NotPending(id.chars().take(MAX_ID_CHARS).collect());
        if id.chars().nth(MAX_ID_CHARS).is_some() {
            // No ask has so long an id.
            return Err(not_pending());
        }
        match self.answer(id, approve, reviewer) {
            Err(AnswerError::NotPending(_)) => {}
            answered => return answered,
        }
        let Some(store) = self.shared() else { return Err(not_pending()) };
        let unavailable = |e: wasmgate_core::StoreUnavailable| AnswerError::Unavailable(id.to_owned(), e.to_string());
        let asks = published(store.as_ref()).await.map_err(unavailable)?;
        let Some(ask) = asks.iter().find(|ask| ask.id == id) else { return Err(not_pending()) };
        if let Some(caller) = ask.caller.as_ref().filter(|caller| reviewer.names.contains(caller)) {
            return Err(AnswerError::OwnCall(id.to_owned(), caller.clone()));
        }
        let answer = SharedAnswer { approve, names: reviewer.names.clone(), shown: reviewer.shown.clone() };
        let text =
            serde_json::to_string(&answer).map_err(|e| AnswerError::Unavailable(id.to_owned(), e.to_string()))?;
        match store.answer(id, &text).await.map_err(unavailable)? {
            true => Ok(()),
            false => Err(not_pending()),
        }
    }

    /// The asks waiting now, oldest first.
    #[must_use]
    pub fn pending(&self) -> Vec<PendingAsk> {
        let waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let mut asks: Vec<PendingAsk> = waiting.values().map(|w| w.ask.clone()).collect();
        asks.sort_by_key(|a| a.asked_ms);
        asks
    }

    /// Answers the ask `id` as `reviewer`: the call it holds goes on, or is denied.
    ///
    /// # Errors
    ///
    /// [`AnswerError`]: nothing waits under `id`, or it is the reviewer's own call
    /// (it waits on for another).
    pub fn answer(&self, id: &str, approve: bool, reviewer: &Reviewer) -> Result<(), AnswerError> {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(found) = waiting.get(id) else { return Err(AnswerError::NotPending(id.to_owned())) };
        if let Some(caller) = found.ask.caller.as_ref().filter(|caller| reviewer.names.contains(caller)) {
            return Err(AnswerError::OwnCall(id.to_owned(), caller.clone()));
        }
        let Some(found) = waiting.remove(id) else { return Err(AnswerError::NotPending(id.to_owned())) };
        // A call that stopped waiting between the look and now is answered by nobody.
        found.answer.send((approve, reviewer.shown.clone())).map_err(|_| AnswerError::NotPending(id.to_owned()))
    }

    /// Puts `request` (of `caller`, its arguments `redacted`) before the reviewers and
    /// waits at most `deadline` for an answer: the approval, and who gave it.
    pub(crate) async fn ask(
        &self,
        request: &ApprovalRequest,
        caller: Option<String>,
        redacted: Value,
        deadline: Duration,
    ) -> (Approval, String) {
        let asked_ms = now_ms();
        let id = format!("{}{}", request.call, if matches!(request.subject, Subject::Call) { "" } else { "-result" });
        let ask = PendingAsk {
            id: id.clone(),
            call: request.call.clone(),
            caller,
            provider: request.provider.clone(),
            tool: request.tool.clone(),
            arguments: redacted,
            reason: request.reason.clone(),
            subject: if matches!(request.subject, Subject::Call) { "call" } else { "result" }.to_owned(),
            asked_ms,
            deadline_ms: asked_ms.saturating_add(u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX)),
        };
        let (answer, answered) = oneshot::channel();
        {
            let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
            if waiting.len() >= MAX_PENDING {
                let reason = format!("{MAX_PENDING} calls wait for reviewers already; try again later");
                return (Approval::Denied { reason }, "nobody".to_owned());
            }
            waiting.insert(id.clone(), Waiting { ask: ask.clone(), answer });
        }
        let announcer = self.announcer.lock().unwrap_or_else(PoisonError::into_inner).clone();
        if let Some(announce) = announcer {
            announce(&ask);
        }
        let shared = self.shared();
        if let Some(store) = &shared {
            let published = match serde_json::to_string(&ask) {
                Ok(text) => store.publish(&id, &text, deadline).await.map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            if let Err(error) = published {
                tracing::warn!(ask = %id, %error, "the ask is not in the shared store: only this replica's reviewers see it");
            }
        }
        let _unqueue = Unqueue { reviewers: self, id: id.clone(), shared: shared.clone() };
        let elsewhere = answered_elsewhere(shared, &id, ask.caller.as_deref());
        let answer = async {
            tokio::select! {
                here = answered => here.ok(),
                there = elsewhere => Some(there),
            }
        };
        match tokio::time::timeout(deadline, answer).await {
            Ok(Some((true, by))) => (Approval::Approved, by),
            Ok(Some((false, by))) => (Approval::Denied { reason: "a reviewer declined".into() }, by),
            Ok(None) | Err(_) => {
                let reason = format!("no reviewer answered within {} s", deadline.as_secs());
                (Approval::Denied { reason }, "nobody".to_owned())
            }
        }
    }
}

/// The asks published in `store`; those that do not read as asks are left out (and
/// logged).
async fn published(store: &dyn SharedAsks) -> Result<Vec<PendingAsk>, wasmgate_core::StoreUnavailable> {
    let texts = store.published(MAX_PENDING).await.inspect_err(|error| {
        tracing::warn!(%error, "the shared store cannot be asked for the other replicas' asks");
    })?;
    Ok(texts
        .iter()
        .filter_map(|text| {
            serde_json::from_str::<PendingAsk>(text)
                .inspect_err(|error| tracing::warn!(%error, "an ask in the shared store does not read as one"))
                .ok()
        })
        .collect())
}

/// The answer a reviewer at another replica leaves for the ask `id` in `store`, once
/// there is one that is not the caller's own (without a store: never).
async fn answered_elsewhere(store: Option<Arc<dyn SharedAsks>>, id: &str, caller: Option<&str>) -> (bool, String) {
    let Some(store) = store else { return std::future::pending().await };
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let text = match store.take_answer(id).await {
            Ok(Some(text)) => text,
            Ok(None) => continue,
            Err(error) => {
                tracing::debug!(ask = %id, %error, "the shared store cannot be asked for an answer");
                continue;
            }
        };
        match serde_json::from_str::<SharedAnswer>(&text) {
            Ok(answer) if caller.is_some_and(|caller| answer.names.iter().any(|name| name == caller)) => {
                tracing::warn!(ask = %id, "an answer from the caller themselves was left in the shared store; ignored");
            }
            Ok(answer) => return (answer.approve, answer.shown),
            Err(error) => tracing::warn!(ask = %id, %error, "an answer in the shared store does not read as one"),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn request(call: &str) -> ApprovalRequest {
        ApprovalRequest {
            call: call.into(),
            provider: "pay".into(),
            tool: "send_money".into(),
            arguments: serde_json::json!({"to": "DE89370400440532013000"}),
            reason: "the policy asks".into(),
            subject: Subject::Call,
        }
    }

    fn reviewer(name: &str) -> Reviewer {
        Reviewer { names: vec![name.into(), "local".into()], shown: format!("local user {name} (uid 1)") }
    }

    /// Waits until `reviewers` holds `count` asks.
    async fn until(reviewers: &Reviewers, count: usize) -> Vec<PendingAsk> {
        loop {
            let pending = reviewers.pending();
            if pending.len() == count {
                return pending;
            }
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn a_reviewer_answers_but_never_their_own_call_and_nobody_answering_is_a_denial() {
        let reviewers = Arc::new(Reviewers::default());
        let announced = Arc::new(Mutex::new(Vec::new()));
        let told = Arc::clone(&announced);
        reviewers.announce_with(Arc::new(move |ask: &PendingAsk| told.lock().unwrap().push(ask.id.clone())));
        let asking = Arc::clone(&reviewers);
        let waiting = tokio::spawn(async move {
            let redacted = serde_json::json!({"to": "[redacted]"});
            asking.ask(&request("c-1"), Some("bob".into()), redacted, Duration::from_secs(600)).await
        });
        let pending = until(&reviewers, 1).await;
        assert_eq!((pending[0].id.as_str(), pending[0].caller.as_deref()), ("c-1", Some("bob")));
        assert_eq!(pending[0].arguments["to"], "[redacted]", "shown as the audit log shows it");
        assert_eq!(*announced.lock().unwrap(), ["c-1"], "announced as it started to wait");
        assert_eq!(
            reviewers.answer("c-1", true, &reviewer("bob")),
            Err(AnswerError::OwnCall("c-1".into(), "bob".into()))
        );
        assert_eq!(reviewers.answer("c-9", true, &reviewer("ann")), Err(AnswerError::NotPending("c-9".into())));
        let other = Arc::clone(&reviewers);
        let local = tokio::spawn(async move {
            other.ask(&request("c-3"), Some("local".into()), Value::Null, Duration::from_secs(600)).await
        });
        until(&reviewers, 2).await;
        let refused = reviewers.answer("c-3", true, &reviewer("ann"));
        assert_eq!(refused, Err(AnswerError::OwnCall("c-3".into(), "local".into())), "any of the reviewer's names");
        local.abort();
        until(&reviewers, 1).await;
        reviewers.answer("c-1", true, &reviewer("ann")).unwrap();
        assert_eq!(waiting.await.unwrap(), (Approval::Approved, "local user ann (uid 1)".to_owned()));
        assert!(reviewers.pending().is_empty());
        assert!(reviewers.answer("c-1", false, &reviewer("ann")).is_err(), "answered once");

        let (denied, by) = reviewers.ask(&request("c-2"), None, Value::Null, Duration::from_millis(20)).await;
        assert_eq!(by, "nobody");
        assert!(matches!(denied, Approval::Denied { reason } if reason.contains("no reviewer answered")));
        assert!(reviewers.pending().is_empty(), "past its deadline, it is gone");
    }

    #[tokio::test]
    async fn a_declined_or_abandoned_ask_leaves_nothing_waiting_and_the_queue_is_bounded() {
        let reviewers = Arc::new(Reviewers::default());
        let asking = Arc::clone(&reviewers);
        let waiting = tokio::spawn(async move {
            asking.ask(&request("c-1"), Some("bob".into()), Value::Null, Duration::from_secs(600)).await
        });
        until(&reviewers, 1).await;
        reviewers.answer("c-1", false, &reviewer("ann")).unwrap();
        let (declined, by) = waiting.await.unwrap();
        assert!(matches!(declined, Approval::Denied { .. }) && by == "local user ann (uid 1)");

        let asking = Arc::clone(&reviewers);
        let abandoned =
            tokio::spawn(async move { asking.ask(&request("c-2"), None, Value::Null, Duration::from_secs(600)).await });
        until(&reviewers, 1).await;
        abandoned.abort();
        until(&reviewers, 0).await;

        let mut held = Vec::new();
        for i in 0..MAX_PENDING {
            let asking = Arc::clone(&reviewers);
            held.push(tokio::spawn(async move {
                asking.ask(&request(&format!("h-{i}")), None, Value::Null, Duration::from_secs(600)).await
            }));
        }
        until(&reviewers, MAX_PENDING).await;
        let (full, _) = reviewers.ask(&request("one-more"), None, Value::Null, Duration::from_secs(600)).await;
        assert!(matches!(full, Approval::Denied { reason } if reason.contains("wait for reviewers already")));
        for task in held {
            task.abort();
        }
    }

    /// The store of the replicas, in memory.
    #[derive(Debug, Default)]
    struct Store {
        asks: Mutex<BTreeMap<String, String>>,
        answers: Mutex<BTreeMap<String, String>>,
    }

    impl SharedAsks for Store {
        fn publish<'a>(
            &'a self,
            id: &'a str,
            ask: &'a str,
            _: Duration,
        ) -> wasmgate_core::BoxFuture<'a, Result<(), wasmgate_core::StoreUnavailable>> {
            self.asks.lock().unwrap().insert(id.into(), ask.into());
            Box::pin(std::future::ready(Ok(())))
        }

        fn withdraw<'a>(
            &'a self,
            id: &'a str,
        ) -> wasmgate_core::BoxFuture<'a, Result<(), wasmgate_core::StoreUnavailable>> {
            self.asks.lock().unwrap().remove(id);
            self.answers.lock().unwrap().remove(id);
            Box::pin(std::future::ready(Ok(())))
        }

        fn published<'a>(
            &'a self,
            _: usize,
        ) -> wasmgate_core::BoxFuture<'a, Result<Vec<String>, wasmgate_core::StoreUnavailable>> {
            let asks = self.asks.lock().unwrap().values().cloned().collect();
            Box::pin(std::future::ready(Ok(asks)))
        }

        fn answer<'a>(
            &'a self,
            id: &'a str,
            answer: &'a str,
        ) -> wasmgate_core::BoxFuture<'a, Result<bool, wasmgate_core::StoreUnavailable>> {
            let left = self.asks.lock().unwrap().contains_key(id)
                && self.answers.lock().unwrap().insert(id.into(), answer.into()).is_none();
            Box::pin(std::future::ready(Ok(left)))
        }

        fn take_answer<'a>(
            &'a self,
            id: &'a str,
        ) -> wasmgate_core::BoxFuture<'a, Result<Option<String>, wasmgate_core::StoreUnavailable>> {
            Box::pin(std::future::ready(Ok(self.answers.lock().unwrap().remove(id))))
        }
    }

    #[tokio::test]
    async fn an_ask_held_by_one_replica_is_seen_and_answered_at_another() {
        let store = Arc::new(Store::default());
        let (here, there) = (Arc::new(Reviewers::default()), Reviewers::default());
        here.share_with(Arc::clone(&store) as Arc<dyn SharedAsks>);
        there.share_with(Arc::clone(&store) as Arc<dyn SharedAsks>);
        let asking = Arc::clone(&here);
        let waiting = tokio::spawn(async move {
            asking.ask(&request("c-1"), Some("bob".into()), Value::Null, Duration::from_secs(600)).await
        });
        let seen = loop {
            let seen = there.pending_anywhere().await;
            if !seen.is_empty() {
                break seen;
            }
            tokio::task::yield_now().await;
        };
        assert_eq!((seen[0].id.as_str(), seen[0].caller.as_deref()), ("c-1", Some("bob")));
        assert!(there.pending().is_empty(), "it waits at the other replica");
        assert_eq!(
            there.answer_anywhere("c-1", true, &reviewer("bob")).await,
            Err(AnswerError::OwnCall("c-1".into(), "bob".into()))
        );
        assert_eq!(
            there.answer_anywhere("c-9", true, &reviewer("ann")).await,
            Err(AnswerError::NotPending("c-9".into()))
        );
        let long = "c".repeat(MAX_ID_CHARS + 1);
        assert_eq!(
            there.answer_anywhere(&long, true, &reviewer("ann")).await,
            Err(AnswerError::NotPending("c".repeat(MAX_ID_CHARS))),
            "an id past the longest is no ask, and is not echoed whole"
        );
        // An answer from the caller left in the store by hand is not taken.
        let own =
            serde_json::to_string(&SharedAnswer { approve: true, names: vec!["bob".into()], shown: "bob".into() });
        store.answers.lock().unwrap().insert("c-1".into(), own.unwrap());
        tokio::time::sleep(POLL * 3).await;
        assert!(!waiting.is_finished(), "the caller's own answer was ignored");
        there.answer_anywhere("c-1", false, &reviewer("ann")).await.unwrap();
        let (approval, by) = waiting.await.unwrap();
        assert!(matches!(approval, Approval::Denied { .. }), "{approval:?}");
        assert_eq!(by, "local user ann (uid 1)");
        tokio::time::sleep(POLL).await;
        assert!(store.asks.lock().unwrap().is_empty(), "withdrawn once answered");
        assert!(there.answer_anywhere("c-1", true, &reviewer("ann")).await.is_err(), "answered once");
    }
}
