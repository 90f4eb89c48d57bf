//! [`Guard`]: what every call passes through, whatever is behind the tool.
//!
//! A call of a guarded tool:
//! 1. the policy decides from the provider, the tool and the arguments (`allow`, `ask`,
//!    `deny`); annotations are no input, so a provider's claims change nothing;
//! 2. `deny`, or `ask` answered no, returns `denied: <reason>` to the model; nothing runs;
//! 3. the `requested` (and `approval`) and `started` records are written together and
//!    made durable before the call runs: one fsync on the call's critical path, shared
//!    with concurrent calls by the audit log's group commit. If they cannot be written,
//!    the call is refused ([`ToolErrorKind::Refused`]): fail closed;
//! 4. the result is screened as untrusted data ([`screen`](crate::screen)) and the
//!    outcome recorded (`finished`, `withheld`, `failed`, `cancelled`) without waiting,
//!    and without an fsync of its own: it is synced with the next call's start records.
//!
//! The agent loop's `before_tool_call` hook stays the host's own: the policy runs inside
//! every guarded tool, so the loop, the gateway and `wasmgate call` cannot bypass it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use serde_json::Value;
use wasmgate_audit::{AuditLog, Entry, Event};
use wasmgate_core::{
    BoxFuture, CallContext, CancellationToken, Offer, Tool, ToolError, ToolErrorKind, ToolExecute, ToolResult,
    ToolSpec, report,
};
use wasmgate_policy::{Decision, InjectionAction, Lock, LockError, Policy, ReviewState, Secret, SecretsAction, Verdict, clean_schema, clean_text, find_secrets, redact_secrets};

use crate::approver::{Approval, ApprovalRequest, Approver, Subject};
use crate::bridge::bridged;
use crate::budgets::{BudgetRefusal, Budgets};

/// When a call refused because the shared store cannot be reached may try again.
const UNAVAILABLE_RETRY: Duration = Duration::from_secs(1);
use crate::metrics;
use crate::screen::{Screened, Screener, screen};
use crate::trace;
use tracing::Instrument as _;

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
    budgets: Budgets,
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

    /// The guarded tool for `offer`, or why it is withheld.
    #[must_use]
    pub fn admit(self: &Arc<Self>, offer: Offer) -> Admission {
        match self.review_state(&offer) {
            ReviewState::Reviewed => {
                let spec = match screened(&offer.tool.spec) {
                    Ok(spec) => spec,
                    Err(why) => return Admission::Unusable(why),
                };
                let guarded = Guarded {
                    guard: Arc::clone(self),
                    provider: offer.provider,
                    tool: offer.name,
                    rules: Rules::Tool,
                    inner: offer.tool,
                    counters: metrics::CallCounters::default(),
                };
                Admission::Offered(Tool::new(spec, Arc::new(guarded)))
            }
            state => Admission::Withheld(state),
        }
    }

    /// Guards the `read_resource` tool of `provider` (`McpProvider::resource_tool`) as
    /// a tool call is guarded, with the policy's `resources` globs in place of its tool
    /// rules: a URI no glob of the provider matches, or one with a `..` segment, is
    /// denied before anything is read; a read is recorded (`requested` and `started`
    /// durable before it runs, then its outcome) as `resources/read`; and what it
    /// returns is screened and framed as untrusted data.
    #[must_use]
    pub fn guard_resource_reads(self: &Arc<Self>, provider: &str, tool: Tool) -> Tool {
        let spec = tool.spec.clone();
        let guarded = Guarded {
            guard: Arc::clone(self),
            provider: provider.to_owned(),
            tool: RESOURCE_READ.to_owned(),
            rules: Rules::Resources,
            inner: tool,
            counters: metrics::CallCounters::default(),
        };
        Tool::new(spec, Arc::new(guarded))
    }

    fn call_id(&self) -> String {
        format!("{}-{}", self.session, self.next_call.fetch_add(1, Ordering::Relaxed))
    }

    /// Writes `entries` durably (write-ahead); fails closed.
    async fn record(&self, entries: Vec<Entry>) -> Result<(), ToolError> {
        let refused = |e: wasmgate_audit::AuditError| {
            tracing::error!(error = %e, "audit log cannot be written; refusing the call");
            ToolError::new(ToolErrorKind::Refused, format!("the audit log cannot be written: {e}"))
        };
        let caller = CallContext::caller();
        let entries = entries.into_iter().map(|entry| with_caller(entry, caller.as_deref())).collect::<Vec<_>>();
        self.audit.submit(entries).map_err(refused)?.await.map(|_| ()).map_err(refused)
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
        self.record(vec![entry(requested), entry(Event::Started)]).await?;
        Ok(Access::new(self, call, provider, what))
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
    ended: bool,
}

impl Access {
    /// The id of the access's records (`call` in the audit log).
    pub(crate) fn call(&self) -> &str {
        &self.call
    }

