//! Asking the person behind a client to confirm a call (an `ask` verdict), two ways:
//!
//! * **Deferred** (2026-07-28, a client that declared `elicitation`): the call ends
//!   with an `input_required` result whose one input request, `approval`, is an
//!   `elicitation/create`, and whose `requestState` is signed ([`Approvals`]). The
//!   client asks its user and calls again with `inputResponses.approval` and the
//!   state; the state is checked (the same tool, the same arguments, not expired,
//!   never redeemed before) and the answer given to the approver.
//! * **Live** (the handshake era, a client that declared `elicitation`): an
//!   `elicitation/create` request goes to the client in the middle of the call (on
//!   stdio, or on the call's SSE stream) and its response (on stdio, or POSTed in the
//!   session) answers ([`Live`], [`Replies`]).
//!
//! A client that declared neither gets no question: the gateway's fallback approver
//! answers (by default nobody, so the call is denied).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};
use wasmgate_core::{Answer, Ask, BoxFuture, CallContext, CancellationToken, Input, InputRefusal, SharedStore, report};
use wasmgate_protocol::server::{confirm_elicitation_params, confirmed};
use wasmgate_protocol::{Id, request};

use super::Caps;

/// The key of the one input request a deferred question sends.
pub(crate) const APPROVAL_KEY: &str = "approval";

/// How long a signed request state stays redeemable.
const STATE_LIFETIME: Duration = Duration::from_secs(600);

/// Most redeemed states remembered (each until it expires); past it, new states are
/// refused until old ones expire, rather than forgetting one that could be replayed.
const MAX_REDEEMED: usize = 65_536;

/// A question put off to the client's retry: answers from the retry's input
/// responses, or records the question for the `input_required` result.
#[derive(Debug, Default)]
pub(crate) struct Deferred {
    /// The answer the retry carried, if this is a verified retry.
    answer: Option<bool>,
    /// What the client can be asked.
    caps: Caps,
    /// The question asked, when the call is to end with `input_required`.
    pending: Mutex<Option<String>>,
    /// A provider's round of input put off to the client, when the call is to end with
    /// `input_required` for it.
    round: Mutex<Option<PutOff>>,
}

/// A provider's round of input put off to the client.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PutOff {
    /// Key to `{method, params}`, for the client.
    pub(crate) requests: Map<String, Value>,
    /// Key to result, answered already (not by the client).
    pub(crate) answered: Map<String, Value>,
    /// The provider's `requestState`.
    pub(crate) state: Option<String>,
}

impl Deferred {
    pub(crate) fn new(answer: Option<bool>, caps: Caps) -> Self {
        Self { answer, caps, pending: Mutex::new(None), round: Mutex::new(None) }
    }

    /// The question the call deferred, if any.
    pub(crate) fn pending(&self) -> Option<String> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The provider's round the call put off, if any.
    pub(crate) fn round(&self) -> Option<PutOff> {
        self.round.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Whether the call it served was approved by the retry.
    pub(crate) fn approved(&self) -> bool {
        self.answer == Some(true)
    }
}

/// Whether a client that declared `caps` can be asked `method` (roots are never asked
/// of it: the gateway answers them from the policy). `elicitation/create:url` names a
/// URL-mode elicitation, which needs `elicitation.url`.
pub(crate) fn askable(caps: Caps, method: &str) -> bool {
    match method {
        "elicitation/create" => caps.elicitation,
        "elicitation/create:url" => caps.elicitation_url,
        "sampling/createMessage" => caps.sampling,
        _ => false,
    }
}

/// The name `askable` knows a request by: a URL-mode elicitation is its own.
fn asked_as<'a>(method: &'a str, params: &Map<String, Value>) -> &'a str {
    match (method, params.get("mode").and_then(Value::as_str)) {
        ("elicitation/create", Some("url")) => "elicitation/create:url",
        _ => method,
    }
}

fn not_askable(method: &str) -> InputRefusal {
    InputRefusal::Declined(format!("the client did not declare that it can answer {method}"))
}

impl Input for Deferred {
    fn can(&self, method: &str) -> bool {
        askable(self.caps, method)
    }

