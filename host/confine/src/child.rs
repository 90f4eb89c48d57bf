//! The part that runs in the child between `fork` and `exec`: the one unsafe corner.
//!
//! After `fork` in a multi-threaded program only async-signal-safe work is allowed: no
//! allocation (another thread may have held the allocator's lock), no locks, no logging.
//! So everything is prepared before the fork (the Landlock ruleset descriptor, the
//! `setrlimit` values, the cgroup's `cgroup.procs` descriptor, a status pipe) and
//! [`ChildPlan::run`] only issues system calls through rustix's raw Linux backend and the
//! `landlock` crate's `restrict_self`. That function was audited for this (landlock
//! 0.4.8, `RulesetCreated::restrict_self` and `prctl::try_set_no_new_privs`): it calls
//! `prctl` and `landlock_restrict_self`, builds its status and errors from plain enums
//! and `io::Error::last_os_error` (no allocation), and closes the ruleset descriptor.
//!
//! What happened is written to the status pipe as one fixed-size [`Record`] (a single
//! `write` below `PIPE_BUF`, so atomic) before `exec`; the pipe's write end is
//! close-on-exec, so the server never sees it.

#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::os::fd::OwnedFd;
use std::process::Command;

use landlock::{LandlockStatus, RulesetCreated, RulesetStatus};
use rustix::process::{Signal, getppid, set_parent_process_death_signal};
use rustix::process::{getuid, setrlimit};
use rustix::thread::{UnshareFlags, set_no_new_privs, unshare_unsafe};

use crate::limits::Limit;

/// Everything the child needs, prepared by the parent.
#[derive(Debug)]
pub(crate) struct ChildPlan {
    /// `None` in the parent's copy once installed; taken in the child.
    pub(crate) ruleset: Option<RulesetCreated>,
    pub(crate) limits: Vec<Limit>,
    pub(crate) nproc: Option<Limit>,
    /// Whether to enter a fresh network namespace.
    pub(crate) namespace: bool,
    /// Directories to cover with an empty tmpfs in a fresh mount namespace
    /// ([`paths::hideable`](crate::paths::hideable)), as C strings made before the fork.
    pub(crate) hide: Vec<CString>,
    /// Whether a failed `setrlimit`, `no_new_privs` or Landlock step stops the spawn.
    pub(crate) required: bool,
    /// The server's `pids` cgroup's `cgroup.procs`, opened for writing.
    pub(crate) cgroup_procs: Option<OwnedFd>,
    /// The status pipe's write end (close-on-exec).
    pub(crate) status: OwnedFd,
    /// The gateway's pid, to notice that it died before the child asked to die with it.
    pub(crate) parent: rustix::process::Pid,
    /// The seccomp programs, installed last (`None`: none could be compiled here).
    pub(crate) seccomp: Option<crate::seccomp::Programs>,
    /// Whether the policy bounds the number of processes.
    pub(crate) wants_process_bound: bool,
    /// Whether the gateway runs as root, whom `RLIMIT_NPROC` does not bind.
    pub(crate) root: bool,
    /// For [`Network::Proxied`](crate::Network::Proxied): the port to listen on inside
    /// the namespace, and the child's end of the socket pair that carries the listeners.
    pub(crate) proxy: Option<(u16, OwnedFd)>,
    /// For [`Network::Proxied`](crate::Network::Proxied): the ports a plain connect
    /// reaches the gateway on, whatever the address.
    pub(crate) transparent: Vec<u16>,
    /// For [`Network::Proxied`](crate::Network::Proxied): whether a DNS query to any
    /// address reaches the gateway.
    pub(crate) dns: bool,
    /// Whether to install the connect filter ([`crate::connects`]) with the proxy's
    /// listener: where this kernel can answer it.
    pub(crate) connects: bool,
}

