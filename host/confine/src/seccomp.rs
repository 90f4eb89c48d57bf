//! The seccomp filter of a confined server: which sockets it may open, and the kernel
//! surface it never needs.
//!
//! Built in the gateway before the fork with `seccompiler` (the filter compiler of
//! Firecracker), installed by the child as its last step before `exec`. Two programs:
//!
//! * the main one returns `EPERM` for
//!   - `socket()` of a family the policy does not grant: `AF_INET`/`AF_INET6` only with a
//!     network grant, `AF_UNIX` only with [`Confinement::unix_sockets`], `AF_NETLINK` only
//!     for `NETLINK_ROUTE` (the C library's address lookups), nothing else ever
//!     (`AF_PACKET`, `AF_BLUETOOTH`, `AF_VSOCK`, ...), and never a raw or packet socket;
//!     `socketpair()` stays allowed, so a runtime's self-pipe keeps working;
//!   - the riskiest kernel surface, which no MCP server needs: tracing other processes
//!     (`ptrace`, `process_vm_*`), `bpf`, `perf_event_open`, the keyrings, `userfaultfd`,
//!     `io_uring`, mounts and namespaces (and `clone` with a namespace flag), modules,
//!     `kexec`, `reboot`, swap, the clock, `open_by_handle_at`, `TIOCSTI`;
//!   - on x86-64, the same calls made through the x32 ABI;
//! * the second returns `ENOSYS` for `clone3`, whose flags live in memory a filter cannot
//!   read: the C library then falls back to `clone`, which the main program checks.
//!
//! Every other architecture's calls (i386's `int 0x80` on x86-64) kill the process: the
//! filter only knows the native numbers. Everything else is allowed: the filter narrows
//! what Landlock, the namespaces and the dropped capabilities already refuse, so a
//! mechanism that is missing on some system (a network namespace) is covered by another.
//!
//! [`Confinement::unix_sockets`]: crate::Confinement::unix_sockets

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

use crate::report::ConfinementError;

/// The two compiled programs, ready to install after the fork.
#[derive(Debug, Clone)]
pub(crate) struct Programs {
    pub(crate) main: BpfProgram,
    pub(crate) enosys: BpfProgram,
}

/// Which socket families the server may open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SocketGrants {
    /// `AF_INET` and `AF_INET6` (stream and datagram; never raw).
    pub(crate) inet: bool,
    /// `AF_UNIX` by `socket()`; `socketpair()` is always allowed.
    pub(crate) unix: bool,
}

impl SocketGrants {
    /// What `confinement` grants.
    pub(crate) fn of(confinement: &crate::Confinement) -> Self {
        Self { inet: confinement.network != crate::Network::None, unix: confinement.unix_sockets }
    }
}

/// Syscalls refused outright, on every architecture that has them.
const REFUSED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_process_madvise,
    libc::SYS_pidfd_getfd,
    libc::SYS_kcmp,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_keyctl,
    libc::SYS_userfaultfd,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_adjtimex,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_fanotify_init,
    libc::SYS_syslog,
    libc::SYS_vhangup,
];

/// Refused on x86-64 only (the others do not have them).
#[cfg(target_arch = "x86_64")]
const REFUSED_X86_64: &[libc::c_long] =
    &[libc::SYS_iopl, libc::SYS_ioperm, libc::SYS_uselib, libc::SYS_lookup_dcookie, libc::SYS_modify_ldt];
#[cfg(not(target_arch = "x86_64"))]
const REFUSED_X86_64: &[libc::c_long] = &[];

/// The x32 ABI's numbers are the native ones with this bit set, and they carry the
/// native architecture's audit value, so the architecture check does not catch them.
const X32_SYSCALL_BIT: libc::c_long = 0x4000_0000;
/// x32's own numbers for `process_vm_readv` and `process_vm_writev`.
const X32_PROCESS_VM: [libc::c_long; 2] = [539, 540];

/// The namespace flags of `clone` (`CLONE_NEWTIME` shares its bit with the exit signal
/// there, and exists only for `clone3` and `unshare`).
const NAMESPACE_FLAGS: [u64; 7] = [
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWCGROUP as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
];

/// `SOCK_PACKET`, the obsolete packet socket type (libc deprecates the constant).
const SOCK_PACKET: u64 = 10;
/// The socket type without `SOCK_NONBLOCK` and `SOCK_CLOEXEC`.
const SOCK_TYPE_MASK: u64 = 0xf;
/// `TIOCSTI` (push input into a terminal) and `TIOCLINUX`.
const TERMINAL_INJECTION: [u64; 2] = [0x5412, 0x541C];

/// The architecture the filter is compiled for: the one this gateway runs on.
fn target() -> Result<TargetArch, ConfinementError> {
    TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|_| ConfinementError::Setup(format!("no seccomp filter for {}", std::env::consts::ARCH)))
}