    /// The outcome of `call` of `provider`'s `what`, to be recorded.
    fn new(guard: &Arc<Guard>, call: String, provider: &str, what: &str) -> Self {
        Access { guard: Arc::clone(guard), call, provider: provider.to_owned(), what: what.to_owned(), ended: false }
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

/// `decision` given the credentials `found` in the arguments and the provider's
/// `secrets` action: a call the policy allows or asks about is asked about (`ask`),
/// refused (`deny`) or let through with the finding in its reason (`flag`). A denied call
/// stays denied.
fn with_secrets(decision: Decision, found: &[Secret], action: SecretsAction) -> Decision {
    if found.is_empty() || decision.verdict == Verdict::Deny {
        return decision;
    }
    let mut kinds: Vec<String> = found.iter().map(|s| format!("{} at {}", s.kind, s.at)).collect();
    kinds.dedup();
    let what = format!("the arguments carry what looks like a credential ({})", kinds.join(", "));
    match action {
        SecretsAction::Deny => {
            Decision { verdict: Verdict::Deny, reason: format!("{what}, and the policy refuses such calls") }
        }
        SecretsAction::Ask => Decision { verdict: Verdict::Ask, reason: format!("{what}; {}", decision.reason) },
        SecretsAction::Flag => {
            Decision { verdict: decision.verdict, reason: format!("{}; flagged: {what}", decision.reason) }
        }
    }
}

/// `spec` as a model may read it: the description and the prose of the input schema
/// sanitized like a result (invisible, bidi, tag and control characters and escape
/// sequences removed), or why it cannot be.
fn screened(spec: &ToolSpec) -> Result<ToolSpec, String> {
    Ok(ToolSpec {
        name: spec.name.clone(),
        description: clean_text(&spec.description),
        input_schema: clean_schema(&spec.input_schema).map_err(|why| format!("its inputSchema: {why}"))?,
    })
}

/// What a guarded read is recorded as, in the `tool` field of its records.
const RESOURCE_READ: &str = "resources/read";

struct Guarded {
    guard: Arc<Guard>,
    provider: String,
    /// The provider's own name for the tool, or [`RESOURCE_READ`].
    tool: String,
    rules: Rules,
    inner: Tool,
    counters: metrics::CallCounters,
}

/// Which rules of the policy decide a guarded tool's calls.
#[derive(Debug, Clone, Copy)]
enum Rules {
    /// The tool's own: its verdict and argument constraints.
    Tool,
    /// The provider's `resources` globs, over the call's `uri` argument.
    Resources,
}

impl std::fmt::Debug for Guarded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guarded").field("provider", &self.provider).field("tool", &self.tool).finish()
    }
}

impl ToolExecute for Guarded {
    fn execute(&self, input: Value, cancel: CancellationToken) -> BoxFuture<'_, Result<ToolResult, ToolError>> {
        let caller = CallContext::caller();
        let span = trace::call(&self.provider, &self.tool, caller.as_deref().map(|c| c.subject.as_str()));
        Box::pin(self.call(input, cancel).instrument(span))
    }
}