/// Byte offsets of the status record.
pub(crate) mod slot {
    pub(crate) const MAGIC: usize = 0;
    pub(crate) const CGROUP: usize = 1;
    pub(crate) const NAMESPACE: usize = 2;
    pub(crate) const LIMITS: usize = 3;
    pub(crate) const NPROC: usize = 4;
    pub(crate) const NO_NEW_PRIVS: usize = 5;
    pub(crate) const LANDLOCK_ABI: usize = 6;
    pub(crate) const FAILED: usize = 7;
    pub(crate) const ERRNO: usize = 8;
    pub(crate) const CAPABILITIES: usize = 12;
    pub(crate) const HIDDEN: usize = 13;
    pub(crate) const SECCOMP: usize = 14;
    pub(crate) const PROXY: usize = 15;
    /// The connect filter's listener, sent with the proxy's.
    pub(crate) const CONNECTS: usize = 16;
    /// Not a byte of the record: the step "a process bound", as the one that failed.
    pub(crate) const PROCESS_BOUND: usize = 17;
}

/// The status record: one byte per step (0 not tried, 1 done, 2 failed; the namespace
/// step: 1 user and network namespace, 3 network namespace only, 4 user namespace only),
/// the enforced Landlock ABI, the step that stopped the spawn, its errno (four bytes),
/// the capabilities step, the hiding of socket directories, the seccomp filter, the
/// proxy listener and the connect filter's listener.
pub(crate) type Record = [u8; 17];
pub(crate) const MAGIC: u8 = b'W';
pub(crate) const DONE: u8 = 1;
pub(crate) const FAILED: u8 = 2;
pub(crate) const NETNS_ONLY: u8 = 3;
/// The namespace step for a server granted the host's network: a user namespace alone.
pub(crate) const USERNS_ONLY: u8 = 4;

