//! [`Guard`]: what every guarded call and read shares: the policy in force, the reviewed
//! definitions, the approver, each provider's screens, the budgets and the audit log,
//! with the write-ahead recording every call and read goes through ([`Access`] for a
//! read that is not a call). What one call goes through is the `guarded` module.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use serde_json::Value;
use wasmgate_audit::{AuditLog, Entry, Event};
use wasmgate_core::{CallContext, Offer, Tool, ToolError, ToolErrorKind};
use wasmgate_policy::{CodePin, Lock, LockError, Policy, ReviewState, Verdict};

use crate::approver::{Approval, ApprovalRequest, Approver};
use crate::budgets::Budgets;
use crate::provenance::Provenance;
use crate::reviewers::Reviewers;
use crate::screen::Screener;

/// The policy, the reviewed definitions, the approver and the audit log, shared by
/// every guarded tool.
#[derive(Debug)]
pub struct Guard {
    /// The rules now; a call keeps the ones it started under ([`Guard::reload`]).
    policy: RwLock<Arc<Policy>>,
    lock: RwLock<Lock>,
    /// Where approvals of definitions are saved; `None` keeps them in memory.
    lock_path: Option<PathBuf>,
    pub(crate) approver: Arc<dyn Approver>,
    audit: Arc<AuditLog>,
    /// Each provider's screens, run beside the built-in detector on its texts.
    screeners: RwLock<HashMap<String, Vec<Arc<dyn Screener>>>>,
    /// The rate limits' and call budgets' buckets.
    pub(crate) budgets: Budgets,
    /// What untrusted results said, per conversation: the data-flow rules' memory.
    provenance: Provenance,
    /// The asks the policy routes to the gateway's reviewers, while they wait.
    reviewers: Reviewers,
    /// A random prefix, so call ids do not repeat across restarts.
    session: String,
    next_call: AtomicU64,
}

/// Whether an offered tool reaches the agent.
#[derive(Debug)]
pub enum Admission {
    /// Reviewed and unchanged: the guarded tool, its text cleaned.
    Offered(Tool),
    /// New or changed since review: withheld until reviewed.
    Withheld(ReviewState),
    /// Reviewed, but its definition cannot be shown safely (a string of its schema that
    /// means something to the tool carries invisible or control characters): withheld,
    /// and review cannot change that.
    Unusable(String),
}

impl Guard {
    /// A guard over `policy`, the reviewed definitions in `lock` (saved to `lock_path`
    /// when definitions are approved), asking `approver`, recording to `audit`.
    #[must_use]
    pub fn new(
        policy: Policy,
        lock: Lock,
        lock_path: Option<PathBuf>,
        approver: Arc<dyn Approver>,
        audit: Arc<AuditLog>,
    ) -> Arc<Self> {
        Self::with_budgets(policy, lock, lock_path, approver, audit, Budgets::default())
    }

    /// A guard as [`new`](Self::new) makes, whose budgets are counted by `budgets` (in a
    /// store shared with other replicas, say: [`Budgets::shared`]).
    #[must_use]
    pub fn with_budgets(
        policy: Policy,
        lock: Lock,
        lock_path: Option<PathBuf>,
        approver: Arc<dyn Approver>,
        audit: Arc<AuditLog>,
        budgets: Budgets,
    ) -> Arc<Self> {
        Self::with_shared(policy, lock, lock_path, approver, audit, (budgets, Provenance::default()))
    }

    /// A guard as [`new`](Self::new) makes, whose budgets are counted by `budgets` and
    /// whose data-flow memory is `provenance` (both in a store shared with other replicas,
    /// say: [`Budgets::shared`], [`Provenance::shared`]).
    #[must_use]
    pub fn with_shared(
        policy: Policy,
        lock: Lock,
        lock_path: Option<PathBuf>,
        approver: Arc<dyn Approver>,
        audit: Arc<AuditLog>,
        (budgets, provenance): (Budgets, Provenance),
    ) -> Arc<Self> {
        let mut random = [0u8; 4];
        let session = match getrandom::fill(&mut random) {
            Ok(()) => random.iter().map(|b| format!("{b:02x}")).collect(),
            Err(_) => format!("p{}", std::process::id()),
        };
        Arc::new(Self {
            policy: RwLock::new(Arc::new(policy)),
            lock: RwLock::new(lock),
            lock_path,
            approver,
            audit,
            screeners: RwLock::default(),
            budgets,
            provenance,
            reviewers: Reviewers::default(),
            session,
            next_call: AtomicU64::new(1),
        })
    }