    fn request(&self, method: String, params: Map<String, Value>) -> BoxFuture<'static, Result<Value, InputRefusal>> {
        let asked = asked_as(&method, &params);
        let outcome = if askable(self.caps, asked) { InputRefusal::Deferred } else { not_askable(asked) };
        Box::pin(std::future::ready(Err(outcome)))
    }

    fn defer(&self, requests: Map<String, Value>, answered: Map<String, Value>, state: Option<String>) -> bool {
        *self.round.lock().unwrap_or_else(PoisonError::into_inner) = Some(PutOff { requests, answered, state });
        true
    }
}

impl Ask for Deferred {
    fn confirm(&self, question: String, deferrable: bool) -> BoxFuture<'static, Answer> {
        let answer = match (self.answer, deferrable) {
            // A retry's answer is to the one question the call deferred: whether it runs.
            (Some(true), true) => Answer::Yes,
            (Some(false), true) => Answer::No,
            (None, true) => {
                *self.pending.lock().unwrap_or_else(PoisonError::into_inner) = Some(question);
                Answer::Deferred
            }
            // A question that cannot wait (showing a flagged result) was never put to
            // the user, retry or not: approving the call does not answer it.
            (_, false) => Answer::No,
        };
        Box::pin(std::future::ready(answer))
    }
}

/// The `inputRequests` of a deferred question.
pub(crate) fn input_requests(question: &str) -> Map<String, Value> {
    let mut elicit = Map::new();
    elicit.insert("method".into(), Value::String("elicitation/create".into()));
    elicit.insert("params".into(), Value::Object(confirm_elicitation_params(question)));
    let mut requests = Map::new();
    requests.insert(APPROVAL_KEY.into(), Value::Object(elicit));
    requests
}

/// Whether a retry's `inputResponses` confirm the approval.
pub(crate) fn approved(input_responses: &Map<String, Value>) -> bool {
    input_responses.get(APPROVAL_KEY).is_some_and(confirmed)
}

/// What a request state carries besides its binding to one call.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Carried {
    /// The call was approved (a state issued for a provider's round of a call that an
    /// `ask` verdict let run): its retry is not asked again.
    pub(crate) approved: bool,
    /// A provider's round of input put off to the client.
    pub(crate) round: Option<Round>,
}

/// A provider's round, as a state carries it to the retry.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Round {
    /// The keys the client is to answer.
    pub(crate) keys: Vec<String>,
    /// The answers given already.
    pub(crate) answered: Map<String, Value>,
    /// The provider's `requestState`.
    pub(crate) state: Option<String>,
}

impl Carried {
    fn encode(&self) -> Option<String> {
        if *self == Self::default() {
            return None;
        }
        let mut carried = Map::new();
        carried.insert("approved".into(), Value::Bool(self.approved));
        if let Some(round) = &self.round {
            let mut r = Map::new();
            r.insert("keys".into(), Value::Array(round.keys.iter().cloned().map(Value::String).collect()));
            r.insert("answered".into(), Value::Object(round.answered.clone()));
            r.insert("state".into(), round.state.clone().map_or(Value::Null, Value::String));
            carried.insert("round".into(), Value::Object(r));
        }
        Some(URL_SAFE_NO_PAD.encode(Value::Object(carried).to_string()))
    }

    fn decode(text: &str) -> Option<Self> {
        let bytes = URL_SAFE_NO_PAD.decode(text).ok()?;
        let Value::Object(carried) = serde_json::from_slice(&bytes).ok()? else { return None };
        let approved = carried.get("approved")?.as_bool()?;
        let round = match carried.get("round") {
            None => None,
            Some(r) => Some(Round {
                keys: r
                    .get("keys")?
                    .as_array()?
                    .iter()
                    .map(|k| k.as_str().map(str::to_owned))
                    .collect::<Option<_>>()?,
                answered: r.get("answered")?.as_object()?.clone(),
                state: match r.get("state")? {
                    Value::Null => None,
                    state => Some(state.as_str()?.to_owned()),
                },
            }),
        };
        Some(Self { approved, round })
    }
}