impl ChildPlan {
    /// Installs the plan as `command`'s `pre_exec` hook.
    pub(crate) fn install(self, command: &mut Command) {
        let mut plan = self;
        // SAFETY: the closure runs in the forked child before exec. `run` allocates
        // nothing and takes no locks: it reads data prepared before the fork and makes
        // system calls (rustix's raw backend, and landlock's audited `restrict_self`;
        // see the module docs). Dropping the taken ruleset only closes a descriptor.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(command, move || plan.run());
        }
    }

    fn run(&mut self) -> io::Result<()> {
        let mut record = Record::default();
        record[slot::MAGIC] = MAGIC;
        let outcome = self.steps(&mut record);
        if let Err(e) = &outcome {
            let errno = e.raw_os_error().unwrap_or(0);
            record[slot::ERRNO..slot::ERRNO + 4].copy_from_slice(&errno.to_le_bytes());
        }
        // A lost record reads as "nothing applied" in the parent, which fails safe.
        let _ = rustix::io::write(&self.status, &record);
        outcome
    }

    fn steps(&mut self, record: &mut Record) -> io::Result<()> {
        // First, while a root gateway still has its capabilities in the initial namespace.
        if let Some(procs) = &self.cgroup_procs {
            record[slot::CGROUP] = if rustix::io::write(procs, b"0").is_ok() { DONE } else { FAILED };
        }
        let mut own_user_namespace = false;
        if self.namespace {
            // SAFETY (of `unshare_unsafe`): no `UnshareFlags::FILES`, so no descriptor
            // table is split; the child is single-threaded anyway.
            let both = unsafe { unshare_unsafe(UnshareFlags::NEWUSER | UnshareFlags::NEWNET) };
            record[slot::NAMESPACE] = if both.is_ok() {
                own_user_namespace = true;
                DONE
            } else if unsafe { unshare_unsafe(UnshareFlags::NEWNET) }.is_ok() {
                NETNS_ONLY
            } else {
                FAILED
            };
        } else {
            // A server granted the host's network still gets a user namespace of its own:
            // there RLIMIT_NPROC bounds it, and the namespace names all its processes.
            // SAFETY (of `unshare_unsafe`): as above.
            own_user_namespace = unsafe { unshare_unsafe(UnshareFlags::NEWUSER) }.is_ok();
            if own_user_namespace {
                record[slot::NAMESPACE] = USERNS_ONLY;
            }
        }
        if let Some((port, channel)) = &self.proxy {
            // Without a namespace of its own the listener would be on the host's loopback
            // and the server would reach every host: it does not start, whatever the
            // enforcement.
            let isolated = record[slot::NAMESPACE] == DONE || record[slot::NAMESPACE] == NETNS_ONLY;
            let outcome = if isolated {
                hand_over_listeners(*port, &self.transparent, self.dns, channel).and_then(|()| {
                    // Last on the channel. Installed, its listener must reach the gateway,
                    // or every connect would fail; not installed, the kernel's rules still
                    // decide every connect, only unreported (see `connects`).
                    if self.connects
                        && let Ok(listener) = crate::connects::install()
                    {
                        send_fd(&listener, channel)?;
                        record[slot::CONNECTS] = DONE;
                    }
                    Ok(())
                })
            } else {
                Err(rustix::io::Errno::NETUNREACH.into())
            };
            if let Err(e) = outcome {
                record[slot::PROXY] = FAILED;
                record[slot::FAILED] = slot::PROXY as u8;
                return Err(e);
            }
            record[slot::PROXY] = DONE;
        }
        // Before Landlock, which forbids a sandboxed process to change its mounts. Best
        // effort: without a user namespace only root may make a mount namespace.
        record[slot::HIDDEN] = if self.hide.is_empty() || self.hide_socket_dirs().is_ok() { DONE } else { FAILED };
        // Only in a user namespace of its own does RLIMIT_NPROC count just the server's
        // tasks; outside one it would count every process of the user.
        if let (Some(limit), true) = (self.nproc, own_user_namespace) {
            record[slot::NPROC] = if setrlimit(limit.resource, limit.value).is_ok() { DONE } else { FAILED };
        }
        record[slot::LIMITS] = DONE;
        for limit in &self.limits {
            if let Err(e) = setrlimit(limit.resource, limit.value) {
                record[slot::LIMITS] = FAILED;
                self.stop(record, slot::LIMITS, e.into())?;
            }
        }
        self.mark(record, slot::NO_NEW_PRIVS, set_no_new_privs(true).map_err(io::Error::from))?;
        if let Some(ruleset) = self.ruleset.take() {
            match ruleset.restrict_self() {
                Ok(status) if status.ruleset != RulesetStatus::NotEnforced => {
                    record[slot::LANDLOCK_ABI] = effective_abi(status.landlock);
                }
                Ok(_) => self.stop(record, slot::LANDLOCK_ABI, rustix::io::Errno::OPNOTSUPP.into())?,
                Err(_) => self.stop(record, slot::LANDLOCK_ABI, io::Error::last_os_error())?,
            }
        }
        self.mark(record, slot::CAPABILITIES, drop_capabilities())?;
        // Dies with the gateway: a gateway killed with SIGKILL runs no cleanup, and its
        // servers must not outlive it. Last, because a change of credentials (entering a
        // user namespace) clears the setting; the signal follows the forking thread, a
        // runtime worker that lives as long as the gateway. A gateway already gone
        // before the request took effect means no server.
        set_parent_process_death_signal(Some(Signal::KILL))?;
        if getppid() != Some(self.parent) {
            return Err(rustix::io::Errno::SRCH.into());
        }
        // Required means required: a server whose forks nothing bounds does not start.
        let bounded = record[slot::CGROUP] == DONE || (record[slot::NPROC] == DONE && !self.root);
        if self.wants_process_bound && !bounded {
            self.stop(record, slot::PROCESS_BOUND, rustix::io::Errno::PERM.into())?;
        }
        // Last, so the steps above may still make the calls it refuses (`unshare`, `mount`).
        match &self.seccomp {
            Some(programs) => self.mark(record, slot::SECCOMP, crate::seccomp::install(programs))?,
            None => {
                record[slot::SECCOMP] = FAILED;
                self.stop(record, slot::SECCOMP, rustix::io::Errno::NOSYS.into())?;
            }
        }
        Ok(())
    }

    /// Enters a mount namespace of its own, a slave of the host's (the host's unmounts
    /// still reach it, nothing it mounts reaches the host), and covers each directory of
    /// `hide` with an empty, tiny tmpfs. Allocation-free: the paths are C strings already.
    fn hide_socket_dirs(&self) -> io::Result<()> {
        use rustix::mount::{MountFlags, MountPropagationFlags, mount, mount_change};
        // SAFETY (of `unshare_unsafe`): as for the namespaces above.
        unsafe { unshare_unsafe(UnshareFlags::NEWNS) }?;
        mount_change(c"/", MountPropagationFlags::REC | MountPropagationFlags::DOWNSTREAM)?;
        let flags = MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC;
        for dir in &self.hide {
            mount(c"tmpfs", dir.as_c_str(), c"tmpfs", flags, Some(c"mode=0,size=4k"))?;
        }
        Ok(())
    }

    /// Records how `step` went: done, or failed, which under `required` ends the spawn.
    fn mark(&self, record: &mut Record, step: usize, outcome: io::Result<()>) -> io::Result<()> {
        match outcome {
            Ok(()) => {
                record[step] = DONE;
                Ok(())
            }
            Err(e) => {
                record[step] = FAILED;
                self.stop(record, step, e)
            }
        }
    }

    /// Under `required`, ends the spawn at `step`; otherwise carries on.
    fn stop(&self, record: &mut Record, step: usize, error: io::Error) -> io::Result<()> {
        if self.required {
            record[slot::FAILED] = u8::try_from(step).unwrap_or(u8::MAX);
            return Err(error);
        }
        Ok(())
    }
}

