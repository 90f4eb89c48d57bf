//! The confinement policy of one provider: what its process may touch.
//!
//! A [`Confinement`] is plain data, so the gateway's configuration can build one per
//! provider and tests can state exactly what they grant. [`Confinement::default`] is the
//! policy every stdio provider gets unless its configuration says otherwise: the system
//! paths of [`paths`](crate::paths) read-only (and executable where programs live), its
//! working directory read-write, no network, `no_new_privs`, the seccomp filter, the limits of
//! [`ResourceLimits::default`], and [`Enforcement::Required`].

use std::path::PathBuf;

use crate::limits::ResourceLimits;
use crate::paths;

/// The Landlock ABI versions (re-exported from the `landlock` crate).
pub use landlock::ABI as LandlockAbi;

/// What happens when the kernel cannot enforce part of the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Enforcement {
    /// The provider does not start, and the error names the missing mechanism.
    #[default]
    Required,
    /// The provider starts with whatever the kernel offers; a warning is logged and the
    /// [`ConfinementReport`](crate::ConfinementReport) says what is missing.
    BestEffort,
}

/// The network a provider may use.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Network {
    /// None: a fresh network namespace with no interfaces where the system allows, and
    /// Landlock denying every TCP connect and bind either way.
    #[default]
    None,
    /// TCP to and from the listed ports only (Landlock rules are ports, not hosts: a
    /// granted port is granted on every address). No network namespace, so the provider
    /// sees the host's interfaces; UDP (and so DNS) is not restricted.
    Tcp {
        /// Ports the provider may connect to.
        connect: Vec<u16>,
        /// Ports the provider may bind.
        bind: Vec<u16>,
    },
    /// Only through the gateway, which decides what it reaches: a network namespace of
    /// its own (without one the server does not start, whatever the enforcement), with
    /// its loopback up and the egress proxy listening on `127.0.0.1:port` there. With
    /// `transparent` ports, every IPv4 address is routed to that loopback too, and a
    /// listener on each of those ports (any address) catches the server's own connects,
    /// whose destination the gateway reads from the accepted socket. Landlock allows a
    /// TCP connect to these ports alone. The listeners are handed to the gateway
    /// ([`Confined::proxy`](crate::Confined::proxy),
    /// [`Confined::transparent`](crate::Confined::transparent)).
    Proxied {
        /// The proxy's port inside the server's namespace.
        port: u16,
        /// Ports a plain TCP connect reaches the gateway on, whatever the address (at most
        /// [`MAX_TRANSPARENT_PORTS`](crate::MAX_TRANSPARENT_PORTS); the proxy's own port
        /// is not one).
        transparent: Vec<u16>,
        /// Whether a DNS query to any address (UDP port 53) reaches the gateway's name
        /// service ([`Confined::dns`](crate::Confined::dns)).
        dns: bool,
    },
    /// No network restriction at all.
    Unrestricted,
}

/// The most ports of [`Network::Proxied`]'s `transparent`: one listener each.
pub const MAX_TRANSPARENT_PORTS: usize = 32;

/// The kernel confinement of one spawned provider process.
#[derive(Debug, Clone, PartialEq)]
pub struct Confinement {
    /// What to do when the kernel cannot enforce all of this.
    pub enforcement: Enforcement,
    /// Readable and executable (default: `READ_EXEC`, the ones that exist).
    /// Extend it with an interpreter or a virtual environment installed elsewhere.
    pub read_exec: Vec<PathBuf>,
    /// Readable only (default: `READ_ONLY`, the ones that exist): the files
    /// under `/etc` that the C library, TLS and time zones need, not `/etc` as a whole.
    pub read_only: Vec<PathBuf>,
    /// Readable and writable besides the working directory, which always is (default:
    /// `DEVICES`).
    pub read_write: Vec<PathBuf>,
    /// The network it may use.
    pub network: Network,
    /// Whether it may open Unix sockets with `socket()` (to connect to a socket by its
    /// path, or make one); `socketpair()` is always allowed. Default false: the seccomp
    /// filter refuses `socket(AF_UNIX, ...)` with `EPERM`.
    pub unix_sockets: bool,
    /// Resource limits of the process and everything it starts.
    pub limits: ResourceLimits,
    /// The Landlock ABI whose access rights must be enforced under
    /// [`Enforcement::Required`] (default [`LandlockAbi::V4`]: filesystem and TCP).
    /// Newer rights that the kernel offers are enforced anyway; raising this makes them
    /// a condition of starting.
    pub min_landlock_abi: LandlockAbi,
}

impl Default for Confinement {
    fn default() -> Self {
        Self {
            enforcement: Enforcement::Required,
            read_exec: paths::existing(paths::READ_EXEC),
            read_only: paths::existing(paths::READ_ONLY),
            read_write: paths::existing(paths::DEVICES),
            network: Network::None,
            unix_sockets: false,
            limits: ResourceLimits::default(),
            min_landlock_abi: LandlockAbi::V4,
        }
    }
}

impl Confinement {
    /// Grants read and execute on `path` (a directory and everything below it, or a file).
    #[must_use]
    pub fn read_exec(mut self, path: impl Into<PathBuf>) -> Self {
        self.read_exec.push(path.into());
        self
    }

    /// Grants read on `path`.
    #[must_use]
    pub fn read_only(mut self, path: impl Into<PathBuf>) -> Self {
        self.read_only.push(path.into());
        self
    }

    /// Grants read and write on `path`.
    #[must_use]
    pub fn read_write(mut self, path: impl Into<PathBuf>) -> Self {
        self.read_write.push(path.into());
        self
    }

    /// Sets the network the provider may use.
    #[must_use]
    pub fn network(mut self, network: Network) -> Self {
        self.network = network;
        self
    }

    /// Lets it open Unix sockets with `socket()`.
    #[must_use]
    pub fn unix_sockets(mut self) -> Self {
        self.unix_sockets = true;
        self
    }

    /// Sets the resource limits.
    #[must_use]
    pub fn limits(mut self, limits: ResourceLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Starts the provider even where the kernel cannot enforce everything.
    #[must_use]
    pub fn best_effort(mut self) -> Self {
        self.enforcement = Enforcement::BestEffort;
        self
    }
}