/// The longest request state redeemed (a provider's own state and answers ride in it).
const MAX_STATE_BYTES: usize = 256 << 10;

/// What a request state is bound to: one caller's request, its method, name and
/// arguments.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Subject<'a> {
    /// Who asked ([`Requester::of`]): a state is redeemed by the caller it was issued
    /// to, and by nobody else.
    pub(crate) requester: &'a Requester,
    /// `tools/call` or `prompts/get`.
    pub(crate) method: &'a str,
    /// The tool's or the prompt's name.
    pub(crate) name: &'a str,
    /// Its arguments.
    pub(crate) arguments: &'a Map<String, Value>,
}

/// Who a request state is for: the issuer and subject of the caller's token, the local
/// user's name (no issuer), or nobody (both empty) where callers are not told apart.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Requester {
    issuer: String,
    subject: String,
}

impl Requester {
    /// The caller of the request `context` belongs to.
    pub(crate) fn of(context: &CallContext) -> Self {
        context.caller.as_ref().map_or_else(Self::default, |caller| Self {
            issuer: caller.claims.get("iss").and_then(Value::as_str).unwrap_or_default().to_owned(),
            subject: caller.subject.clone(),
        })
    }
}

/// Signs and redeems request states: `hex(expiry ‖ nonce) [. base64url(carried)] .
/// hex(MAC)`, the MAC a keyed BLAKE3 over the caller (its token's issuer and subject),
/// the method, the tool's or prompt's name, the arguments, the expiry, the nonce and
/// what it carries, under a key drawn at start-up. A state is bound to one caller's
/// request, refused unspent to anyone else, and redeemable once: once by this process, or, with
/// a [`SharedStore`], once by every replica that shares it and the key.
#[derive(Debug)]
pub(crate) struct Approvals {
    key: [u8; 32],
    redeemed: Mutex<HashMap<[u8; 16], u64>>,
    /// Where spent states are remembered instead, when replicas share them.
    shared: Option<Arc<dyn SharedStore>>,
}

/// Why a request state is not redeemed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unredeemed {
    /// It is not one to redeem: why.
    Invalid(&'static str),
    /// Whether it was spent cannot be known now: the shared store cannot be reached
    /// (why, for the log).
    Unavailable(String),
}

