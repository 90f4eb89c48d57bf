//! Starting and stopping a stdio server's process: the one place that spawns.
//!
//! Everything about the child's environment is decided in [`spawn`]. The child:
//!
//! * runs confined by the kernel (`wasmgate-confine`: Landlock, a network namespace,
//!   `no_new_privs`, resource limits, applied in a `pre_exec` hook) unless its config
//!   opts out, and the [`ConfinementReport`] says what it actually got;
//! * gets exactly the configured environment (`env_clear`, then the configured
//!   variables), so secrets in the gateway's environment do not leak to a server;
//! * runs in the configured working directory (confined: its private one, created);
//! * leads its own process group, so a signal reaches the helpers it started too;
//! * is killed if the transport is dropped without a clean shutdown.
//!
//! [`supervise`] owns the child for its whole life and decides how the connection
//! ended: by itself (exit, stdout closed), or by a shutdown: close stdin, wait a grace
//! period, `SIGTERM` the group, wait again, `SIGKILL` the group. At the very end the
//! group always gets a `SIGKILL`, which reaps helpers that outlived the server, and
//! so does every process left in the server's `pids` cgroup, if it has one (that finds
//! helpers that left the process group with `setsid`).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::fd::AsRawFd as _;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group};
use tokio::process::{Child, Command};
use tokio::sync::oneshot;
use tokio::time::timeout;
use wasmgate_confine::{Confined, ConfinementReport, NamespaceMembers, PidsCgroup};

use super::stdio_config::StdioConfig;
use crate::error::{CloseReason, TransportError};

/// A started server: its process, and the confinement it runs under.
#[derive(Debug)]
pub(crate) struct Spawned {
    pub(crate) child: Child,
    /// `None`: started unconfined, as its config asked.
    pub(crate) confinement: Option<ConfinementReport>,
    /// Its `pids` cgroup, if it has one; dropping it kills whatever is left in it.
    pub(crate) cgroup: Option<PidsCgroup>,
    /// Without a cgroup, its user namespace's processes; dropping it kills them.
    pub(crate) members: Option<NamespaceMembers>,
    /// The egress proxy's listener in its network namespace, if it was granted hosts.
    pub(crate) proxy: Option<std::net::TcpListener>,
    /// The listeners of its plain connects there, one per port granted.
    pub(crate) transparent: Vec<std::net::TcpListener>,
    /// Where its DNS queries arrive there, when it is granted names.
    pub(crate) dns: Option<std::net::UdpSocket>,
    /// Its connects, for the gateway to answer while it runs.
    pub(crate) connects: Option<wasmgate_confine::ConnectWatch>,
}

