//! What a confined process actually got, and why one could not be confined.
//!
//! The child records each step it took (see `child`), so a [`ConfinementReport`] states
//! what the kernel applied to *that* process, not what the policy asked for or what a
//! probe guessed. The gateway shows it per provider and writes it to the audit log.

use std::fmt;

use crate::policy::Enforcement;

/// One confinement mechanism, as named in errors and reports.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mechanism {
    /// Landlock filesystem rules.
    LandlockFilesystem,
    /// Landlock TCP connect and bind rules (Landlock ABI 4).
    LandlockNetwork,
    /// Landlock scoping of abstract Unix sockets and signals (Landlock ABI 6).
    LandlockScopes,
    /// The access rights of the policy's `min_landlock_abi`.
    LandlockMinimumAbi,
    /// A fresh network namespace with no interfaces.
    NetworkNamespace,
    /// `prctl(PR_SET_NO_NEW_PRIVS)`.
    NoNewPrivs,
    /// No capabilities: the ambient and bounding sets and the three process sets emptied.
    Capabilities,
    /// The directories where other programs' sockets live, hidden (Landlock ABI 9
    /// restricts connecting to a socket by its path; before it, an empty tmpfs over each
    /// in a mount namespace of the server's own).
    UnixSocketPaths,
    /// `setrlimit` of memory, CPU, open files and file size.
    ResourceLimits,
    /// A bound on the number of processes (a `pids` cgroup or `RLIMIT_NPROC`).
    ProcessCount,
    /// The seccomp filter: socket families as granted, the riskiest system calls refused.
    Seccomp,
}

impl Mechanism {
    /// What to change on the machine so that the kernel can apply this mechanism.
    #[must_use]
    pub fn remedy(self) -> &'static str {
        match self {
            Self::LandlockFilesystem | Self::LandlockNetwork | Self::LandlockScopes | Self::LandlockMinimumAbi => {
                "Landlock needs a kernel with it built in and enabled (`landlock` listed in \
                 /sys/kernel/security/lsm, else add it to the `lsm=` boot parameter); TCP rules need \
                 Linux 6.7 (ABI 4), signal and abstract socket scoping Linux 6.12 (ABI 6)"
            }
            Self::NetworkNamespace | Self::UnixSocketPaths => {
                "allow unprivileged user namespaces (sysctl user.max_user_namespaces above 0; \
                 kernel.unprivileged_userns_clone=1 on Debian's older kernels; on Ubuntu 23.10 and later \
                 kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for wasmgate \
                 that allows `userns`), or run the gateway as root"
            }
            Self::NoNewPrivs | Self::Seccomp => {
                "the kernel needs CONFIG_SECCOMP_FILTER (every distribution kernel has it) on x86-64, \
                 aarch64 or riscv64, and nothing around the gateway (a container runtime's own filter) may \
                 refuse prctl or seccomp"
            }
            Self::Capabilities => "the gateway must be allowed to drop capabilities (prctl and capset)",
            Self::ResourceLimits => {
                "a hard limit of the gateway's own is below the policy's: raise it (ulimit -H) or lower the \
                 provider's limit"
            }
            Self::ProcessCount => {
                "give the gateway a cgroup of its own that it may write (cgroup v2: start it with \
                 `systemd-run --user --scope -p Delegate=yes wasmgate ...`; cgroup v1: a pids group \
                 chowned to its user), or allow unprivileged user namespaces, where RLIMIT_NPROC counts the \
                 server's tasks alone"
            }
        }
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::LandlockFilesystem => "Landlock filesystem rules",
            Self::LandlockNetwork => "Landlock TCP rules (ABI 4)",
            Self::LandlockScopes => "Landlock signal and abstract socket scoping (ABI 6)",
            Self::LandlockMinimumAbi => "the Landlock ABI the policy asks for",
            Self::NetworkNamespace => "a network namespace",
            Self::NoNewPrivs => "no_new_privs",
            Self::Capabilities => "dropping every capability",
            Self::UnixSocketPaths => "hiding the directories of other programs' Unix sockets",
            Self::ResourceLimits => "resource limits",
            Self::ProcessCount => "a process count limit",
            Self::Seccomp => "the seccomp filter",
        })
    }
}

/// How the number of processes of a confined server is bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessBound {
    /// A `pids` cgroup of the server's own (it also finds processes that left the group).
    Cgroup,
    /// `RLIMIT_NPROC` inside the server's own user namespace.
    Rlimit,
    /// Nothing (root without a usable cgroup, or no user namespace, or no limit asked for).
    None,
}

