//! Every `connect(2)` of a server granted hosts, seen by the gateway: a seccomp filter
//! whose one rule hands the call to the gateway (`SECCOMP_RET_USER_NOTIF`), installed in
//! the child, its listener sent to the gateway with the other sockets ([`install`]). The
//! gateway reads the destination from the server's memory and lets the call go on when
//! a grant names its port (the proxy's, a direct port, or UDP to the name service); a
//! TCP connect on any other port, IPv4 or IPv6, is refused at once (`ECONNREFUSED`) and
//! reported, so the audit shows an attempt that no listener of the gateway's would ever
//! see.
//!
//! This is the gateway's view, not the boundary. The call goes on with the arguments the
//! kernel reads again after the answer (another thread of the server may change them in
//! between), so what holds the server in is the same as without it: Landlock's TCP
//! rules, and a network namespace whose only way out is the gateway's listeners. A
//! destination that cannot be read (the process gone, or its memory out of reach) is
//! left to those rules, unreported.

#![allow(unsafe_code)]

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd as _, OwnedFd};

/// This architecture's `AUDIT_ARCH_*`: the filter passes every other ABI's calls on.
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// The x32 ABI's `connect`; elsewhere a number no call has.
#[cfg(target_arch = "x86_64")]
const X32_CONNECT: u32 = libc::SYS_connect as u32 | 0x4000_0000;
#[cfg(not(target_arch = "x86_64"))]
const X32_CONNECT: u32 = u32::MAX;

/// Whether this kernel can answer the filter as [`ConnectWatch`] does: let a call go on
/// (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`, Linux 5.5) and copy a descriptor of another
/// process (`pidfd_getfd`, 5.6). Without the first every connect would wait for ever;
/// without the filter the kernel's rules decide, unreported. Asked once.
pub fn supported() -> bool {
    static SUPPORTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SUPPORTED.get_or_init(|| {
        let Ok(me) = rustix::process::pidfd_open(rustix::process::getpid(), rustix::process::PidfdFlags::empty())
        else {
            return false;
        };
        let target = me.as_raw_fd();
        cfg!(any(target_arch = "x86_64", target_arch = "aarch64"))
            && rustix::process::pidfd_getfd(&me, target, rustix::process::PidfdGetfdFlags::empty()).is_ok()
    })
}

/// The largest socket address the gateway reads (`sockaddr_storage`).
const MAX_ADDRESS: usize = 128;

/// Installs the filter on the calling (child) process and returns its listener.
/// Allocation-free: the program lives on the stack. `no_new_privs`, or `CAP_SYS_ADMIN`
/// in the process's user namespace, must hold already.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) fn install() -> io::Result<OwnedFd> {
    use std::os::fd::FromRawFd as _;
    const fn statement(code: u32, k: u32) -> libc::sock_filter {
        libc::sock_filter { code: code as u16, jt: 0, jf: 0, k }
    }
    const fn jump(code: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
        libc::sock_filter { code: code as u16, jt, jf, k }
    }
    // `seccomp_data`: `nr` at offset 0, `arch` at 4. The native `connect`, and on x86-64
    // the x32 ABI's (the same number with bit 30 set, the same arguments).
    let program = [
        statement(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 4),
        jump(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K, AUDIT_ARCH, 0, 4),
        statement(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
        jump(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K, libc::SYS_connect as u32, 1, 0),
        jump(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K, X32_CONNECT, 0, 1),
        statement(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_USER_NOTIF),
        statement(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
    ];
    let filter = libc::sock_fprog { len: program.len() as u16, filter: program.as_ptr().cast_mut() };
    // SAFETY: a valid program that outlives the call; the kernel copies it. The call
    // returns a new descriptor, which nothing else owns.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &raw const filter,
        )
    };
    let fd = libc::c_int::try_from(fd).map_err(|_| io::Error::from(rustix::io::Errno::INVAL))?;
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor the kernel just returned to this process.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Elsewhere there is no filter: the kernel's rules alone decide, unreported.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(crate) fn install() -> io::Result<OwnedFd> {
    Err(rustix::io::Errno::NOSYS.into())
}

