//! A guarded tool: what every call passes through, whatever is behind the tool.
//!
//! A call of a guarded tool:
//! 1. the policy decides from the provider, the tool and the arguments (`allow`, `ask`,
//!    `deny`); annotations are no input, so a provider's claims loosen nothing; then the
//!    data-flow rules judge what the arguments carry of what earlier results of the
//!    conversation said (the `flow` module; a reviewed definition's destructive or
//!    open-world hint makes a tool a sink there), which can only make the verdict stricter;
//! 2. `deny`, or `ask` answered no, returns `denied: <reason>` to the model; nothing runs;
//! 3. the `requested` (and `approval`) and `started` records are written together and
//!    made durable before the call runs: one fsync on the call's critical path, shared
//!    with concurrent calls by the audit log's group commit. If they cannot be written,
//!    the call is refused ([`ToolErrorKind::Refused`]): fail closed;
//! 4. the result is screened as untrusted data (the `screen` module), what it said is
//!    remembered for the conversation (and kept in the shared store, with replicas), and
//!    the outcome recorded (`finished`, `withheld`, `failed`, `cancelled`) without waiting, and
//!    without an fsync of its own: it is synced with the next call's start records.
//!
//! The agent loop's `before_tool_call` hook stays the host's own: the policy runs inside
//! every guarded tool, so the loop, the gateway and `wasmgate call` cannot bypass it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tracing::Instrument as _;
use wasmgate_audit::{Entry, Event};
use wasmgate_core::{
    BoxFuture, CallContext, CancellationToken, Offer, StoreUnavailable, Tool, ToolError, ToolErrorKind, ToolExecute,
    ToolResult, ToolSpec, report,
};
use wasmgate_policy::{
    Decision, InjectionAction, ReviewState, Secret, SecretsAction, Verdict, clean_schema, clean_text, find_secrets,
    redact_secrets,
};

use crate::approver::{Approval, ApprovalRequest, Subject};
use crate::bridge::bridged;
use crate::budgets::BudgetRefusal;
use crate::flow;
use crate::guard::{Access, Admission, Guard};
use crate::metrics;
use crate::provenance::Carried;
use crate::provenance::{Marks, Source};
use crate::screen::{Screened, screen};
use crate::trace;

/// When a call refused because the shared store cannot be reached may try again.
const UNAVAILABLE_RETRY: Duration = Duration::from_secs(1);

impl Guard {
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
                    sink_hint: wasmgate_policy::annotated_sink(&offer.definition),
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
            sink_hint: None,
            provider: provider.to_owned(),
            tool: RESOURCE_READ.to_owned(),
            rules: Rules::Resources,
            inner: tool,
            counters: metrics::CallCounters::default(),
        };
        Tool::new(spec, Arc::new(guarded))
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

/// The texts of `result` the model may read: its content and its embedded text
/// resources.
fn texts(result: &ToolResult) -> Vec<String> {
    std::iter::once(result.content.clone())
        .chain(result.attachments.iter().filter_map(|a| match a {
            wasmgate_core::Attachment::Text { text, .. } => Some(text.clone()),
            _ => None,
        }))
        .collect()
}

/// What a guarded read is recorded as, in the `tool` field of its records.
const RESOURCE_READ: &str = "resources/read";

