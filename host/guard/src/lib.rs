//! The trust boundary around everything a provider offers, whatever is behind it (an
//! MCP server, a WASM tool component): review and pinning, allow / ask / deny, every
//! text from a provider screened as untrusted data, and a write-ahead audit record of
//! every call and read.
//!
//! It stands on the vocabulary (`wasmgate-core`), the policy and the audit log only: no
//! MCP client, no sandbox, no network. Providers come in through two traits of the
//! vocabulary, [`ToolSource`](wasmgate_core::ToolSource) for tools and
//! [`ContentSource`](wasmgate_core::ContentSource) for resources, prompts and
//! completion, which the adapter implements.
//!
//! # Layout
//!
//! The modules are private; what a user names is re-exported here.
//!
//! * `guard`: [`Guard`] (policy, reviewed definitions, approver, screens, budgets,
//!   audit log) and the audit trail of reads that are not calls ([`Access`]);
//! * `guarded`: a guarded tool and the sequence every call goes through
//!   ([`Guard::admit`], [`Admission`]);
//! * `bridge`: a provider's own requests for input and log messages during a call or a
//!   read, under the policy;
//! * `toolset`: [`GuardedToolset`], the reviewed tools of every source for the loop;
//! * `content`: [`GuardedContent`], resources, templates, prompts and completion
//!   under the policy: routing, audit;
//! * `shaping`: what of them is served and how: cleaning, framing, screening
//!   ([`UNKNOWN_CONTENT`]);
//! * `budgets`: the token buckets of the policy's rate limits and call budgets
//!   ([`Budgets`]);
//! * `metrics`: what the guard counts for `/metrics`;
//! * `flow`: the data-flow rules applied to a call (what its arguments carry of what
//!   results earlier in its conversation said, the sequence rule);
//! * `provenance`: the values untrusted results carried, per context, found again in
//!   later calls' arguments ([`Provenance`]);
//! * `trace`: the spans of a call, for a traces exporter ([`TRACE_TARGET`]);
//! * `screen`: detection, the policy's injection action, framing ([`Screener`]);
//! * `approver`: the [`Approver`] trait, [`Unattended`], [`TerminalApprover`] and
//!   [`CallerApprover`];
//! * `reviewers`: [`Reviewers`], the asks the policy routes to the gateway's reviewers
//!   while they wait for an answer ([`PendingAsk`]).

mod approver;
mod bridge;
mod budgets;
mod content;
mod flow;
mod guard;
mod guarded;
mod metrics;
mod provenance;
mod reviewers;
mod screen;
mod shaping;
mod toolset;
mod trace;

pub use approver::{
    Approval, ApprovalRequest, Approver, CallerApprover, NOBODY, Subject, TerminalApprover, Unattended,
};
pub use budgets::{BudgetRefusal, Budgets, Limited};
pub use content::GuardedContent;
pub use guard::{Access, Admission, Guard};
pub use provenance::{Carried, Limits as ProvenanceLimits, Marks, Origin, Provenance, Sequence, Source};
pub use reviewers::{Announcer, AnswerError, MAX_PENDING, PendingAsk, Reviewer, Reviewers};
pub use screen::{INJECTION_WITHHELD, SCREEN_FAILED, Screener, UNFRAMED};
pub use shaping::UNKNOWN_CONTENT;
pub use toolset::{GuardedToolset, REPORTED_PER_TOOL, REPORTED_TOOLS_PER_PROVIDER, WithheldTool};
pub use trace::TRACE_TARGET;
