//! The two halves around a spawn: [`prepare`] before it, [`Prepared::finish`] after.
//!
//! ```text
//! let prepared = prepare(&confinement, &program, &workdir)?;   // ruleset, limits, pipe, cgroup
//! let mut prepared = prepared;
//! prepared.install(&mut std_command);                          // the pre_exec hook
//! let spawned = command.spawn();                               // fork, confine, exec
//! drop(command);                                               // closes the hook's copies
//! let confined = prepared.finish(spawned.as_ref().err())?;     // what the child did
//! ```

use std::ffi::CString;
use std::fs::{DirBuilder, Permissions};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStringExt as _;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Stdio};

use rustix::io::Errno;
use rustix::pipe::{PipeFlags, pipe_with};

use crate::cgroup::PidsCgroup;
use crate::child::{self, ChildPlan, DONE, MAGIC, NETNS_ONLY, Record, USERNS_ONLY, slot};
use crate::connects::ConnectWatch;
use crate::limits;
use crate::policy::{Confinement, Enforcement, Network};
use crate::report::{ConfinementError, ConfinementReport, Mechanism, ProcessBound};
use crate::seccomp::{self, SocketGrants};
use crate::{paths, ruleset};

/// A confinement ready to be installed on one `Command`.
#[derive(Debug)]
pub struct Prepared {
    /// The gateway's end of the socket pair that brings back the proxy's listener.
    proxy_channel: Option<OwnedFd>,
    /// The ports of the listeners for direct connects that follow the proxy's on it, in order.
    transparent: Vec<u16>,
    /// The proxy's port.
    proxy_port: u16,
    /// Whether the name service's socket comes last.
    dns: bool,
    plan: Option<ChildPlan>,
    status: OwnedFd,
    cgroup: Option<PidsCgroup>,
    enforcement: Enforcement,
    tcp_restricted: bool,
    wants_namespace: bool,
    /// Whether the directories to hide include `/run` (or there is none): where the
    /// buses, the user's runtime directory and the Docker socket live.
    hides_run: bool,
    wants_process_bound: bool,
    unix_sockets: bool,
    wanted_landlock_abi: u8,
}

/// A running confined process's confinement: what it got, and its cgroup if it has one.
#[derive(Debug)]
pub struct Confined {
    /// What the kernel applied.
    pub report: ConfinementReport,
    /// The server's `pids` cgroup; dropping it kills what is left in it.
    pub cgroup: Option<PidsCgroup>,
    /// For [`Network::Proxied`]: the listener on `127.0.0.1:port` inside the server's
    /// network namespace, where the gateway accepts its connections.
    pub proxy: Option<std::net::TcpListener>,
    /// For [`Network::Proxied`]: a listener on `0.0.0.0:p` inside the namespace for each
    /// of its `transparent` ports, in order, where the gateway accepts the server's own
    /// connects to any address on that port.
    pub transparent: Vec<std::net::TcpListener>,
    /// For [`Network::Proxied`] with `dns`: a UDP socket on `0.0.0.0:53` inside the
    /// namespace, where the server's DNS queries to any address arrive.
    pub dns: Option<std::net::UdpSocket>,
    /// For [`Network::Proxied`]: the server's connects, for the gateway to answer
    /// ([`ConnectWatch::watch`], which must run for as long as the server does); `None`
    /// where this kernel has no such filter.
    pub connects: Option<ConnectWatch>,
}