struct Guarded {
    guard: Arc<Guard>,
    /// Why its reviewed definition makes it a sink, if it does (the policy may name it
    /// one besides).
    sink_hint: Option<&'static str>,
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
    /// The refusal of a call the shared store could not be asked about: `what` failed.
    fn unavailable(&self, what: &str, unavailable: &StoreUnavailable) -> ToolError {
        let detail = format!("{what}: {}", report(unavailable));
        tracing::warn!(provider = %self.provider, tool = %self.tool, %detail, "refused");
        ToolError::new(ToolErrorKind::Unavailable, detail)
            .with_provider(&self.provider)
            .with_retry_after(UNAVAILABLE_RETRY)
    }

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
        // What the arguments carry of what this conversation read, by the flow rules.
        let conversation = Guard::conversation();
        let sink = self.sink_hint.is_some() || policy.names_sink(&self.provider, &self.tool);
        let (carried, sequence) = match guard.provenance().recall(&conversation, &input).await {
            Ok(recalled) => recalled,
            // Fails closed: a call is not judged without what its conversation read.
            Err(unavailable) => {
                return Err(self.unavailable("what this conversation read cannot be recalled", &unavailable));
            }
        };
        let steered = sequence.steered.is_some();
        let judged = flow::judge(&policy, (&self.provider, &self.tool), sink, carried, sequence);
        // A call that carries a value of an injected passage, whatever it gets, shows the
        // model doing what that passage asked: the conversation's later sinks are judged
        // by `sink_after_steered` (noted once: the first such result is the one kept).
        // A read whose argument holds the injected words themselves names the thing the
        // passage sits in (reads the channel whose name it is) rather than doing what it
        // asks: that does not.
        let follows = |c: &&Carried| {
            c.origin.flagged
                && (sink || !input.pointer(&c.pointer).and_then(Value::as_str).is_some_and(holds_injection))
        };
        if !steered
            && let Some(flagged) = judged.carried.iter().find(follows)
            && let Err(unavailable) = guard.provenance().steer(&conversation, &flagged.origin.source).await
        {
            return Err(self.unavailable("what this call shows of its conversation cannot be remembered", &unavailable));
        }
        let decision = flow::with_flow(decision, &judged);
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
        if !judged.carried.is_empty() {
            records.push(entry(Event::Carried { values: flow::recorded(&judged.carried) }));
        }
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
                let (approval, approver) = guard.approve(&request).instrument(trace::approval()).await;
                metrics::stage("approval", asked);
                let approved = approval == Approval::Approved;
                records.push(entry(Event::Approval { approved, approver }));
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
        let record = guard.record(records).instrument(trace::audit()).await.inspect_err(|_| counted("refused"))?;
        metrics::stage("audit", writing);
        // From here the call has started: if this future is dropped before it ends (a
        // host's timeout, a shutdown), the outcome is recorded as `cancelled` all the same.
        let outcome = Access::new(guard, call.clone(), &self.provider, &self.tool).at(record);
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
                let (texts, structured) = (texts(&result), result.structured.clone());
                let screened = screen(&self.provider, &self.tool, result, action, &screeners, release);
                let Screened { result, event, marks } = screened.instrument(trace::screen()).await;
                metrics::stage("screen", screening);
                // What the model reads now, later calls of the conversation may carry.
                if matches!(event, Event::Finished { .. }) {
                    let remembering = Instant::now();
                    let marks = Marks { sequence: policy.starts_sequence(&self.provider, &self.tool), ..marks };
                    let read = match self.rules {
                        Rules::Tool => self.tool.clone(),
                        Rules::Resources => {
                            input.get("uri").and_then(Value::as_str).unwrap_or(RESOURCE_READ).to_owned()
                        }
                    };
                    let source = Source { provider: self.provider.clone(), tool: read, record: Some(record) };
                    for (i, text) in texts.iter().enumerate() {
                        // The structured content goes with the text made of it.
                        let structured = structured.as_deref().filter(|_| i == 0);
                        let remembered =
                            guard.provenance().remember(&conversation, source.clone(), text, structured, marks);
                        // Other replicas must find it before the model can act on it.
                        if let Err(unavailable) = guard.provenance().share(&conversation, remembered).await {
                            let detail = format!("what the result said cannot be kept: {}", report(&unavailable));
                            tracing::warn!(provider = %self.provider, tool = %self.tool, %detail, "result withheld");
                            counted("unavailable");
                            outcome.end(Event::Withheld { reason: detail.clone(), flags: Vec::new() });
                            return Err(ToolError::new(ToolErrorKind::Unavailable, detail)
                                .with_provider(&self.provider)
                                .with_retry_after(UNAVAILABLE_RETRY));
                        }
                    }
                    metrics::stage("remember", remembering);
                }
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
        let (approval, approver) = self.guard.approve(&request).await;
        let approved = approval == Approval::Approved;
        self.guard.note(Entry::call(call, &self.provider, &self.tool, Event::Approval { approved, approver }));
        approved
    }
}

/// Whether `argument` holds text the detector flags: an injection itself, not a value one
/// mentions.
fn holds_injection(argument: &str) -> bool {
    !wasmgate_policy::detect(argument).is_empty()
}