/// Spawns the server described by `config`, with piped stdin, stdout and stderr.
pub(crate) fn spawn(config: &StdioConfig) -> Result<Spawned, TransportError> {
    let program = resolve_program(&config.command, &config.env)?;
    let refused = |e: wasmgate_confine::ConfinementError| {
        TransportError::Confinement(format!("server {} not started: {e}", config.name))
    };
    let mut confinement = config.confinement.clone();
    if let (Some(confinement), Some(_)) = (confinement.as_mut(), &config.egress) {
        let proxy = wasmgate_egress::PROXY_PORT;
        let hosts = config.egress.as_ref().map_or(&[][..], |grant| &grant.hosts);
        let mut transparent = wasmgate_egress::transparent_ports(hosts, proxy, usize::MAX);
        if transparent.len() > wasmgate_confine::MAX_TRANSPARENT_PORTS {
            transparent.truncate(wasmgate_confine::MAX_TRANSPARENT_PORTS);
            tracing::warn!(
                server = %config.name,
                most = wasmgate_confine::MAX_TRANSPARENT_PORTS,
                "more granted ports than a plain connect can reach: the highest are reached through the proxy only"
            );
        }
        let dns = wasmgate_egress::wants_name_service(hosts);
        confinement.network = wasmgate_confine::Network::Proxied { port: proxy, transparent, dns };
    }
    let mut prepared = match &confinement {
        Some(confinement) => Some(wasmgate_confine::prepare(confinement, &program, &config.cwd).map_err(refused)?),
        None => None,
    };
    // The checked open file, when the caller opened one: the kernel opens it through
    // the descriptor before exec closes it, so what runs is what was checked.
    let mut command = match &config.program_file {
        Some(file) => {
            let mut command = Command::new(format!("/proc/self/fd/{}", file.as_raw_fd()));
            command.arg0(&program);
            command
        }
        None => Command::new(&program),
    };
    command
        .args(&config.args)
        .env_clear()
        .envs(&config.env)
        .current_dir(&config.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if config.egress.is_some() {
        let proxy = format!("http://127.0.0.1:{}", wasmgate_egress::PROXY_PORT);
        for variable in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"] {
            command.env(variable, &proxy);
        }
        // Node's own `fetch` honours the variables only when asked, in the releases that can.
        command.env("NODE_USE_ENV_PROXY", "1");
        command.env_remove("NO_PROXY").env_remove("no_proxy");
    }
    if let Some(prepared) = prepared.as_mut() {
        prepared.install(command.as_std_mut());
    }
    let spawned = command.spawn();
    // The hook owns the child's end of the status pipe: drop it before reading.
    drop(command);
    let confined = match prepared {
        Some(prepared) => Some(prepared.finish(spawned.as_ref().err()).map_err(refused)?),
        None => None,
    };
    let child = spawned.map_err(|e| {
        TransportError::Config(format!("cannot start {} in {}: {e}", program.display(), config.cwd.display()))
    })?;
    let (confinement, cgroup, proxy, transparent, dns, connects) = match confined {
        Some(confined) => {
            let missing = confined.report.missing();
            if missing.is_empty() {
                tracing::debug!(server = %config.name, confinement = %confined.report, "stdio server confined");
            } else {
                tracing::warn!(server = %config.name, confinement = %confined.report, "STDIO SERVER NOT FULLY CONFINED");
            }
            let Confined { report, cgroup, proxy, transparent, dns, connects } = confined;
            (Some(report), cgroup, proxy, transparent, dns, connects)
        }
        None => {
            tracing::warn!(server = %config.name, "STDIO SERVER UNCONFINED: its config turned confinement off");
            (None, None, None, Vec::new(), None, None)
        }
    };
    let in_own_namespace = confinement.as_ref().is_some_and(|report| report.user_namespace);
    let members = if cgroup.is_none() && in_own_namespace { child.id().and_then(NamespaceMembers::of) } else { None };
    Ok(Spawned { child, confinement, cgroup, members, proxy, transparent, dns, connects })
}

/// The absolute path of the program to run. A bare command name is looked up in the
/// configured `PATH`, or the gateway's own `PATH` when none is configured (only for the
/// lookup: the variable is not passed on), skipping relative entries; any other
/// relative path is taken from the gateway's current directory. The program must be
/// absolute because the child runs in its own working directory: `exec` there would find
/// a different file than the one confinement grants (perhaps one a server wrote into
/// its own writable directory on an earlier run).
///
/// # Errors
///
/// A bare name not found in `PATH`, or an unknown current directory.
pub fn resolve_program(command: &Path, env: &BTreeMap<OsString, OsString>) -> Result<PathBuf, TransportError> {
    if command.is_absolute() {
        return Ok(command.to_owned());
    }
    if command.components().count() != 1 {
        let here = std::env::current_dir().map_err(|e| {
            TransportError::Config(format!("command {}: the current directory is unknown: {e}", command.display()))
        })?;
        return Ok(here.join(command));
    }
    let path = env.get(OsStr::new("PATH")).cloned().or_else(|| std::env::var_os("PATH")).unwrap_or_default();
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(command))
        .find(|candidate| candidate.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
        .ok_or_else(|| TransportError::Config(format!("command {} not found in PATH", command.display())))
}

/// Sends `signal` to the process group led by `pid`. Errors (the group is gone) are
/// ignored: every caller just wants the group to be gone.
pub(crate) fn signal_group(pid: Option<u32>, signal: Signal) {
    if let Some(pid) = pid.and_then(|pid| i32::try_from(pid).ok()).and_then(Pid::from_raw) {
        let _ = kill_process_group(pid, signal);
    }
}

/// How long each step of ending a server may take.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Graces {
    /// After stdin is closed, before `SIGTERM`.
    pub(crate) shutdown: Duration,
    /// After `SIGTERM`, before `SIGKILL`.
    pub(crate) term: Duration,
    /// After stdout closed (or the process exited), for the other half to follow.
    pub(crate) exit: Duration,
}