/// A connect the gateway refused.
pub type RefusedConnect = Box<dyn Fn(SocketAddr) + Send + 'static>;

/// The gateway's end of a confined server's connect filter ([`crate::Confined`]).
#[derive(Debug)]
pub struct ConnectWatch {
    pub(crate) listener: OwnedFd,
    /// The TCP ports a connect may go to: the proxy's and the direct ones.
    pub(crate) ports: Vec<u16>,
}

impl ConnectWatch {
    /// Answers the server's connects on a thread of its own, telling `refused` of each
    /// it refuses, until every process under the filter is gone or `ended` (the read end
    /// of a pipe whose write end the gateway drops when the server ends) reads as closed.
    /// The server's connects wait for the answer, so this must run for as long as the
    /// server does.
    ///
    /// # Errors
    ///
    /// When no thread can be started: the server's connects then fail (`ENOSYS`).
    pub fn watch(self, refused: RefusedConnect, ended: OwnedFd) -> io::Result<std::thread::JoinHandle<()>> {
        std::thread::Builder::new().name("wasmgate-connects".into()).spawn(move || self.serve(&refused, &ended))
    }

    fn serve(&self, refused: &RefusedConnect, ended: &OwnedFd) {
        use rustix::event::{PollFd, PollFlags};
        loop {
            let mut poll = [PollFd::new(&self.listener, PollFlags::IN), PollFd::new(ended, PollFlags::IN)];
            match rustix::event::poll(&mut poll, None) {
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => return,
            }
            // HUP: the last process under the filter is gone (on kernels that say so);
            // or the server has ended, whatever its escaped descendants do.
            if !poll[1].revents().is_empty() || !poll[0].revents().contains(PollFlags::IN) {
                return;
            }
            // SAFETY: `seccomp_notif` is plain data; the kernel wants it zeroed.
            let mut notice: libc::seccomp_notif = unsafe { std::mem::zeroed() };
            // SAFETY: the listener and a live, writable `seccomp_notif`, as the ioctl takes.
            if unsafe { libc::ioctl(self.listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_RECV, &raw mut notice) } < 0 {
                match io::Error::last_os_error().raw_os_error() {
                    // Interrupted, or the caller went away before it was read.
                    Some(libc::EINTR | libc::ENOENT) => continue,
                    _ => return,
                }
            }
            let refuse = match self.destination(&notice) {
                // No listener of the gateway's is there.
                Some((destination, true)) if !self.ports.contains(&destination.port()) => Some(destination),
                _ => None,
            };
            let mut answer = libc::seccomp_notif_resp { id: notice.id, val: 0, error: 0, flags: 0 };
            match refuse {
                Some(_) => answer.error = -libc::ECONNREFUSED,
                None => answer.flags = libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
            }
            // SAFETY: the listener and a live `seccomp_notif_resp`. A caller gone since
            // (ENOENT) needs no answer; any other failure would leave every connect
            // waiting, so the thread ends and the kernel fails them (`ENOSYS`) instead.
            let sent =
                unsafe { libc::ioctl(self.listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_SEND, &raw const answer) };
            if sent != 0 && io::Error::last_os_error().raw_os_error() != Some(libc::ENOENT) {
                return;
            }
            if let (Some(destination), true) = (refuse, sent == 0) {
                refused(destination);
            }
        }
    }

    /// Where the noticed `connect` goes and whether its socket is a stream one, read
    /// from the calling process; `None` for another family or what cannot be read.
    fn destination(&self, notice: &libc::seccomp_notif) -> Option<(SocketAddr, bool)> {
        // The calling thread's id; the kernel reads the descriptor and the length as
        // 32-bit values, whatever the upper bits of the registers hold.
        let pid = libc::pid_t::try_from(notice.pid).ok().filter(|pid| *pid > 0)?;
        let length = usize::try_from(notice.data.args[2] as u32).ok()?.min(MAX_ADDRESS);
        let mut bytes = [0u8; MAX_ADDRESS];
        let local = libc::iovec { iov_base: bytes.as_mut_ptr().cast(), iov_len: length };
        let remote =
            libc::iovec { iov_base: usize::try_from(notice.data.args[1]).ok()? as *mut libc::c_void, iov_len: length };
        // SAFETY: `local` is this process's own buffer of `length` bytes; the remote
        // side is only read, by the kernel, which checks it.
        let read = unsafe { libc::process_vm_readv(pid, &raw const local, 1, &raw const remote, 1, 0) };
        let address = parse(bytes.get(..usize::try_from(read).ok()?)?)?;
        let socket = notice.data.args[0] as u32 as libc::c_int;
        let stream = is_stream(pid, socket)?;
        // The process read may have been another that took the pid: only a notice still
        // pending answers for it.
        // SAFETY: the listener and a live `u64`, as the ioctl takes.
        let valid =
            unsafe { libc::ioctl(self.listener.as_raw_fd(), libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &raw const notice.id) };
        (valid == 0).then_some((address, stream))
    }
}