impl Guarded {
    async fn call(&self, input: Value, cancel: CancellationToken) -> Result<ToolResult, ToolError> {
        let guard = &self.guard;
        let started = Instant::now();
        // The rules of this call, whatever a reload brings while it runs.
        let policy = guard.policy();
        let call = guard.call_id();
        let entry = |event| Entry::call(&call, &self.provider, &self.tool, event);
        let caller = CallContext::caller();
        let facts = caller.as_ref().map(|caller| caller.facts());
        let deciding = trace::policy().entered();
        let decision = match self.rules {
            Rules::Tool => policy.decide_as(&self.provider, &self.tool, &input, facts.as_ref()),
            Rules::Resources => match input.get("uri").and_then(Value::as_str) {
                Some(uri) => policy.decide_read(&self.provider, uri, facts.as_ref()),
                None => Decision { verdict: Verdict::Deny, reason: "a resource read needs a `uri` string".into() },
            },
        };
        let found = find_secrets(&input);
        let action = policy.provider(&self.provider).map_or(SecretsAction::default(), |p| p.secrets);
        let decision = with_secrets(decision, &found, action);
        drop(deciding);
        let verdict = decision.verdict.as_str().to_owned();
        let span = tracing::Span::current();
        span.record("verdict", decision.verdict.as_str());
        let counted = |outcome| {
            span.record("outcome", outcome);
            self.counters.count(&self.provider, &self.tool, decision.verdict.as_str(), outcome);
        };
        metrics::stage("policy", started);
        // A credential the model put in a call is not written down in the audit log.
        let arguments = if found.is_empty() { input.clone() } else { redact_secrets(&input, &found) };
        let mut records = vec![entry(Event::Requested { verdict, reason: decision.reason.clone(), arguments })];
        // A call the policy would run (or ask about) takes from the caller's budgets
        // first: nobody is asked to approve a call that could not run anyway.
        if decision.verdict != Verdict::Deny {
            let subject = caller.as_ref().map_or("", |caller| caller.subject.as_str());
            let taken = guard.budgets.take_now(&policy, &self.provider, &self.tool, subject, facts.as_ref()).await;
            if let Err(refusal) = taken {
                let (budget, retry_after, kind, detail, outcome) = match refusal {
                    BudgetRefusal::Limited(limited) => {
                        let detail = format!("{} is used up", limited.budget);
                        (limited.budget, limited.retry_after, ToolErrorKind::RateLimited, detail, "limited")
                    }
                    // Fails closed: the call is not run uncounted.
                    BudgetRefusal::Unavailable(unavailable) => {
                        let detail = format!("the budgets cannot be counted: {}", report(&unavailable));
                        let budget = "the shared store, which cannot be reached".to_owned();
                        (budget, UNAVAILABLE_RETRY, ToolErrorKind::Unavailable, detail, "unavailable")
                    }
                };
                let retry_after_ms = u64::try_from(retry_after.as_millis()).unwrap_or(u64::MAX);
                records.push(entry(Event::Limited { budget, retry_after_ms }));
                // Nothing runs, so nothing waits for these to be durable.
                for record in records {
                    guard.note(record);
                }
                counted(outcome);
                return Err(ToolError::new(kind, detail).with_provider(&self.provider).with_retry_after(retry_after));
            }
        }
        let denied = match decision.verdict {
            Verdict::Deny => Some(decision.reason.clone()),
            Verdict::Ask => {
                let request = self.request(&call, &input, &decision.reason, Subject::Call);
                let asked = Instant::now();
                let approval = guard.approver.approve(&request).instrument(trace::approval()).await;
                metrics::stage("approval", asked);
                let approved = approval == Approval::Approved;
                records.push(entry(Event::Approval { approved, approver: guard.approver.name().to_owned() }));
                match approval {
                    Approval::Approved => None,
                    Approval::Denied { reason } => Some(reason),
                }
            }
            Verdict::Allow => None,
        };
        if let Some(reason) = denied {
            guard.record(records).instrument(trace::audit()).await.inspect_err(|_| counted("refused"))?;
            counted("denied");
            return Ok(ToolResult::error(format!("denied: {reason}")));
        }
        records.push(entry(Event::Started));
        let writing = Instant::now();
        guard.record(records).instrument(trace::audit()).await.inspect_err(|_| counted("refused"))?;
        metrics::stage("audit", writing);
        // From here the call has started: if this future is dropped before it ends (a
        // host's timeout, a shutdown), the outcome is recorded as `cancelled` all the same.
        let outcome = Access::new(guard, call.clone(), &self.provider, &self.tool);
        // The provider's own requests for input during the call go through the policy.
        let context = bridged(guard, Arc::clone(&policy), &call, &self.provider, &self.tool);
        let running = Instant::now();
        let ran =
            CallContext::scope(context, self.inner.execute(input.clone(), cancel)).instrument(trace::upstream()).await;
        metrics::stage("call", running);
        match ran {
            Ok(result) => {
                let action = policy.provider(&self.provider).map_or(InjectionAction::Flag, |p| p.injection);
                let screeners = guard.screeners(&self.provider);
                let release = |flags| self.release(&call, &input, flags);
                let screening = Instant::now();
                let screened = screen(&self.provider, &self.tool, result, action, &screeners, release);
                let Screened { result, event } = screened.instrument(trace::screen()).await;
                metrics::stage("screen", screening);
                metrics::flags(&self.provider, &event);
                counted(metrics::outcome(&event));
                outcome.end(event);
                Ok(result)
            }
            Err(error) => {
                let event = if error.kind() == ToolErrorKind::Cancelled {
                    Event::Cancelled { reason: "cancelled by the caller; remote effects are unknown".into() }
                } else {
                    Event::Failed { error: error.detail().to_owned() }
                };
                counted(metrics::outcome(&event));
                outcome.end(event);
                Err(error)
            }
        }
    }

    fn request(&self, call: &str, input: &Value, reason: &str, subject: Subject) -> ApprovalRequest {
        ApprovalRequest {
            call: call.to_owned(),
            provider: self.provider.clone(),
            tool: self.tool.clone(),
            arguments: input.clone(),
            reason: reason.to_owned(),
            subject,
        }
    }

    /// Asks whether a flagged result may be shown, and records the answer: an
    /// `approval` after `started` is about the result, not the call.
    async fn release(&self, call: &str, input: &Value, flags: Vec<String>) -> bool {
        let reason = "the result looks like it carries instructions, and the policy asks before showing it";
        let request = self.request(call, input, reason, Subject::Release { flags });
        let approved = self.guard.approver.approve(&request).await == Approval::Approved;
        let approver = self.guard.approver.name().to_owned();
        self.guard.note(Entry::call(call, &self.provider, &self.tool, Event::Approval { approved, approver }));
        approved
    }
}
