//! The trust boundary around every tool, whatever is behind it (an MCP server, a WASM
//! tool component): review and pinning, allow / ask / deny, results screened as
//! untrusted data, and a write-ahead audit record of every call.
//!
//! # Layout
//!
//! * [`guard`]: [`Guard`] (policy, reviewed definitions, approver, audit log), the
//!   guarded tool's call sequence, and the audit trail of reads that are not calls
//!   ([`Access`]);
//! * [`toolset`]: [`GuardedToolset`], the reviewed tools of every source for the loop;
//! * [`screen`]: detection, the policy's injection action, framing;
//! * [`approver`]: the [`Approver`] trait, [`Unattended`], [`TerminalApprover`] and
//!   [`CallerApprover`].

pub mod approver;
pub mod guard;
pub mod screen;
pub mod toolset;

pub use approver::{Approval, ApprovalRequest, Approver, CallerApprover, Subject, TerminalApprover, Unattended};
pub use guard::{Access, Admission, Guard};
pub use screen::{INJECTION_WITHHELD, UNFRAMED};
pub use toolset::{GuardedToolset, WithheldTool};