/// Prepares everything the child will apply: creates `workdir` (mode 0700) if missing,
/// builds the Landlock ruleset granting `program`, the policy's paths and `workdir`,
/// computes the limits, and opens the status pipe.
///
/// # Errors
///
/// [`ConfinementError::Unavailable`] under [`Enforcement::Required`] when the kernel
/// lacks the Landlock rights of the policy's `min_landlock_abi`; [`ConfinementError::Path`]
/// for a path that cannot be granted or a working directory that is too broad.
pub fn prepare(confinement: &Confinement, program: &Path, workdir: &Path) -> Result<Prepared, ConfinementError> {
    let path_error = |detail: String| ConfinementError::Path { path: workdir.display().to_string(), detail };
    if !workdir.is_absolute() || paths::too_broad_for_a_workdir(workdir) {
        return Err(path_error("a working directory must be an absolute path of the provider's own".into()));
    }
    DirBuilder::new().recursive(true).mode(0o700).create(workdir).map_err(|e| path_error(e.to_string()))?;
    let ruleset = ruleset::build(confinement, program, workdir)?;
    let required = confinement.enforcement == Enforcement::Required;
    let seccomp = match seccomp::build(SocketGrants::of(confinement)) {
        Ok(programs) => Some(programs),
        Err(e) if required => {
            return Err(ConfinementError::Unavailable { mechanism: Mechanism::Seccomp, detail: e.to_string() });
        }
        Err(_) => None,
    };
    let (status_read, status) = pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)
        .map_err(|e| ConfinementError::Setup(format!("status pipe: {e}")))?;
    let cgroup = confinement.limits.processes.and_then(PidsCgroup::create);
    let (cgroup, cgroup_procs) = cgroup.map_or((None, None), |(group, procs)| (Some(group), Some(procs)));
    let wants_namespace = matches!(confinement.network, Network::None | Network::Proxied { .. });
    // The proxy's listener comes back over a socket pair: the gateway keeps one end.
    let (mut transparent, mut dns) = (Vec::new(), false);
    let (proxy_port, proxy_channel) = match &confinement.network {
        Network::Proxied { port, transparent: ports, dns: name_service } => {
            dns = *name_service;
            if ports.len() > crate::MAX_TRANSPARENT_PORTS || ports.contains(port) {
                return Err(ConfinementError::Setup(format!(
                    "at most {} ports reach the gateway directly, and not the proxy's own ({port})",
                    crate::MAX_TRANSPARENT_PORTS
                )));
            }
            transparent.clone_from(ports);
            let port = *port;
            let (ours, theirs) = rustix::net::socketpair(
                rustix::net::AddressFamily::UNIX,
                rustix::net::SocketType::STREAM,
                rustix::net::SocketFlags::CLOEXEC,
                None,
            )
            .map_err(|e| ConfinementError::Setup(format!("proxy channel: {e}")))?;
            (Some((port, theirs)), Some(ours))
        }
        _ => (None, None),
    };
    let port_of_proxy = proxy_port.as_ref().map_or(0, |(port, _)| *port);
    let hidden = paths::hideable(ruleset::granted(confinement, program, workdir), !wants_namespace);
    let hides_run = !Path::new("/run").is_dir() || hidden.iter().any(|dir| dir == Path::new("/run"));
    let hide: Vec<CString> =
        hidden.into_iter().filter_map(|dir| CString::new(dir.into_os_string().into_vec()).ok()).collect();
    let plan = ChildPlan {
        ruleset: Some(ruleset),
        limits: limits::plan(&confinement.limits),
        nproc: limits::nproc(&confinement.limits),
        namespace: wants_namespace,
        hide,
        required,
        cgroup_procs,
        status,
        parent: rustix::process::getpid(),
        seccomp,
        wants_process_bound: confinement.limits.processes.is_some(),
        root: child::is_root(),
        proxy: proxy_port,
        transparent: transparent.clone(),
        dns,
        connects: crate::connects::supported(),
    };
    Ok(Prepared {
        proxy_channel,
        proxy_port: port_of_proxy,
        transparent,
        dns,
        plan: Some(plan),
        status: status_read,
        cgroup,
        enforcement: confinement.enforcement,
        tcp_restricted: confinement.network != Network::Unrestricted,
        wants_namespace,
        hides_run,
        wants_process_bound: confinement.limits.processes.is_some(),
        unix_sockets: confinement.unix_sockets,
        wanted_landlock_abi: child::abi_number(confinement.min_landlock_abi),
    })
}