    /// The policy now. A call takes it once, when it starts, and keeps it.
    #[must_use]
    pub fn policy(&self) -> Arc<Policy> {
        Arc::clone(&self.policy.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Puts `policy` and `lock` in place of the rules and the reviewed definitions: calls
    /// that start from now on are decided by them, while calls in flight finish under
    /// the policy they started with.
    pub fn reload(&self, policy: Policy, lock: Lock) {
        *self.lock.write().unwrap_or_else(PoisonError::into_inner) = lock;
        *self.policy.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(policy);
    }

    /// What untrusted results said, per conversation (the data-flow rules' memory).
    #[must_use]
    pub fn provenance(&self) -> &Provenance {
        &self.provenance
    }

    /// The conversation of the call running on this task: the one the server face
    /// names, or one for every call made outside any.
    pub(crate) fn conversation() -> std::sync::Arc<str> {
        CallContext::conversation().unwrap_or_else(|| std::sync::Arc::from(crate::flow::UNNAMED))
    }

    /// The audit log.
    #[must_use]
    pub fn audit(&self) -> &Arc<AuditLog> {
        &self.audit
    }

    /// Also screens every text of `provider` with `screener`.
    pub fn add_screener(&self, provider: &str, screener: Arc<dyn Screener>) {
        self.screeners
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(provider.to_owned())
            .or_default()
            .push(screener);
    }

    /// Screens every text of `provider` with `screeners` (and the built-in detector)
    /// from now on, in place of the screens it had.
    pub fn set_screeners(&self, provider: &str, screeners: Vec<Arc<dyn Screener>>) {
        let mut all = self.screeners.write().unwrap_or_else(PoisonError::into_inner);
        if screeners.is_empty() {
            all.remove(provider);
        } else {
            all.insert(provider.to_owned(), screeners);
        }
    }

    /// The screens of `provider`.
    #[must_use]
    pub fn screeners(&self, provider: &str) -> Vec<Arc<dyn Screener>> {
        self.screeners.read().unwrap_or_else(PoisonError::into_inner).get(provider).cloned().unwrap_or_default()
    }

    /// Whether `offer`'s definition is the one reviewed.
    #[must_use]
    pub fn review_state(&self, offer: &Offer) -> ReviewState {
        self.lock.read().unwrap_or_else(PoisonError::into_inner).status(&offer.provider, &offer.definition)
    }

    /// Records `offer`'s definition as reviewed, and saves the lock file. The tool is
    /// admitted only once the file is saved: a failed save changes nothing.
    ///
    /// # Errors
    ///
    /// The lock's, when the definition cannot be pinned or the file written.
    pub fn approve_definition(&self, offer: &Offer) -> Result<String, LockError> {
        let mut lock = self.lock.write().unwrap_or_else(PoisonError::into_inner);
        let mut approved = lock.clone();
        let hash = approved.approve(&offer.provider, &offer.definition)?;
        if let Some(path) = &self.lock_path {
            approved.save(path)?;
        }
        *lock = approved;
        Ok(hash)
    }

    /// Pins `pins` as `provider`'s reviewed code, and saves the lock file, as
    /// [`approve_definition`](Self::approve_definition) does a definition: the lock in
    /// force and the file stay one.
    ///
    /// # Errors
    ///
    /// The lock's, when the file cannot be written (nothing changed then).
    pub fn approve_code(&self, provider: &str, pins: BTreeMap<String, CodePin>) -> Result<(), LockError> {
        let mut lock = self.lock.write().unwrap_or_else(PoisonError::into_inner);
        let mut approved = lock.clone();
        approved.approve_code(provider, pins)?;
        if let Some(path) = &self.lock_path {
            approved.save(path)?;
        }
        *lock = approved;
        Ok(())
    }

    /// The asks waiting for the gateway's reviewers, to be shown and answered.
    #[must_use]
    pub fn reviewers(&self) -> &Reviewers {
        &self.reviewers
    }

    /// Asks whoever answers `request`: the gateway's reviewers when the policy routes
    /// the tool's asks to them (`ask_reviewers`), else the approver. The answer, and who
    /// gave it, as the audit log names them.
    pub(crate) async fn approve(&self, request: &ApprovalRequest) -> (Approval, String) {
        let policy = self.policy();
        if policy.asks_reviewers(&request.provider, &request.tool) {
            let caller = CallContext::caller().map(|caller| caller.subject.clone());
            let redacted = self.audit.redact(&request.arguments);
            return self.reviewers.ask(request, caller, redacted, policy.approval_deadline()).await;
        }
        (self.approver.approve(request).await, self.approver.name().to_owned())
    }

    pub(crate) fn call_id(&self) -> String {
        format!("{}-{}", self.session, self.next_call.fetch_add(1, Ordering::Relaxed))
    }

    /// Writes `entries` durably (write-ahead); fails closed. The sequence number of the
    /// last is returned.
    pub(crate) async fn record(&self, entries: Vec<Entry>) -> Result<u64, ToolError> {
        let refused = |e: wasmgate_audit::AuditError| {
            tracing::error!(error = %e, "audit log cannot be written; refusing the call");
            ToolError::new(ToolErrorKind::Refused, format!("the audit log cannot be written: {e}"))
        };
        let caller = CallContext::caller();
        let entries = entries.into_iter().map(|entry| with_caller(entry, caller.as_deref())).collect::<Vec<_>>();
        self.audit.submit(entries).map_err(refused)?.await.map_err(refused)
    }

    /// Starts the audit trail of a read that is not a tool call (a resource read, a prompt
    /// fetch: data from an untrusted provider all the same): `requested` (allowed, for
    /// `reason`) and `started`, durable before the read runs, like a call's.
    /// `what` names the operation (`resources/read`), `arguments` what was asked.
    ///
    /// # Errors
    ///
    /// [`ToolErrorKind::Refused`] when the records cannot be written: fail closed.
    pub async fn begin_access(
        self: &Arc<Self>,
        provider: &str,
        what: &str,
        arguments: Value,
        reason: &str,
    ) -> Result<Access, ToolError> {
        let call = self.call_id();
        let entry = |event| Entry::call(&call, provider, what, event);
        let requested =
            Event::Requested { verdict: Verdict::Allow.as_str().to_owned(), reason: reason.into(), arguments };
        let record = self.record(vec![entry(requested), entry(Event::Started)]).await?;
        Ok(Access::new(self, call, provider, what).at(record))
    }

    /// Records a call that was refused before any tool was found for it (a name that is
    /// not offered: unknown, unreviewed, withheld, or denied for every call): one
    /// `requested` record with verdict `deny` and `reason`, queued like an outcome. The
    /// model asking for a tool it was never shown is worth knowing about.
    pub fn refused_unoffered(&self, provider: &str, tool: &str, arguments: Value, reason: &str) {
        let requested =
            Event::Requested { verdict: Verdict::Deny.as_str().to_owned(), reason: reason.into(), arguments };
        self.note(Entry::call(self.call_id(), provider, tool, requested));
    }

    /// Queues an outcome record without waiting for it: it costs no fsync of its own,
    /// and becomes durable with the next start record (or within 200 ms).
    pub(crate) fn note(&self, entry: Entry) {
        if let Err(e) = self.audit.record_later([with_caller(entry, CallContext::caller().as_deref())]) {
            tracing::error!(error = %e, "audit log cannot be written; later calls will be refused");
        }
    }
}

/// `entry` with `caller`, the caller of the call being served, when it is about a call
/// (every record of a call carries who made it).
fn with_caller(mut entry: Entry, caller: Option<&wasmgate_core::Caller>) -> Entry {
    if entry.call.is_some() && entry.caller.is_none() {
        entry.caller = caller.map(|caller| caller.subject.clone());
    }
    entry
}

/// A read under way (see [`Guard::begin_access`]); [`end`](Self::end) records how it
/// ended. Dropped without it (the request was abandoned), it records `cancelled`.
#[derive(Debug)]
pub struct Access {
    guard: Arc<Guard>,
    call: String,
    provider: String,
    what: String,
    /// The sequence number of its `started` record.
    record: Option<u64>,
    ended: bool,
}

impl Access {
    /// The id of the access's records (`call` in the audit log).
    pub(crate) fn call(&self) -> &str {
        &self.call
    }

    /// The outcome of `call` of `provider`'s `what`, to be recorded.
    pub(crate) fn new(guard: &Arc<Guard>, call: String, provider: &str, what: &str) -> Self {
        let (provider, what) = (provider.to_owned(), what.to_owned());
        Access { guard: Arc::clone(guard), call, provider, what, record: None, ended: false }
    }

    /// The access whose `started` record is `record`.
    pub(crate) fn at(mut self, record: u64) -> Self {
        self.record = Some(record);
        self
    }

    /// The sequence number of its `started` record.
    pub(crate) fn record(&self) -> Option<u64> {
        self.record
    }

    /// Records the outcome: `finished` (with injection flags), `withheld` or `failed`.
    pub fn end(mut self, event: Event) {
        self.ended = true;
        self.guard.note(Entry::call(&self.call, &self.provider, &self.what, event));
    }
}

impl Drop for Access {
    fn drop(&mut self) {
        if !self.ended {
            let event = Event::Cancelled { reason: "abandoned by the caller; remote effects are unknown".into() };
            self.guard.note(Entry::call(&self.call, &self.provider, &self.what, event));
        }
    }
}