/// Brings up the loopback interface of the fresh network namespace, listens on
/// `127.0.0.1:port` there, and sends the listener to the gateway over `channel`
/// (`SCM_RIGHTS`); the gateway accepts the server's connections on it from outside the
/// namespace. With `transparent` ports or `dns`, routes every IPv4 address to the loopback (a
/// `local 0.0.0.0/0` route, as `ip route add local 0.0.0.0/0 dev lo table local`) and
/// sends a listener on `0.0.0.0:p` for each, one message each, in order: a connect to
/// any address on such a port is accepted there, its destination the accepted socket's
/// own address, and a connect on any other port is refused at once. With `dns`, last, a
/// UDP socket on `0.0.0.0:53`, where the server's resolver's queries arrive, whatever
/// name server it is configured with. Allocation-free: the messages live on the stack.
fn hand_over_listeners(port: u16, transparent: &[u16], dns: bool, channel: &OwnedFd) -> io::Result<()> {
    use rustix::net::{AddressFamily, SocketFlags, SocketType};
    use std::os::fd::AsRawFd as _;
    let control = rustix::net::socket_with(AddressFamily::INET, SocketType::DGRAM, SocketFlags::CLOEXEC, None)?;
    // SAFETY: `ifreq` is plain data, all zeroes is a valid value; the ioctl reads it.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    request.ifr_name[0] = b'l' as libc::c_char;
    request.ifr_name[1] = b'o' as libc::c_char;
    request.ifr_ifru.ifru_flags = (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    // SAFETY: a valid descriptor and a pointer to a live `ifreq`, as SIOCSIFFLAGS takes.
    if unsafe { libc::ioctl(control.as_raw_fd(), libc::SIOCSIFFLAGS as _, &request) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above; SIOCGIFINDEX writes the index into the same `ifreq`.
    if unsafe { libc::ioctl(control.as_raw_fd(), libc::SIOCGIFINDEX as _, &mut request) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: SIOCGIFINDEX filled the union's `ifru_ifindex`.
    let lo = unsafe { request.ifr_ifru.ifru_ifindex };
    drop(control);
    send_socket(std::net::Ipv4Addr::LOCALHOST, port, true, channel)?;
    if transparent.is_empty() && !dns {
        return Ok(());
    }
    route_everything_to_loopback(lo, libc::AF_INET)?;
    // IPv6 too where the namespace has it: then each listener takes both families.
    let both = route_everything_to_loopback(lo, libc::AF_INET6).is_ok();
    for &each in transparent {
        send_direct_socket(each, both, channel)?;
    }
    // The name service's socket takes IPv4 alone: an IPv6 query to an address of the
    // namespace's would be answered from another (the loopback's), which resolvers drop,
    // where a query with no listener fails at once.
    if dns {
        send_socket(std::net::Ipv4Addr::UNSPECIFIED, 53, false, channel)?;
    }
    Ok(())
}

/// [`send_socket`] on every address: `[::]:port` taking IPv4 too (`both`), or
/// `0.0.0.0:port` where that cannot be had.
fn send_direct_socket(port: u16, both: bool, channel: &OwnedFd) -> io::Result<()> {
    if both && let Ok(socket) = dual_stack_socket(port) {
        return send_fd(&socket, channel);
    }
    send_socket(std::net::Ipv4Addr::UNSPECIFIED, port, true, channel)
}

/// A listening socket on `[::]:port` that takes IPv4 connections too (as mapped
/// addresses).
fn dual_stack_socket(port: u16) -> io::Result<OwnedFd> {
    use rustix::net::{AddressFamily, SocketFlags, SocketType};
    let socket = rustix::net::socket_with(AddressFamily::INET6, SocketType::STREAM, SocketFlags::CLOEXEC, None)?;
    rustix::net::sockopt::set_ipv6_v6only(&socket, false)?;
    rustix::net::bind(&socket, &std::net::SocketAddrV6::new(std::net::Ipv6Addr::UNSPECIFIED, port, 0, 0))?;
    rustix::net::listen(&socket, 64)?;
    Ok(socket)
}

/// Binds a socket to `address:port`, a listening TCP one (`stream`) or a UDP one, and
/// sends it over `channel`, with one byte.
fn send_socket(address: std::net::Ipv4Addr, port: u16, stream: bool, channel: &OwnedFd) -> io::Result<()> {
    use rustix::net::{AddressFamily, SocketFlags, SocketType};
    let kind = if stream { SocketType::STREAM } else { SocketType::DGRAM };
    let listener = rustix::net::socket_with(AddressFamily::INET, kind, SocketFlags::CLOEXEC, None)?;
    rustix::net::bind(&listener, &std::net::SocketAddrV4::new(address, port))?;
    if stream {
        rustix::net::listen(&listener, 64)?;
    }
    send_fd(&listener, channel)
}

/// Sends `fd` over `channel` (`SCM_RIGHTS`), with one byte.
fn send_fd(fd: &OwnedFd, channel: &OwnedFd) -> io::Result<()> {
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
    use std::os::fd::AsFd as _;
    let mut space = [std::mem::MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    let fds = [fd.as_fd()];
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(rustix::io::Errno::NOBUFS.into());
    }
    let byte = [0u8];
    rustix::net::sendmsg(channel, &[io::IoSlice::new(&byte)], &mut control, SendFlags::empty())?;
    Ok(())
}

/// Adds the route `local 0.0.0.0/0 dev lo` (or, for `family` `AF_INET6`, `local ::/0 dev
/// lo`; `lo` the loopback's interface index) to the namespace's `local` table over
/// rtnetlink, and reads the kernel's acknowledgement. Allocation-free.
fn route_everything_to_loopback(lo: libc::c_int, family: libc::c_int) -> io::Result<()> {
    use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType, netlink::SocketAddrNetlink};
    let socket = rustix::net::socket_with(AddressFamily::NETLINK, SocketType::RAW, SocketFlags::CLOEXEC, None)?;
    // nlmsghdr (16 bytes), rtmsg (12), one attribute: RTA_OIF (4 + 4).
    const LEN: usize = 36;
    let mut message = [0u8; LEN];
    let flags = libc::NLM_F_REQUEST | libc::NLM_F_ACK | libc::NLM_F_CREATE | libc::NLM_F_EXCL;
    message[0..4].copy_from_slice(&(LEN as u32).to_ne_bytes());
    message[4..6].copy_from_slice(&libc::RTM_NEWROUTE.to_ne_bytes());
    message[6..8].copy_from_slice(&(flags as u16).to_ne_bytes());
    message[8..12].copy_from_slice(&1u32.to_ne_bytes());
    // rtmsg: family, dst_len 0 (every address), src_len, tos, table, protocol, scope, type.
    message[16] = u8::try_from(family).map_err(|_| io::Error::from(rustix::io::Errno::AFNOSUPPORT))?;
    message[20] = libc::RT_TABLE_LOCAL;
    message[21] = libc::RTPROT_BOOT;
    message[22] = libc::RT_SCOPE_HOST;
    message[23] = libc::RTN_LOCAL;
    message[28..30].copy_from_slice(&8u16.to_ne_bytes());
    message[30..32].copy_from_slice(&libc::RTA_OIF.to_ne_bytes());
    message[32..36].copy_from_slice(&lo.to_ne_bytes());
    rustix::net::sendto(&socket, &message, SendFlags::empty(), &SocketAddrNetlink::new(0, 0))?;
    // The acknowledgement: an NLMSG_ERROR whose error is 0, or the negated errno.
    let mut answer = [0u8; 64];
    let (read, _) = rustix::net::recv(&socket, &mut answer, RecvFlags::empty())?;
    if read < 20 || u16::from_ne_bytes([answer[4], answer[5]]) != libc::NLMSG_ERROR as u16 {
        return Err(rustix::io::Errno::PROTO.into());
    }
    match i32::from_ne_bytes([answer[16], answer[17], answer[18], answer[19]]) {
        0 => Ok(()),
        error => Err(io::Error::from_raw_os_error(error.checked_neg().unwrap_or(libc::EPROTO))),
    }
}

/// Leaves the server no capability. Outside a user namespace of its own a root gateway's
/// child holds all of root's (`CAP_SYS_ADMIN`, `CAP_NET_RAW`, `CAP_SYS_MODULE`, ...), and
/// a non-root gateway may hold ambient ones (`CAP_NET_BIND_SERVICE` from systemd). So the
/// ambient set is cleared and the three sets are emptied; with `no_new_privs` already set,
/// `exec` then grants nothing (the kernel caps what it would give root at the permitted
/// set held before). Where the child may (`CAP_SETPCAP`), the bounding set is emptied too.
/// A child without capabilities and not root has nothing to drop. Allocation-free.
fn drop_capabilities() -> io::Result<()> {
    use rustix::thread::{CapabilitySet, CapabilitySets, capabilities, set_capabilities};
    let held = capabilities(None)?;
    if held.permitted.is_empty() && !rustix::process::geteuid().is_root() && !is_root() {
        return Ok(());
    }
    rustix::thread::clear_ambient_capability_set()?;
    if held.effective.contains(CapabilitySet::SETPCAP) {
        for bit in 0..u64::BITS {
            match rustix::thread::remove_capability_from_bounding_set(CapabilitySet::from_bits_retain(1 << bit)) {
                // Past the kernel's last capability.
                Ok(()) | Err(rustix::io::Errno::INVAL) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    let none = CapabilitySet::empty();
    set_capabilities(None, CapabilitySets { effective: none, permitted: none, inheritable: none })?;
    Ok(())
}

fn effective_abi(status: LandlockStatus) -> u8 {
    match status {
        LandlockStatus::Available { effective_abi, .. } => abi_number(effective_abi),
        _ => 0,
    }
}

/// The number of a Landlock ABI (the crate's enum is non-exhaustive, so no `as` cast).
/// Allocation-free: it runs in the child too.
pub(crate) fn abi_number(abi: landlock::ABI) -> u8 {
    let of = |n: u8| landlock::ABI::from(i32::from(n));
    let mut n = 0;
    // `ABI::from` saturates at the newest known version, hence the second condition.
    while n < u8::MAX && of(n + 1) <= abi && of(n + 1) != of(n) {
        n += 1;
    }
    n
}

/// Whether the gateway runs as root, for whom `RLIMIT_NPROC` is not enforced.
pub(crate) fn is_root() -> bool {
    getuid().is_root()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abi_numbers_round_trip() {
        for n in 0..=10u8 {
            assert_eq!(abi_number(landlock::ABI::from(i32::from(n))), n);
        }
    }
}