impl Prepared {
    /// Installs the `pre_exec` hook on `command` (once; later calls do nothing).
    pub fn install(&mut self, command: &mut Command) {
        if let Some(plan) = self.plan.take() {
            plan.install(command);
        }
    }

    /// Reads what the child did. Call after the spawn and after dropping the `Command`
    /// (so the pipe's only write ends were the child's). `spawn_error` is the spawn's
    /// error, if it failed: a refusal of the child is turned into the mechanism it lacked.
    ///
    /// # Errors
    ///
    /// [`ConfinementError::Unavailable`] when the child stopped because a required
    /// mechanism failed.
    pub fn finish(self, spawn_error: Option<&io::Error>) -> Result<Confined, ConfinementError> {
        let mut record = Record::default();
        let read = rustix::io::read(&self.status, &mut record).unwrap_or(0);
        if read != record.len() || record[slot::MAGIC] != MAGIC {
            record = Record::default();
        }
        if let Some(error) = spawn_error {
            let step = usize::from(record[slot::FAILED]);
            if step != 0 {
                let errno = i32::from_le_bytes([0, 1, 2, 3].map(|i| record[slot::ERRNO + i]));
                let mechanism = match step {
                    slot::LIMITS => Mechanism::ResourceLimits,
                    slot::NO_NEW_PRIVS => Mechanism::NoNewPrivs,
                    slot::CAPABILITIES => Mechanism::Capabilities,
                    slot::SECCOMP => Mechanism::Seccomp,
                    slot::PROCESS_BOUND => Mechanism::ProcessCount,
                    slot::PROXY => Mechanism::NetworkNamespace,
                    _ => Mechanism::LandlockFilesystem,
                };
                let errno = Errno::from_raw_os_error(errno);
                let cause = match step {
                    slot::PROCESS_BOUND => {
                        "no pids cgroup could be made and the server has no user namespace of its own".to_owned()
                    }
                    slot::PROXY if record[slot::NAMESPACE] != DONE && record[slot::NAMESPACE] != NETNS_ONLY => {
                        "a server granted hosts reaches them through the gateway's proxy, from a network \
                         namespace of its own, and none could be made"
                            .to_owned()
                    }
                    slot::PROXY => {
                        format!(
                            "the proxy's listener, or the route and listeners of direct connects, could not be set up ({errno})"
                        )
                    }
                    _ => format!("the kernel refused it ({errno})"),
                };
                let detail = format!("{cause}; {}", mechanism.remedy());
                return Err(ConfinementError::Unavailable { mechanism, detail });
            }
            let hint = if error.kind() == io::ErrorKind::PermissionDenied {
                " (Landlock: grant the program's directory, its interpreter and libraries with read_exec)"
            } else {
                ""
            };
            return Err(ConfinementError::Setup(format!("spawning: {error}{hint}")));
        }
        let namespace = record[slot::NAMESPACE];
        let cgroup = if record[slot::CGROUP] == DONE { self.cgroup } else { None };
        let processes = if cgroup.is_some() {
            ProcessBound::Cgroup
        } else if record[slot::NPROC] == DONE && !child::is_root() {
            ProcessBound::Rlimit
        } else {
            ProcessBound::None
        };
        let report = ConfinementReport {
            enforcement: self.enforcement,
            landlock_abi: record[slot::LANDLOCK_ABI],
            tcp_restricted: self.tcp_restricted,
            network_namespace: namespace == DONE || namespace == NETNS_ONLY,
            user_namespace: namespace == DONE || namespace == USERNS_ONLY,
            no_new_privs: record[slot::NO_NEW_PRIVS] == DONE,
            capabilities_dropped: record[slot::CAPABILITIES] == DONE,
            socket_dirs_hidden: self.hides_run && record[slot::HIDDEN] == DONE,
            resource_limits: record[slot::LIMITS] == DONE,
            seccomp: record[slot::SECCOMP] == DONE,
            unix_sockets_refused: record[slot::SECCOMP] == DONE && !self.unix_sockets,
            processes,
            wants_namespace: self.wants_namespace,
            wants_process_bound: self.wants_process_bound,
            wanted_landlock_abi: self.wanted_landlock_abi,
        };
        let proxy = self.proxy_channel.as_ref().and_then(receive_socket).map(std::net::TcpListener::from);
        if self.proxy_channel.is_some() && proxy.is_none() {
            return Err(ConfinementError::Setup("the proxy's listener did not arrive".into()));
        }
        let mut transparent = Vec::with_capacity(self.transparent.len());
        for _ in 0..self.transparent.len() {
            match self.proxy_channel.as_ref().and_then(receive_socket) {
                Some(listener) => transparent.push(std::net::TcpListener::from(listener)),
                None => return Err(ConfinementError::Setup("a listener for direct connects did not arrive".into())),
            }
        }
        let dns = match self.dns.then(|| self.proxy_channel.as_ref().and_then(receive_socket)) {
            None => None,
            Some(Some(socket)) => Some(std::net::UdpSocket::from(socket)),
            Some(None) => return Err(ConfinementError::Setup("the name service's socket did not arrive".into())),
        };
        // Last, where the kernel has the filter: the server's connects to answer.
        let connects = self.proxy_channel.as_ref().and_then(receive_socket).map(|listener| {
            let mut ports = self.transparent.clone();
            ports.push(self.proxy_port);
            ConnectWatch { listener, ports }
        });
        // Sent but lost, the filter would fail every connect of the server.
        if record[slot::CONNECTS] == DONE && connects.is_none() {
            return Err(ConfinementError::Setup("the connect filter's listener did not arrive".into()));
        }
        Ok(Confined { report, cgroup, proxy, transparent, dns, connects })
    }
}

