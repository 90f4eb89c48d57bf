//! The trust boundary around everything a provider offers, whatever is behind it (an
//! MCP server, a WASM tool component): review and pinning, allow / ask / deny, every
//! text from a provider screened as untrusted data, and a write-ahead audit record of
//! every call and read.
//!
//! It stands on the agent's vocabulary (`Tool`, `ToolSource`), the policy and the
//! audit log only: no MCP client, no sandbox, no network. Providers come in through two
//! traits, [`ToolSource`](wasmgate_core::ToolSource) for tools and [`ContentSource`]
//! for resources, prompts and completion, which the adapter implements.
//!
//! # Layout
//!
//! * [`guard`]: [`Guard`] (policy, reviewed definitions, approver, audit log), the
//!   guarded tool's call sequence, and the audit trail of reads that are not calls
//!   ([`Access`]);
//! * [`toolset`]: [`GuardedToolset`], the reviewed tools of every source for the loop;
//! * [`content`]: [`GuardedContent`], resources, templates, prompts and completion
//!   under the policy: routing, cleaning, screening, audit;
//! * [`budgets`]: the token buckets of the policy's rate limits and call budgets;
//! * [`metrics`]: what the guard counts for `/metrics`;
//! * [`trace`]: the spans of a call, for a traces exporter;
//! * [`screen`]: detection, the policy's injection action, framing;
//! * [`approver`]: the [`Approver`] trait, [`Unattended`], [`TerminalApprover`] and
//!   [`CallerApprover`].

pub mod approver;
mod bridge;
pub mod budgets;
pub mod content;
pub mod guard;
pub mod metrics;
pub mod screen;
pub mod toolset;
pub mod trace;

pub use approver::{Approval, ApprovalRequest, Approver, CallerApprover, Subject, TerminalApprover, Unattended};
pub use budgets::{BudgetRefusal, Budgets, Limited};
pub use content::GuardedContent;
pub use guard::{Access, Admission, Guard};
pub use screen::{INJECTION_WITHHELD, SCREEN_FAILED, Screener, UNFRAMED};
pub use toolset::{GuardedToolset, WithheldTool};
