//! Kernel confinement of the upstream server processes wasmgate spawns.
//!
//! The WebAssembly sandbox contains results and components, but a stdio MCP server is a
//! native process. This crate confines one with the kernel's own mechanisms, applied
//! between `fork` and `exec`: Landlock filesystem rules (system paths read-only, a
//! private working directory read-write, nothing else), no network (a fresh network
//! namespace where the system allows, Landlock TCP rules and a seccomp filter either
//! way), `no_new_privs`, and resource limits. It knows nothing of MCP: it confines a
//! `std::process::Command`. docs/CONFINEMENT.md explains the model, the defaults and the limits.
//!
//! # Layout
//!
//! * `policy`: [`Confinement`], the per-provider policy, with [`Enforcement`] (required
//!   or best effort) and [`Network`].
//! * `paths`: the default path lists. `limits`: [`ResourceLimits`].
//! * `ruleset`: the Landlock ruleset, built in the gateway before the fork.
//! * `child`: the `pre_exec` hook, allocation-free; with `connects`, the crate's only
//!   unsafe code.
//! * `connects`: [`ConnectWatch`], the gateway's answer to each connect of a server
//!   granted hosts (a seccomp user notification), which reports those it refuses.
//! * `seccomp`: the seccomp filter (socket families, the riskiest system calls), which
//!   [`install_on_this_thread`] also puts on the calling thread (the benchmark's way in).
//! * `cgroup`: a `pids` cgroup per server where one can be created; `members`: a
//!   server's processes found by its user namespace where none can.
//! * `spawn`: [`prepare`] before the spawn, [`Prepared::finish`] after it.
//! * `report`: [`ConfinementReport`] (what the process actually got), [`Mechanism`],
//!   [`ConfinementError`].

mod cgroup;
mod child;
mod connects;
mod limits;
mod members;
mod paths;
mod policy;
mod report;
mod ruleset;
mod seccomp;
mod spawn;

pub use cgroup::{PidsCgroup, own_cgroups};
pub use connects::{ConnectWatch, RefusedConnect, supported as connects_answered};
pub use limits::ResourceLimits;
pub use members::NamespaceMembers;
pub use policy::{Confinement, Enforcement, LandlockAbi, MAX_TRANSPARENT_PORTS, Network};
pub use report::{ConfinementError, ConfinementReport, Mechanism, ProcessBound};
pub use seccomp::install_on_this_thread;
pub use spawn::{Confined, Prepared, prepare, probe, provider_workdir};