/// The socket the child sent over `channel` next, if one arrived.
fn receive_socket(channel: &OwnedFd) -> Option<OwnedFd> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    let mut space = [std::mem::MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let mut byte = [0u8; 1];
    let flags = RecvFlags::DONTWAIT | RecvFlags::CMSG_CLOEXEC;
    rustix::net::recvmsg(channel, &mut [io::IoSliceMut::new(&mut byte)], &mut control, flags).ok()?;
    let mut received = control.drain().filter_map(|message| match message {
        RecvAncillaryMessage::ScmRights(fds) => Some(fds),
        _ => None,
    });
    received.next()?.next()
}

/// Starts `true` (from `/usr/bin` or `/bin`) under `confinement` in `workdir` and returns
/// what the kernel applied to it: what this machine can enforce, measured rather than
/// guessed from version numbers and sysctls.
///
/// # Errors
///
/// What [`prepare`] and [`Prepared::finish`] return: under [`Enforcement::Required`],
/// the first mechanism that this machine cannot apply.
pub fn probe(confinement: &Confinement, workdir: &Path) -> Result<ConfinementReport, ConfinementError> {
    let program = ["/usr/bin/true", "/bin/true"]
        .into_iter()
        .map(Path::new)
        .find(|path| path.is_file())
        .ok_or_else(|| ConfinementError::Setup("no /usr/bin/true or /bin/true to probe with".into()))?;
    let mut prepared = prepare(confinement, program, workdir)?;
    let mut command = Command::new(program);
    command.current_dir(workdir).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    prepared.install(&mut command);
    let spawned = command.spawn();
    drop(command);
    let confined = prepared.finish(spawned.as_ref().err());
    if let Ok(mut child) = spawned {
        let _ = child.wait();
    }
    Ok(confined?.report)
}