impl Approvals {
    /// A fresh key, or `None` when the OS random source fails (then nothing is deferred).
    pub(crate) fn new() -> Option<Self> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).ok()?;
        Some(Self { key, redeemed: Mutex::default(), shared: None })
    }

    /// Under `key`, shared with the other replicas, which remember spent states in `store`.
    pub(crate) fn shared(key: [u8; 32], store: Arc<dyn SharedStore>) -> Self {
        Self { key, redeemed: Mutex::default(), shared: Some(store) }
    }

    fn mac(&self, subject: Subject<'_>, expiry: u64, nonce: &[u8; 16], carried: &str) -> blake3::Hash {
        let mut hasher = blake3::Hasher::new_keyed(&self.key);
        let who = subject.requester;
        for part in [who.issuer.as_str(), who.subject.as_str(), subject.method, subject.name] {
            hasher.update(&(part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
        // Straight into the hash: no copy of the arguments, no intermediate text.
        if serde_json::to_writer(&mut hasher, subject.arguments).is_err() {
            hasher.update(b"\0unserializable");
        }
        hasher.update(&expiry.to_le_bytes());
        hasher.update(nonce);
        hasher.update(&(carried.len() as u64).to_le_bytes());
        hasher.update(carried.as_bytes());
        hasher.finalize()
    }

    /// A state for `subject`, carrying `carried`.
    pub(crate) fn issue(&self, subject: Subject<'_>, carried: &Carried) -> Option<String> {
        let mut nonce = [0u8; 16];
        getrandom::fill(&mut nonce).ok()?;
        let expiry = now().saturating_add(STATE_LIFETIME.as_secs());
        let carried = carried.encode();
        let mac = self.mac(subject, expiry, &nonce, carried.as_deref().unwrap_or_default());
        let head = format!("{}{}", hex::encode(expiry.to_be_bytes()), hex::encode(nonce));
        let state = match carried {
            Some(carried) => format!("{head}.{carried}.{}", mac.to_hex()),
            None => format!("{head}.{}", mac.to_hex()),
        };
        (state.len() <= MAX_STATE_BYTES).then_some(state)
    }

    /// Checks `state` for `subject`, spends it (in the shared store, when there is one),
    /// and gives what it carries.
    pub(crate) async fn redeem(&self, state: &str, subject: Subject<'_>) -> Result<Carried, Unredeemed> {
        let (carried, nonce, expiry) = self.check(state, subject).map_err(Unredeemed::Invalid)?;
        let Some(store) = &self.shared else {
            return self.spend_here(nonce, expiry).map(|()| carried).map_err(Unredeemed::Invalid);
        };
        match store.spend(&nonce, expiry).await {
            Ok(true) => Ok(carried),
            Ok(false) => Err(Unredeemed::Invalid("it has been used already")),
            Err(unavailable) => Err(Unredeemed::Unavailable(report(&unavailable))),
        }
    }

    /// Checks `state` for `subject`: what it carries, its nonce and its expiry.
    fn check(&self, state: &str, subject: Subject<'_>) -> Result<(Carried, [u8; 16], u64), &'static str> {
        if state.len() > MAX_STATE_BYTES {
            return Err("malformed");
        }
        let (rest, mac) = state.rsplit_once('.').ok_or("malformed")?;
        let (head, carried_text) = rest.split_once('.').unwrap_or((rest, ""));
        let head = hex::decode(head).map_err(|_| "malformed")?;
        if head.len() != 24 {
            return Err("malformed");
        }
        let (expiry, nonce) = head.split_at(8);
        let expiry = u64::from_be_bytes(expiry.try_into().map_err(|_| "malformed")?);
        let nonce: [u8; 16] = nonce.try_into().map_err(|_| "malformed")?;
        let mac = blake3::Hash::from_hex(mac).map_err(|_| "malformed")?;
        // Hash's equality is constant-time.
        if self.mac(subject, expiry, &nonce, carried_text) != mac {
            return Err("it was not issued for this call");
        }
        let carried = if carried_text.is_empty() {
            Carried::default()
        } else {
            Carried::decode(carried_text).ok_or("malformed")?
        };
        if expiry < now() {
            return Err("it has expired");
        }
        Ok((carried, nonce, expiry))
    }

    /// Spends `nonce` in this process's memory.
    fn spend_here(&self, nonce: [u8; 16], expiry: u64) -> Result<(), &'static str> {
        let now = now();
        let mut redeemed = self.redeemed.lock().unwrap_or_else(PoisonError::into_inner);
        redeemed.retain(|_, until| *until >= now);
        if redeemed.contains_key(&nonce) {
            return Err("it has been used already");
        }
        if redeemed.len() >= MAX_REDEEMED {
            return Err("too many approvals are outstanding; try again later");
        }
        redeemed.insert(nonce, expiry);
        Ok(())
    }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Requests the server sent a client (on a stdio connection, or in an HTTP session),
/// waiting for their answers by id.
#[derive(Debug, Default)]
pub(crate) struct Replies {
    next: AtomicU64,
    waiting: Mutex<HashMap<Id, oneshot::Sender<Option<Value>>>>,
}

impl Replies {
    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<Id, oneshot::Sender<Option<Value>>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands a response from the client to the request waiting for it (`None` for an
    /// error response). A response to no request of ours is ignored.
    pub(crate) fn resolve(&self, id: &Id, result: Option<Value>) {
        match self.waiting().remove(id) {
            Some(waiting) => {
                let _ = waiting.send(result);
            }
            None => tracing::debug!(%id, "a response from the client to no request of ours: ignored"),
        }
    }

    /// Sends `method` on `out` and waits for the answer: `None` for an error response,
    /// no answer within `timeout`, a closed stream or `cancel`.
    async fn ask(
        &self,
        out: &mpsc::Sender<Value>,
        method: &str,
        params: Map<String, Value>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Option<Value> {
        let id = Id::String(format!("wasmgate-{}", self.next.fetch_add(1, Ordering::Relaxed)));
        let (answer, waiting) = oneshot::channel();
        self.waiting().insert(id.clone(), answer);
        let outcome = async {
            out.send(request(&id, method, Some(params))).await.ok()?;
            tokio::select! {
                answer = waiting => answer.ok().flatten(),
                () = cancel.cancelled() => None,
                () = tokio::time::sleep(timeout) => None,
            }
        }
        .await;
        self.waiting().remove(&id);
        outcome
    }
}

/// Asks through `elicitation/create` on `out` while the call waits; the answer comes
/// back through `replies`.
#[derive(Debug)]
pub(crate) struct Live {
    pub(crate) out: mpsc::Sender<Value>,
    pub(crate) replies: Arc<Replies>,
    pub(crate) timeout: Duration,
    pub(crate) cancel: CancellationToken,
    /// What the client can be asked.
    pub(crate) caps: Caps,
}

impl Input for Live {
    fn can(&self, method: &str) -> bool {
        askable(self.caps, method)
    }

    fn request(&self, method: String, params: Map<String, Value>) -> BoxFuture<'static, Result<Value, InputRefusal>> {
        let asked = asked_as(&method, &params);
        if !askable(self.caps, asked) {
            return Box::pin(std::future::ready(Err(not_askable(asked))));
        }
        let (out, replies, timeout, cancel) =
            (self.out.clone(), Arc::clone(&self.replies), self.timeout, self.cancel.clone());
        Box::pin(async move {
            replies.ask(&out, &method, params, timeout, &cancel).await.ok_or_else(|| {
                InputRefusal::Declined(format!("the client did not answer {method} (an error, or no answer in time)"))
            })
        })
    }

    fn defer(&self, _: Map<String, Value>, _: Map<String, Value>, _: Option<String>) -> bool {
        false
    }
}

impl Ask for Live {
    fn confirm(&self, question: String, _deferrable: bool) -> BoxFuture<'static, Answer> {
        if !self.caps.elicitation {
            return Box::pin(std::future::ready(Answer::No));
        }
        let (out, replies, timeout, cancel) =
            (self.out.clone(), Arc::clone(&self.replies), self.timeout, self.cancel.clone());
        Box::pin(async move {
            let params = confirm_elicitation_params(&question);
            match replies.ask(&out, "elicitation/create", params, timeout, &cancel).await {
                Some(answer) if confirmed(&answer) => Answer::Yes,
                _ => Answer::No,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;
    use wasmgate_core::StoreUnavailable;

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    /// Nobody in particular: where callers are not told apart.
    static NOBODY: Requester = Requester { issuer: String::new(), subject: String::new() };

    fn call<'a>(name: &'a str, arguments: &'a Map<String, Value>) -> Subject<'a> {
        Subject { requester: &NOBODY, method: "tools/call", name, arguments }
    }

    fn caller(issuer: &str, subject: &str) -> Requester {
        Requester { issuer: issuer.into(), subject: subject.into() }
    }

    /// A redemption without a shared store, which never waits.
    fn redeemed(approvals: &Approvals, state: &str, subject: Subject<'_>) -> Result<Carried, &'static str> {
        use futures_util::FutureExt as _;
        match approvals.redeem(state, subject).now_or_never() {
            Some(Ok(carried)) => Ok(carried),
            Some(Err(Unredeemed::Invalid(why))) => Err(why),
            Some(Err(Unredeemed::Unavailable(_))) | None => Err("no answer"),
        }
    }

    /// Spent nonces of several replicas, in one place; `down` makes it unreachable.
    #[derive(Debug, Default)]
    struct Store {
        spent: Mutex<std::collections::HashSet<[u8; 16]>>,
        down: std::sync::atomic::AtomicBool,
    }

    impl SharedStore for Store {
        fn spend<'a>(&'a self, nonce: &'a [u8; 16], _: u64) -> BoxFuture<'a, Result<bool, StoreUnavailable>> {
            let outcome = if self.down.load(Ordering::Relaxed) {
                Err(StoreUnavailable("connection refused".into()))
            } else {
                Ok(self.spent.lock().unwrap().insert(*nonce))
            };
            Box::pin(std::future::ready(outcome))
        }
    }

    #[tokio::test]
    async fn replicas_that_share_the_key_and_the_store_redeem_a_state_once_between_them() {
        let store = Arc::new(Store::default());
        let replica = |store: &Arc<Store>| Approvals::shared([7; 32], Arc::clone(store) as Arc<dyn SharedStore>);
        let (a, b, c) = (replica(&store), replica(&store), replica(&store));
        let arguments = args(json!({"a": 1}));
        let state = a.issue(call("t", &arguments), &Carried::default()).unwrap();
        assert_eq!(b.redeem(&state, call("t", &arguments)).await, Ok(Carried::default()), "issued by a, redeemed by b");
        for again in [&a, &b, &c] {
            let spent = again.redeem(&state, call("t", &arguments)).await;
            assert_eq!(spent, Err(Unredeemed::Invalid("it has been used already")));
        }
        // Another key is another deployment: its states are not ours.
        let stranger = Approvals::shared([8; 32], Arc::clone(&store) as Arc<dyn SharedStore>);
        let theirs = stranger.issue(call("t", &arguments), &Carried::default()).unwrap();
        let refused = a.redeem(&theirs, call("t", &arguments)).await;
        assert_eq!(refused, Err(Unredeemed::Invalid("it was not issued for this call")));
    }

    #[tokio::test]
    async fn a_state_is_not_redeemed_while_the_store_cannot_say_whether_it_was_spent() {
        let store = Arc::new(Store::default());
        let approvals = Approvals::shared([7; 32], Arc::clone(&store) as Arc<dyn SharedStore>);
        let arguments = args(json!({}));
        let state = approvals.issue(call("t", &arguments), &Carried::default()).unwrap();
        store.down.store(true, Ordering::Relaxed);
        let refused = approvals.redeem(&state, call("t", &arguments)).await;
        assert_eq!(refused, Err(Unredeemed::Unavailable("connection refused".into())));
        assert!(approvals.redeemed.lock().unwrap().is_empty(), "nothing was spent in memory instead");
        // Back up: the state was not spent, so it still works, once.
        store.down.store(false, Ordering::Relaxed);
        assert_eq!(approvals.redeem(&state, call("t", &arguments)).await, Ok(Carried::default()));
        assert!(approvals.redeem(&state, call("t", &arguments)).await.is_err());
    }

    #[test]
    fn a_state_for_a_tool_call_is_not_one_for_a_prompt_of_the_same_name() {
        let approvals = Approvals::new().unwrap();
        let arguments = args(json!({"a": "1"}));
        let state = approvals.issue(call("x", &arguments), &Carried::default()).unwrap();
        let prompt = Subject { requester: &NOBODY, method: "prompts/get", name: "x", arguments: &arguments };
        assert_eq!(redeemed(&approvals, &state, prompt), Err("it was not issued for this call"));
        let state = approvals.issue(prompt, &Carried::default()).unwrap();
        assert_eq!(redeemed(&approvals, &state, prompt), Ok(Carried::default()));
    }

    #[test]
    fn a_state_is_redeemed_by_its_caller_only_and_another_callers_try_spends_nothing() {
        let approvals = Approvals::new().unwrap();
        let arguments = args(json!({"to": "x@example.com"}));
        let (bob, alice) = (caller("https://as.example", "bob"), caller("https://as.example", "alice"));
        let as_bob = Subject { requester: &bob, ..call("mail__send", &arguments) };
        let as_alice = Subject { requester: &alice, ..call("mail__send", &arguments) };
        let state = approvals.issue(as_bob, &Carried::default()).unwrap();
        assert_eq!(redeemed(&approvals, &state, as_alice), Err("it was not issued for this call"));
        let elsewhere = caller("https://other.example", "bob");
        let bob_elsewhere = Subject { requester: &elsewhere, ..as_bob };
        assert_eq!(
            redeemed(&approvals, &state, bob_elsewhere),
            Err("it was not issued for this call"),
            "same sub, other issuer"
        );
        assert_eq!(
            redeemed(&approvals, &state, call("mail__send", &arguments)),
            Err("it was not issued for this call")
        );
        assert_eq!(redeemed(&approvals, &state, as_bob), Ok(Carried::default()), "the refusals spent nothing");
        assert_eq!(redeemed(&approvals, &state, as_bob), Err("it has been used already"));
    }

    #[test]
    fn the_requester_is_the_tokens_issuer_and_subject_or_nobody() {
        let mut context = CallContext::default();
        assert_eq!(Requester::of(&context), NOBODY);
        let claims = args(json!({"iss": "https://as.example", "sub": "bob"}));
        context.caller = Some(Arc::new(wasmgate_core::Caller { subject: "bob".into(), claims }));
        assert_eq!(Requester::of(&context), caller("https://as.example", "bob"));
        context.caller = Some(Arc::new(wasmgate_core::Caller { subject: "local".into(), claims: Map::new() }));
        assert_eq!(Requester::of(&context), caller("", "local"));
    }

    #[test]
    fn a_state_is_bound_to_its_call_and_redeemable_once() {
        let approvals = Approvals::new().unwrap();
        let state = approvals.issue(call("p__create", &args(json!({"a": 1}))), &Carried::default()).unwrap();
        assert_eq!(
            redeemed(&approvals, &state, call("p__delete", &args(json!({"a": 1})))),
            Err("it was not issued for this call")
        );
        assert_eq!(
            redeemed(&approvals, &state, call("p__create", &args(json!({"a": 2})))),
            Err("it was not issued for this call")
        );
        assert_eq!(redeemed(&approvals, &state, call("p__create", &args(json!({"a": 1})))), Ok(Carried::default()));
        assert_eq!(
            redeemed(&approvals, &state, call("p__create", &args(json!({"a": 1})))),
            Err("it has been used already")
        );
        let other = Approvals::new().unwrap();
        let foreign = other.issue(call("p__create", &args(json!({}))), &Carried::default()).unwrap();
        assert_eq!(
            redeemed(&approvals, &foreign, call("p__create", &args(json!({})))),
            Err("it was not issued for this call")
        );
    }

    #[test]
    fn tampered_malformed_and_expired_states_are_refused() {
        let approvals = Approvals::new().unwrap();
        let state = approvals.issue(call("t", &Map::new()), &Carried::default()).unwrap();
        let mut tampered = state.clone().into_bytes();
        tampered[3] = if tampered[3] == b'0' { b'1' } else { b'0' };
        assert!(redeemed(&approvals, &String::from_utf8(tampered).unwrap(), call("t", &Map::new())).is_err());
        for bad in ["", ".", "zz.zz", "00.00", &state.replace('.', "")] {
            assert_eq!(redeemed(&approvals, bad, call("t", &Map::new())), Err("malformed"), "{bad:?}");
        }
        let nonce = [7u8; 16];
        let expired = 1u64;
        let mac = approvals.mac(call("t", &Map::new()), expired, &nonce, "");
        let old = format!("{}{}.{}", hex::encode(expired.to_be_bytes()), hex::encode(nonce), mac.to_hex());
        assert_eq!(redeemed(&approvals, &old, call("t", &Map::new())), Err("it has expired"));
    }

    #[test]
    fn only_an_accept_with_approve_true_is_a_yes() {
        let yes = json!({"approval": {"action": "accept", "content": {"approve": true}}});
        assert!(approved(yes.as_object().unwrap()));
        for no in [
            json!({"approval": {"action": "accept", "content": {"approve": false}}}),
            json!({"approval": {"action": "decline"}}),
            json!({"approval": {"action": "accept", "content": {"approve": "true"}}}),
            json!({"other": {"action": "accept", "content": {"approve": true}}}),
        ] {
            assert!(!approved(no.as_object().unwrap()), "{no}");
        }
    }

    #[test]
    fn a_state_carries_a_providers_round_and_a_change_to_it_is_refused() {
        let approvals = Approvals::new().unwrap();
        let mut answered = Map::new();
        answered.insert("roots".into(), json!({"roots": []}));
        let carried = Carried {
            approved: true,
            round: Some(Round { keys: vec!["name".into()], answered, state: Some("upstream-state".into()) }),
        };
        let state = approvals.issue(call("t", &args(json!({"a": 1}))), &carried).unwrap();
        assert_eq!(state.matches('.').count(), 2, "head, carried, MAC: {state}");
        assert_eq!(redeemed(&approvals, &state, call("t", &args(json!({"a": 1})))), Ok(carried.clone()));

        // The carried part is readable, but any change to it breaks the MAC.
        let mut parts: Vec<String> = state.split('.').map(str::to_owned).collect();
        let forged = Carried { approved: true, round: None };
        parts[1] = forged.encode().unwrap();
        let again = approvals.issue(call("t", &args(json!({"a": 1}))), &carried).unwrap();
        let mut other: Vec<String> = again.split('.').map(str::to_owned).collect();
        other[1] = parts[1].clone();
        assert_eq!(
            redeemed(&approvals, &other.join("."), call("t", &args(json!({"a": 1})))),
            Err("it was not issued for this call")
        );
        assert_eq!(redeemed(&approvals, &"x".repeat(MAX_STATE_BYTES + 1), call("t", &Map::new())), Err("malformed"));
    }

    #[tokio::test]
    async fn a_deferred_call_puts_off_only_what_its_client_can_answer() {
        let deferred = Deferred::new(None, Caps { elicitation: true, ..Caps::default() });
        assert!(deferred.can("elicitation/create") && !deferred.can("sampling/createMessage"));
        assert!(!deferred.can("roots/list"), "roots are the gateway's to answer");
        let asked = deferred.request("elicitation/create".into(), Map::new()).await;
        assert_eq!(asked, Err(InputRefusal::Deferred));
        let refused = deferred.request("sampling/createMessage".into(), Map::new()).await;
        assert!(matches!(refused, Err(InputRefusal::Declined(_))), "{refused:?}");
        let url = args(json!({"mode": "url", "url": "https://example.com/login", "message": "log in"}));
        let refused = deferred.request("elicitation/create".into(), url).await;
        assert!(matches!(refused, Err(InputRefusal::Declined(_))), "URL mode needs elicitation.url: {refused:?}");
        let both = Caps::of(&args(json!({"elicitation": {"form": {}, "url": {}}})));
        assert!(both.elicitation && both.elicitation_url && askable(both, "elicitation/create:url"));
        assert!(!Caps::of(&args(json!({"elicitation": {}}))).elicitation_url);
        assert!(deferred.defer(args(json!({"k": {"method": "elicitation/create"}})), Map::new(), Some("s".into())));
        let round = deferred.round().unwrap();
        assert_eq!((round.requests.len(), round.state.as_deref()), (1, Some("s")));
    }

    #[tokio::test]
    async fn a_deferred_question_is_recorded_unless_it_cannot_wait() {
        let deferred = Deferred::new(None, Caps { elicitation: true, ..Caps::default() });
        assert_eq!(deferred.confirm("show it?".into(), false).await, Answer::No);
        assert!(deferred.pending().is_none());
        assert_eq!(deferred.confirm("run it?".into(), true).await, Answer::Deferred);
        assert_eq!(deferred.pending().as_deref(), Some("run it?"));
        assert_eq!(Deferred::new(Some(true), Caps::default()).confirm("run it?".into(), true).await, Answer::Yes);
        assert_eq!(Deferred::new(Some(false), Caps::default()).confirm("run it?".into(), true).await, Answer::No);
    }

    #[tokio::test]
    async fn an_approved_retry_answers_only_the_call_not_the_release_of_a_flagged_result() {
        let approved = Deferred::new(Some(true), Caps::default());
        assert_eq!(approved.confirm("run it?".into(), true).await, Answer::Yes);
        assert_eq!(approved.confirm("show it?".into(), false).await, Answer::No);
        assert!(approved.pending().is_none());
    }
}
