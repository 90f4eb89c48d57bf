//! A `pids` cgroup per server, where one is there for the taking.
//!
//! `RLIMIT_NPROC` does not bind root, so a gateway running as root (a container) would
//! have nothing bounding a fork bomb. Where the cgroup v1 `pids` controller is mounted
//! and the gateway may create a group under its own, each server gets one: `pids.max`
//! bounds its tasks, and `cgroup.procs` lists every process it started, including ones
//! that left its process group with `setsid`, so [`PidsCgroup::kill_all`] ends them too.
//! cgroup v2 is not used: its "no internal processes" rule means enabling a controller
//! under the gateway's own group needs delegation the gateway usually does not have.
//! Nothing here is required; without a cgroup the report says what bounds forks instead.

use std::fs;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use rustix::fs::{Mode, OFlags, open};
use rustix::process::{Pid, Signal, kill_process};

/// A cgroup of one server's processes; removed (once empty) when dropped.
#[derive(Debug)]
pub struct PidsCgroup {
    dir: PathBuf,
}

impl PidsCgroup {
    /// Creates a group limited to `max` tasks and opens its `cgroup.procs` for the
    /// child to join. `None` where the controller is missing or not writable.
    pub(crate) fn create(max: u64) -> Option<(Self, OwnedFd)> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let parent = own_pids_group()?;
        sweep(&parent);
        let name = format!("wasmgate-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let dir = parent.join(name);
        fs::create_dir(&dir).ok()?;
        let group = Self { dir };
        fs::write(group.dir.join("pids.max"), max.to_string()).ok()?;
        let procs = open(group.dir.join("cgroup.procs"), OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty()).ok()?;
        Some((group, procs))
    }

    /// Sends `SIGKILL` to every process in the group, wherever its process group is.
    pub fn kill_all(&self) {
        for pid in members(&self.dir) {
            let _ = kill_process(pid, Signal::KILL);
        }
    }
}

impl Drop for PidsCgroup {
    fn drop(&mut self) {
        self.kill_all();
        // Fails while killed processes are still being torn down; `sweep` retries later.
        if fs::remove_dir(&self.dir).is_err() {
            LEFT_BEHIND.lock().unwrap_or_else(PoisonError::into_inner).push(self.dir.clone());
        }
    }
}

/// Groups of this process whose removal failed when they were dropped.
static LEFT_BEHIND: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn members(dir: &Path) -> Vec<Pid> {
    let text = fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
    text.lines().filter_map(|line| line.trim().parse::<i32>().ok()).filter_map(Pid::from_raw).collect()
}

/// Removes empty groups that earlier servers left behind: this process's own that could
/// not be removed when dropped, and those of gateways that have exited. An empty group
/// of a live gateway may be one it has just made, its server not yet in it, so it stays.
fn sweep(parent: &Path) {
    LEFT_BEHIND
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .retain(|dir| fs::remove_dir(dir).is_err() && dir.exists());
    let Ok(entries) = fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(maker) = name.to_str().and_then(|n| n.strip_prefix("wasmgate-")?.split('-').next()) else { continue };
        let path = entry.path();
        if !Path::new("/proc").join(maker).exists() && members(&path).is_empty() {
            let _ = fs::remove_dir(&path);
        }
    }
}

/// The directory of the gateway's own group in a mounted v1 `pids` hierarchy.
fn own_pids_group() -> Option<PathBuf> {
    let mounts = fs::read_to_string("/proc/self/mounts").ok()?;
    let mount = mounts.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let is_pids = fields.get(2) == Some(&"cgroup") && fields.get(3)?.split(',').any(|o| o == "pids");
        is_pids.then(|| PathBuf::from(fields[1]))
    })?;
    let groups = fs::read_to_string("/proc/self/cgroup").ok()?;
    let own = groups.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers.split(',').any(|c| c == "pids").then(|| path.trim_start_matches('/').to_owned())
    })?;
    Some(mount.join(own))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::sweep;

    #[test]
    fn a_sweep_removes_only_the_empty_groups_of_gateways_that_have_exited() {
        // A plain directory stands in for the `pids` hierarchy: a group is a directory,
        // and one without a `cgroup.procs` listing has no members.
        let parent = tempfile::tempdir().unwrap();
        let mut exited = std::process::Command::new("true").spawn().unwrap();
        let dead = exited.id();
        exited.wait().unwrap();
        let live = std::process::id();
        let group = |name: String| {
            let dir = parent.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            dir
        };
        let just_made = group(format!("wasmgate-{live}-7"));
        let left_behind = group(format!("wasmgate-{dead}-0"));
        let still_running = group(format!("wasmgate-{dead}-1"));
        std::fs::write(still_running.join("cgroup.procs"), format!("{live}\n")).unwrap();
        let not_ours = group("system.slice".into());
        sweep(parent.path());
        assert!(just_made.is_dir(), "a live gateway's empty group may be about to be joined");
        assert!(!left_behind.exists(), "an exited gateway's empty group is removed");
        assert!(still_running.is_dir(), "a group with a process in it stays");
        assert!(not_ours.is_dir());
    }
}