/// Creates a provider's private working directory `<state_dir>/providers/<provider>`
/// (mode 0700) and returns it. `provider` must be a plain name: no separators, not `.`
/// or `..`, so one provider's directory can never be another's or contain it.
///
/// # Errors
///
/// [`ConfinementError::Path`] for a name that is not plain or a directory that cannot
/// be created.
pub fn provider_workdir(state_dir: &Path, provider: &str) -> Result<std::path::PathBuf, ConfinementError> {
    let plain = !provider.is_empty()
        && provider != "."
        && provider != ".."
        && !provider.contains(['/', '\\', '\0'])
        && !provider.starts_with('.');
    let dir = state_dir.join("providers").join(provider);
    let problem = |detail: String| ConfinementError::Path { path: dir.display().to_string(), detail };
    if !plain {
        return Err(problem(format!("{provider:?} is not a plain provider name")));
    }
    DirBuilder::new().recursive(true).mode(0o700).create(&dir).map_err(|e| problem(e.to_string()))?;
    std::fs::set_permissions(&dir, Permissions::from_mode(0o700)).map_err(|e| problem(e.to_string()))?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_many_direct_ports_or_the_proxys_own_are_refused_before_anything_starts() {
        let state = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let workdir = state.path().join("w");
        let with = |transparent: Vec<u16>| Confinement {
            network: Network::Proxied { port: 3128, transparent, dns: false },
            ..Confinement::default().best_effort()
        };
        let program = Path::new("/bin/true");
        let too_many: Vec<u16> = (1..=u16::try_from(crate::MAX_TRANSPARENT_PORTS).unwrap_or(u16::MAX) + 1).collect();
        for ports in [too_many, vec![443, 3128]] {
            match prepare(&with(ports.clone()), program, &workdir) {
                Err(ConfinementError::Setup(why)) => assert!(why.contains("reach the gateway directly"), "{why}"),
                other => panic!("{ports:?}: {:?}", other.map(|_| ())),
            }
        }
        let most: Vec<u16> = (1..=u16::try_from(crate::MAX_TRANSPARENT_PORTS).unwrap_or(u16::MAX)).collect();
        assert!(prepare(&with(most), program, &workdir).is_ok());
    }

    #[test]
    fn a_provider_workdir_is_private_and_its_name_cannot_escape() {
        let state = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = provider_workdir(state.path(), "calendar").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(dir, state.path().join("providers/calendar"));
        let mode = std::fs::metadata(&dir).map(|m| m.permissions().mode() & 0o777).unwrap_or(0);
        assert_eq!(mode, 0o700);
        for name in ["", ".", "..", "../x", "a/b", ".hidden"] {
            assert!(matches!(provider_workdir(state.path(), name), Err(ConfinementError::Path { .. })), "{name:?}");
        }
    }

    #[test]
    fn a_probe_reports_what_the_kernel_applied_and_required_refuses_what_is_missing() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let workdir = dir.path().join("probe");
        let report = probe(&Confinement::default().best_effort(), &workdir).unwrap_or_else(|e| panic!("{e}"));
        assert!(report.landlock_abi >= 1 && report.seccomp && report.no_new_privs, "{report:?}");
        // Required either starts it with nothing missing or names what is.
        match probe(&Confinement::default(), &workdir) {
            Ok(required) => {
                let bounded = required.processes != ProcessBound::None;
                let held = required.seccomp && required.no_new_privs && required.capabilities_dropped;
                assert!(held && bounded && required.landlock_abi >= 4, "{required:?}");
            }
            Err(ConfinementError::Unavailable { mechanism, .. }) => {
                assert!(report.missing().contains(&mechanism), "{mechanism:?} refused, yet {report:?}");
            }
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn a_broad_or_relative_working_directory_is_refused() {
        for workdir in ["/", "/tmp", "/home", "relative"] {
            let refused = prepare(&Confinement::default(), Path::new("/bin/true"), Path::new(workdir));
            assert!(matches!(refused, Err(ConfinementError::Path { .. })), "{workdir}");
        }
    }
}