/// Compiles the filter for a server with `grants`.
///
/// # Errors
///
/// [`ConfinementError::Setup`] on an architecture `seccompiler` does not know, or if the
/// filter does not compile (a bug: the rules are fixed).
pub(crate) fn build(grants: SocketGrants) -> Result<Programs, ConfinementError> {
    let arch = target()?;
    let fail = |e: seccompiler::BackendError| ConfinementError::Setup(format!("seccomp filter: {e}"));
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for &call in REFUSED.iter().chain(REFUSED_X86_64) {
        rules.insert(call, Vec::new());
    }
    rules.insert(libc::SYS_socket, socket_rules(grants).map_err(fail)?);
    rules.insert(libc::SYS_clone, any_bit_of(0, &NAMESPACE_FLAGS).map_err(fail)?);
    rules.insert(libc::SYS_ioctl, equal_to(1, &TERMINAL_INJECTION).map_err(fail)?);
    if arch == TargetArch::x86_64 {
        let native: Vec<(i64, Vec<SeccompRule>)> = rules.iter().map(|(n, r)| (*n, r.clone())).collect();
        for (call, chain) in native {
            rules.insert(call | X32_SYSCALL_BIT, chain);
        }
        for call in X32_PROCESS_VM {
            rules.insert(call | X32_SYSCALL_BIT, Vec::new());
        }
    }
    let eperm = SeccompAction::Errno(libc::EPERM.unsigned_abs());
    let main = SeccompFilter::new(rules, SeccompAction::Allow, eperm, arch).map_err(fail)?;
    let clone3 = BTreeMap::from([(libc::SYS_clone3, Vec::new())]);
    let enosys = SeccompAction::Errno(libc::ENOSYS.unsigned_abs());
    let second = SeccompFilter::new(clone3, SeccompAction::Allow, enosys, arch).map_err(fail)?;
    let compile = |filter: SeccompFilter| BpfProgram::try_from(filter).map_err(fail);
    Ok(Programs { main: compile(main)?, enosys: compile(second)? })
}

/// The rules under which `socket(domain, type, protocol)` is refused.
fn socket_rules(grants: SocketGrants) -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
    let arg =
        |index: u8, op: SeccompCmpOp, value: u64| SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value);
    let (unix, inet, inet6, netlink) =
        (libc::AF_UNIX as u64, libc::AF_INET as u64, libc::AF_INET6 as u64, libc::AF_NETLINK as u64);
    let mut allowed = vec![netlink];
    if grants.unix {
        allowed.push(unix);
    }
    if grants.inet {
        allowed.extend([inet, inet6]);
    }
    // A family outside the granted ones: every condition of a rule must hold.
    let outside = allowed.iter().map(|family| arg(0, SeccompCmpOp::Ne, *family)).collect::<Result<Vec<_>, _>>()?;
    let mut rules = vec![SeccompRule::new(outside)?];
    // Netlink beyond the routing family (audit, netfilter, uevents, ...).
    rules.push(SeccompRule::new(vec![
        arg(0, SeccompCmpOp::Eq, netlink)?,
        arg(2, SeccompCmpOp::Ne, libc::NETLINK_ROUTE as u64)?,
    ])?);
    // Raw and packet sockets of any family that is allowed.
    for kind in [libc::SOCK_RAW as u64, SOCK_PACKET] {
        for family in [inet, inet6] {
            rules.push(SeccompRule::new(vec![
                arg(0, SeccompCmpOp::Eq, family)?,
                arg(1, SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK), kind)?,
            ])?);
        }
    }
    Ok(rules)
}

/// One rule per bit: argument `index` has that bit set.
fn any_bit_of(index: u8, bits: &[u64]) -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
    bits.iter()
        .map(|&bit| {
            SeccompRule::new(vec![SeccompCondition::new(
                index,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(bit),
                bit,
            )?])
        })
        .collect()
}

/// One rule per value: argument `index` equals it.
fn equal_to(index: u8, values: &[u64]) -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
    values
        .iter()
        .map(|&value| {
            SeccompRule::new(vec![SeccompCondition::new(index, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, value)?])
        })
        .collect()
}

/// Installs both programs on the calling thread. Allocation-free (it runs in the child
/// after `fork`): `seccompiler::apply_filter` only builds a `sock_fprog` on the stack
/// and calls `prctl` and `seccomp`; its error wraps `io::Error::last_os_error()`.
pub(crate) fn install(programs: &Programs) -> std::io::Result<()> {
    let apply = |program: &BpfProgram| {
        seccompiler::apply_filter(program).map_err(|e| match e {
            seccompiler::Error::Prctl(e) | seccompiler::Error::Seccomp(e) => e,
            _ => std::io::Error::from_raw_os_error(libc::EINVAL),
        })
    };
    apply(&programs.enosys)?;
    apply(&programs.main)
}

/// Installs the filter a server with `confinement` gets on the calling thread, for
/// good (and `no_new_privs` with it). For measuring what the filter costs a server's
/// system calls (`benches/seccomp.rs`) and for tests; the gateway never calls it.
///
/// # Errors
///
/// [`ConfinementError::Setup`] when the filter cannot be compiled or installed here.
pub fn install_on_this_thread(confinement: &crate::Confinement) -> Result<(), ConfinementError> {
    let grants = SocketGrants { inet: confinement.network != crate::Network::None, unix: confinement.unix_sockets };
    install(&build(grants)?).map_err(|e| ConfinementError::Setup(format!("installing the seccomp filter: {e}")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn every_combination_of_grants_compiles_within_the_kernel_limit() {
        for inet in [false, true] {
            for unix in [false, true] {
                let programs = build(SocketGrants { inet, unix }).unwrap();
                // The kernel's BPF_MAXINSNS.
                assert!(programs.main.len() < 4096 && !programs.enosys.is_empty(), "{}", programs.main.len());
            }
        }
    }
}