/// What the stdout reader reports when it stops.
pub(crate) type ReaderEnd = CloseReason;

enum Event {
    Exited(std::io::Result<ExitStatus>),
    ReaderEnded(ReaderEnd),
    Shutdown,
    Dropped,
}

/// Owns `child` until it is gone and returns how the connection ended. `shutdown`
/// carries `()` for a graceful close; its sender being dropped means the transport was
/// dropped, and the group is killed at once.
pub(crate) async fn supervise(
    mut child: Child,
    mut reader_end: oneshot::Receiver<ReaderEnd>,
    mut shutdown: oneshot::Receiver<()>,
    graces: Graces,
    cgroup: Option<PidsCgroup>,
    members: Option<NamespaceMembers>,
) -> CloseReason {
    let pid = child.id();
    let event = tokio::select! {
        status = child.wait() => Event::Exited(status),
        end = &mut reader_end => Event::ReaderEnded(end.unwrap_or(CloseReason::StreamEnded)),
        request = &mut shutdown => if request.is_ok() { Event::Shutdown } else { Event::Dropped },
    };
    let reason = match event {
        Event::Exited(status) => {
            // Let the reader deliver what the server wrote before it exited.
            if timeout(graces.exit, &mut reader_end).await.is_err() {
                // A helper process still holds stdout open; the server itself is gone.
                signal_group(pid, Signal::KILL);
            }
            exited(status)
        }
        Event::ReaderEnded(end) => match timeout(graces.exit, child.wait()).await {
            Ok(status) if !matches!(end, CloseReason::Framing(_)) => exited(status),
            _ => {
                // Closed stdout (or broke framing) but still running: not a usable server.
                signal_group(pid, Signal::KILL);
                let _ = child.wait().await;
                end
            }
        },
        Event::Shutdown => exited(stop(&mut child, pid, graces).await),
        Event::Dropped => {
            signal_group(pid, Signal::KILL);
            exited(child.wait().await)
        }
    };
    signal_group(pid, Signal::KILL);
    drop(cgroup);
    drop(members);
    reason
}

/// The shutdown ladder; stdin has already been closed by the caller.
async fn stop(child: &mut Child, pid: Option<u32>, graces: Graces) -> std::io::Result<ExitStatus> {
    if let Ok(status) = timeout(graces.shutdown, child.wait()).await {
        return status;
    }
    signal_group(pid, Signal::TERM);
    if let Ok(status) = timeout(graces.term, child.wait()).await {
        return status;
    }
    signal_group(pid, Signal::KILL);
    let _ = child.start_kill();
    child.wait().await
}

fn exited(status: std::io::Result<ExitStatus>) -> CloseReason {
    match status {
        Ok(status) => CloseReason::Exited { code: status.code(), signal: status.signal() },
        Err(e) => CloseReason::Io(format!("waiting for the server process: {e}")),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_program_is_always_an_absolute_path() {
        let here = std::env::current_dir().unwrap();
        let none = BTreeMap::new();
        assert_eq!(resolve_program(Path::new("./server"), &none).unwrap(), here.join("./server"));
        assert_eq!(resolve_program(Path::new("bin/server"), &none).unwrap(), here.join("bin/server"));
        assert_eq!(resolve_program(Path::new("/usr/bin/env"), &none).unwrap(), Path::new("/usr/bin/env"));
        // A relative `PATH` entry would be looked up from the child's own directory.
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("tool");
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&program, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let relative = pathdiff(dir.path(), &here);
        let env = |path: OsString| BTreeMap::from([(OsString::from("PATH"), path)]);
        assert!(resolve_program(Path::new("tool"), &env(relative.into_os_string())).is_err());
        assert_eq!(resolve_program(Path::new("tool"), &env(dir.path().as_os_str().to_owned())).unwrap(), program);
    }

    /// `to` relative to `from` (both absolute), with `..` as needed.
    fn pathdiff(to: &Path, from: &Path) -> PathBuf {
        let ups = from.components().count() - 1;
        let mut relative: PathBuf = std::iter::repeat_n("..", ups).collect();
        relative.push(to.strip_prefix("/").unwrap());
        relative
    }
}