/// The confinement a spawned process actually runs under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfinementReport {
    /// The policy's enforcement mode.
    pub enforcement: Enforcement,
    /// The Landlock ABI the ruleset was enforced with (0: Landlock not enforced).
    pub landlock_abi: u8,
    /// Whether the policy restricts TCP (false for [`Network::Unrestricted`](crate::Network)).
    pub tcp_restricted: bool,
    /// Whether the process runs in a fresh network namespace.
    pub network_namespace: bool,
    /// Whether the process runs in a fresh user namespace (which the network namespace
    /// needs when the gateway is not privileged).
    pub user_namespace: bool,
    /// Whether `no_new_privs` is set.
    pub no_new_privs: bool,
    /// Whether the process was left no capability (nothing to drop counts as done).
    pub capabilities_dropped: bool,
    /// Whether the socket directories of `hideable` were
    /// covered in a mount namespace of the server's own, `/run` among them: false when
    /// no mount namespace could be made, or a grant under `/run` kept it visible.
    pub socket_dirs_hidden: bool,
    /// Whether the resource limits were applied.
    pub resource_limits: bool,
    /// What bounds the number of processes.
    pub processes: ProcessBound,
    /// Whether the seccomp filter is installed.
    pub seccomp: bool,
    /// Whether the seccomp filter refuses `socket(AF_UNIX, ...)` (no grant of Unix sockets).
    pub unix_sockets_refused: bool,
    /// The policy's `min_landlock_abi`.
    pub(crate) wanted_landlock_abi: u8,
    /// Whether the policy asked for a network namespace (it does for `Network::None`).
    pub(crate) wants_namespace: bool,
    /// Whether the policy asked for a process limit.
    pub(crate) wants_process_bound: bool,
}

impl ConfinementReport {
    /// Mechanisms the policy asked for that this process does not have.
    #[must_use]
    pub fn missing(&self) -> Vec<Mechanism> {
        let checks = [
            (Mechanism::LandlockFilesystem, self.landlock_abi >= 1),
            (Mechanism::LandlockNetwork, !self.tcp_restricted || self.landlock_abi >= 4),
            (Mechanism::LandlockScopes, self.landlock_abi >= 6),
            (Mechanism::LandlockMinimumAbi, self.landlock_abi >= self.wanted_landlock_abi),
            // The filter refuses network sockets where no namespace could be made.
            (Mechanism::NetworkNamespace, !self.wants_namespace || self.network_namespace || self.seccomp),
            (Mechanism::NoNewPrivs, self.no_new_privs),
            (Mechanism::Capabilities, self.capabilities_dropped),
            // Asked for with the network namespace: a server granted the host's network
            // runs without a user namespace, where only root can make a mount namespace.
            (
                Mechanism::UnixSocketPaths,
                !self.wants_namespace || self.landlock_abi >= 9 || self.socket_dirs_hidden || self.unix_sockets_refused,
            ),
            (Mechanism::ResourceLimits, self.resource_limits),
            (Mechanism::ProcessCount, !self.wants_process_bound || self.processes != ProcessBound::None),
            (Mechanism::Seccomp, self.seccomp),
        ];
        checks.into_iter().filter(|(_, present)| !present).map(|(mechanism, _)| mechanism).collect()
    }

    /// Whether everything the policy asked for is in place.
    #[must_use]
    pub fn is_complete(&self) -> bool {
        self.missing().is_empty()
    }
}

impl fmt::Display for ConfinementReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let missing = self.missing();
        if missing.is_empty() {
            write!(f, "confined (Landlock ABI {}", self.landlock_abi)?;
        } else {
            let names: Vec<String> = missing.iter().map(ToString::to_string).collect();
            write!(f, "partly confined, missing {} (Landlock ABI {}", names.join(", "), self.landlock_abi)?;
        }
        if self.network_namespace {
            f.write_str(", no network interfaces")?;
        }
        if self.seccomp {
            f.write_str(", seccomp")?;
        }
        write!(f, ", {:?})", self.enforcement)
    }
}

/// Why a provider could not be started confined.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfinementError {
    /// The policy requires a mechanism this system does not offer.
    #[error("{mechanism} required but unavailable: {detail}")]
    Unavailable {
        /// The missing mechanism.
        mechanism: Mechanism,
        /// What the kernel said.
        detail: String,
    },
    /// A path of the policy cannot be granted (missing, unreadable, or too broad).
    #[error("cannot grant {path}: {detail}")]
    Path {
        /// The path.
        path: String,
        /// Why.
        detail: String,
    },
    /// Something else went wrong while preparing (creating a pipe, a ruleset).
    #[error("preparing confinement: {0}")]
    Setup(String),
}
