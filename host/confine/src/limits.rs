//! Resource limits: `setrlimit` values decided before the fork, applied in the child.
//!
//! Caveats that shape the defaults (docs/CONFINEMENT.md has the full story):
//!
//! * `RLIMIT_CPU` counts the process's CPU time over its whole life, not per call: a
//!   busy server that lives for days needs a higher value or `None`. At the limit the
//!   kernel sends `SIGXCPU`, one second later `SIGKILL`.
//! * Memory is `RLIMIT_DATA` (private writable memory: heaps, anonymous maps), not
//!   `RLIMIT_AS`, because JavaScript and WebAssembly runtimes reserve far more address
//!   space than they use. `address_space_bytes` is there for programs that do not.
//! * Limits are per process: a server that forks gets the same limits in each child.
//!   The number of processes is what bounds the total (see [`ResourceLimits::processes`]).
//! * A value above the gateway's own hard limit is lowered to it (an unprivileged
//!   process cannot raise a hard limit).

use rustix::process::{Resource, Rlimit, getrlimit};

/// Limits of a confined process; `None` leaves the gateway's own limit in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceLimits {
    /// Private writable memory in bytes, `RLIMIT_DATA` (default 2 GiB).
    pub memory_bytes: Option<u64>,
    /// Address space in bytes, `RLIMIT_AS` (default `None`, see the module docs).
    pub address_space_bytes: Option<u64>,
    /// CPU seconds over the process's life, `RLIMIT_CPU` (default 3600).
    pub cpu_seconds: Option<u64>,
    /// Processes and threads (default 128). Enforced by a `pids` cgroup of the server's
    /// own where the gateway can create one, else by `RLIMIT_NPROC` inside the server's
    /// own user namespace (so it counts only the server's tasks). `RLIMIT_NPROC` does not
    /// bind root, and outside a fresh user namespace it would count every process of the
    /// user, so it is not applied there; the report says when nothing bounds forks.
    pub processes: Option<u64>,
    /// Open file descriptors, `RLIMIT_NOFILE` (default 1024).
    pub open_files: Option<u64>,
    /// Largest file the process may write, `RLIMIT_FSIZE` (default 1 GiB).
    pub file_size_bytes: Option<u64>,
}

impl Default for ResourceLimits {
    fn default() -> Self {
        Self {
            memory_bytes: Some(2 << 30),
            address_space_bytes: None,
            cpu_seconds: Some(3600),
            processes: Some(128),
            open_files: Some(1024),
            file_size_bytes: Some(1 << 30),
        }
    }
}

/// One limit to apply after the fork.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limit {
    pub(crate) resource: Resource,
    pub(crate) value: Rlimit,
}

/// The limits to apply in the child, core dumps always off. `RLIMIT_NPROC` comes
/// separately ([`nproc`]) because it may only be applied inside a fresh user namespace.
pub(crate) fn plan(limits: &ResourceLimits) -> Vec<Limit> {
    let cpu = limits.cpu_seconds.map(|soft| (soft, soft.saturating_add(1)));
    [
        (Resource::Data, limits.memory_bytes.map(|v| (v, v))),
        (Resource::As, limits.address_space_bytes.map(|v| (v, v))),
        (Resource::Cpu, cpu),
        (Resource::Nofile, limits.open_files.map(|v| (v, v))),
        (Resource::Fsize, limits.file_size_bytes.map(|v| (v, v))),
        (Resource::Core, Some((0, 0))),
    ]
    .into_iter()
    .filter_map(|(resource, value)| value.map(|(soft, hard)| clamped(resource, soft, hard)))
    .collect()
}

/// `RLIMIT_NPROC` for the child, if `processes` is set.
pub(crate) fn nproc(limits: &ResourceLimits) -> Option<Limit> {
    limits.processes.map(|n| clamped(Resource::Nproc, n, n))
}

fn clamped(resource: Resource, soft: u64, hard: u64) -> Limit {
    let ceiling = getrlimit(resource).maximum.unwrap_or(u64::MAX);
    let hard = hard.min(ceiling);
    Limit { resource, value: Rlimit { current: Some(soft.min(hard)), maximum: Some(hard) } }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_limit_leaves_a_second_between_sigxcpu_and_sigkill() {
        let limits = ResourceLimits { cpu_seconds: Some(5), ..ResourceLimits::default() };
        let cpu = plan(&limits).into_iter().find(|l| l.resource == Resource::Cpu).map(|l| l.value);
        let ceiling = getrlimit(Resource::Cpu).maximum.unwrap_or(u64::MAX);
        assert_eq!(cpu, Some(Rlimit { current: Some(5.min(ceiling)), maximum: Some(6.min(ceiling)) }));
    }

    #[test]
    fn core_dumps_are_always_off_and_none_leaves_a_limit_alone() {
        let none = ResourceLimits {
            memory_bytes: None,
            address_space_bytes: None,
            cpu_seconds: None,
            processes: None,
            open_files: None,
            file_size_bytes: None,
        };
        let planned: Vec<Resource> = plan(&none).into_iter().map(|l| l.resource).collect();
        assert_eq!(planned, vec![Resource::Core]);
        assert!(nproc(&none).is_none());
    }
}