/// An IPv4 or IPv6 socket address in its C layout (ports and addresses in network
/// order); an IPv4-mapped IPv6 one as the IPv4 address it is.
fn parse(bytes: &[u8]) -> Option<SocketAddr> {
    let family = u16::from_ne_bytes([*bytes.first()?, *bytes.get(1)?]);
    let port = u16::from_be_bytes([*bytes.get(2)?, *bytes.get(3)?]);
    let ip = match libc::c_int::from(family) {
        libc::AF_INET => IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(bytes.get(4..8)?).ok()?)),
        libc::AF_INET6 => IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(bytes.get(8..24)?).ok()?)).to_canonical(),
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// Whether descriptor `socket` of thread `tid` is a stream socket, from a copy of it.
fn is_stream(tid: libc::pid_t, socket: libc::c_int) -> Option<bool> {
    use rustix::process::{Pid, PidfdFlags, pidfd_open};
    // A thread's own pidfd (`PIDFD_THREAD`, Linux 6.9), or its process's.
    let thread = pidfd_open(Pid::from_raw(tid)?, PidfdFlags::from_bits_retain(libc::O_EXCL as u32));
    let process = match thread {
        Ok(process) => process,
        Err(_) => pidfd_open(Pid::from_raw(process_of(tid)?)?, PidfdFlags::empty()).ok()?,
    };
    let copy = rustix::process::pidfd_getfd(&process, socket, rustix::process::PidfdGetfdFlags::empty()).ok()?;
    let kind = rustix::net::sockopt::socket_type(&copy).ok()?;
    Some(kind == rustix::net::SocketType::STREAM)
}

/// The process (thread group) of thread `tid`, from `/proc`.
fn process_of(tid: libc::pid_t) -> Option<libc::pid_t> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status.lines().find_map(|line| line.strip_prefix("Tgid:")).and_then(|id| id.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::parse;

    #[test]
    fn socket_addresses_are_read_in_their_c_layout_and_nothing_else_is() {
        let mut v4 = vec![0u8; 16];
        v4[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        v4[2..4].copy_from_slice(&5433u16.to_be_bytes());
        v4[4..8].copy_from_slice(&[127, 0, 0, 1]);
        assert_eq!(parse(&v4), Some("127.0.0.1:5433".parse().unwrap()));
        assert_eq!(parse(&v4[..7]), None, "a short address is not read");
        let mut v6 = vec![0u8; 28];
        v6[..2].copy_from_slice(&(libc::AF_INET6 as u16).to_ne_bytes());
        v6[2..4].copy_from_slice(&443u16.to_be_bytes());
        v6[8..24].copy_from_slice(&"::ffff:198.51.100.7".parse::<std::net::Ipv6Addr>().unwrap().octets());
        assert_eq!(parse(&v6), Some("198.51.100.7:443".parse().unwrap()), "a mapped address is the IPv4 one");
        v6[8..24].copy_from_slice(&"2001:db8::1".parse::<std::net::Ipv6Addr>().unwrap().octets());
        assert_eq!(parse(&v6), Some("[2001:db8::1]:443".parse().unwrap()));
        let mut unix = vec![0u8; 16];
        unix[..2].copy_from_slice(&(libc::AF_UNIX as u16).to_ne_bytes());
        assert_eq!(parse(&unix), None);
        assert_eq!(parse(&[]), None);
    }
}
