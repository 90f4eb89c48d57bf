//! A `pids` cgroup per server, where one is there for the taking.
//!
//! `RLIMIT_NPROC` does not bind root, and outside a user namespace of the server's own it
//! counts every process of the user, so a server needs a cgroup to be bounded on its
//! own. Each server gets one where the gateway may create a group under its own:
//! `pids.max` bounds its tasks, and `cgroup.procs` lists every process it started,
//! including ones that left its process group with `setsid`, so
//! [`PidsCgroup::kill_all`] ends them too. Two places qualify:
//!
//! * the gateway's group in a cgroup v1 `pids` hierarchy, where it may write (root, or a
//!   group chowned to its user);
//! * its group in the cgroup v2 hierarchy, when that group is delegated to it (systemd's
//!   `Delegate=yes`, for example `systemd-run --user --scope -p Delegate=yes wasmgate ...`)
//!   and offers the `pids` controller. v2 lets a group either hold processes or hand
//!   controllers to its children, not both, so the gateway first moves itself into a
//!   leaf group `wasmgate` of its own group, then enables `pids` for the children.
//!
//! Whether a server must have a bound is the policy's to say (`child` refuses to start it
//! under `Required` otherwise); here, a group is made where possible.

use std::fs;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

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
        let v1 = own_pids_group().and_then(|parent| Self::create_in(&parent, max));
        v1.or_else(|| Self::create_in(delegated_v2()?, max))
    }

    fn create_in(parent: &Path, max: u64) -> Option<(Self, OwnedFd)> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        sweep(parent);
        // The maker's pid and start time: what `sweep` needs to prove the maker gone.
        let pid = std::process::id();
        let started = start_time(pid)?;
        let name = format!("wasmgate-{pid}-{started}-{}", NEXT.fetch_add(1, Ordering::Relaxed));
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
/// not be removed when dropped, and those of gateways that have exited. A group is
/// another's to remove only when its name proves its maker gone: `wasmgate-PID-START-N`,
/// where no process `PID` runs now, or the one that does started at another time (the
/// pid was reused). A name in any other form (a test's, an older gateway's) is never
/// touched, nor is a group with a process in it: an empty group of a live gateway may be
/// one it has just made, its server not yet in it.
fn sweep(parent: &Path) {
    LEFT_BEHIND
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .retain(|dir| fs::remove_dir(dir).is_err() && dir.exists());
    let Ok(entries) = fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, started)) = name.to_str().and_then(maker) else { continue };
        let path = entry.path();
        if start_time(pid) != Some(started) && members(&path).is_empty() {
            let _ = fs::remove_dir(&path);
        }
    }
}

/// The maker's pid and start time in a group name `wasmgate-PID-START-N`.
fn maker(name: &str) -> Option<(u32, u64)> {
    let mut parts = name.strip_prefix("wasmgate-")?.split('-');
    let (pid, started, sequence) = (parts.next()?, parts.next()?, parts.next()?);
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    if parts.next().is_some() || !digits(pid) || !digits(started) || !digits(sequence) {
        return None;
    }
    Some((pid.parse().ok()?, started.parse().ok()?))
}

/// When process `pid` started (field 22 of `/proc/PID/stat`, in clock ticks since boot),
/// or `None` when no such process runs.
fn start_time(pid: u32) -> Option<u64> {
    start_time_in(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Field 22 of a `/proc/PID/stat` text. The command name (field 2) is in parentheses
/// and may hold anything, spaces and `)` included: the fields are counted after its
/// last `)`, the first of them being field 3.
fn start_time_in(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(19)?.parse().ok()
}

/// The gateway's own groups: in the v1 `pids` hierarchy and in the v2 hierarchy, where
/// each is mounted (for `wasmgate doctor`).
#[must_use]
pub fn own_cgroups() -> (Option<PathBuf>, Option<PathBuf>) {
    let (Ok(mounts), Ok(groups)) = (fs::read_to_string("/proc/self/mounts"), fs::read_to_string("/proc/self/cgroup"))
    else {
        return (None, None);
    };
    (own_group(&mounts, &groups, true), own_group(&mounts, &groups, false))
}

/// The directory of the gateway's own group in a mounted v1 `pids` hierarchy.
fn own_pids_group() -> Option<PathBuf> {
    own_group(&fs::read_to_string("/proc/self/mounts").ok()?, &fs::read_to_string("/proc/self/cgroup").ok()?, true)
}

/// The gateway's own group: in the v1 hierarchy with the `pids` controller (`v1`), or in
/// the v2 hierarchy, from the text of `/proc/self/mounts` and `/proc/self/cgroup`.
fn own_group(mounts: &str, groups: &str, v1: bool) -> Option<PathBuf> {
    let mount = mounts.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let wanted = if v1 {
            fields.get(2) == Some(&"cgroup") && fields.get(3)?.split(',').any(|o| o == "pids")
        } else {
            fields.get(2) == Some(&"cgroup2")
        };
        wanted.then(|| PathBuf::from(fields[1]))
    })?;
    let own = groups.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let wanted = if v1 { controllers.split(',').any(|c| c == "pids") } else { id == "0" && controllers.is_empty() };
        wanted.then(|| path.trim_start_matches('/').to_owned())
    })?;
    // A path that climbs (a group outside this cgroup namespace) is no place to write.
    if own.split('/').any(|part| part == "..") {
        return None;
    }
    Some(mount.join(own))
}

/// The gateway's v2 group, made ready to hold server groups (once per process), if it
/// is delegated to the gateway.
fn delegated_v2() -> Option<&'static Path> {
    static PREPARED: OnceLock<Option<PathBuf>> = OnceLock::new();
    PREPARED
        .get_or_init(|| {
            let mounts = fs::read_to_string("/proc/self/mounts").ok()?;
            let dir = own_group(&mounts, &fs::read_to_string("/proc/self/cgroup").ok()?, false)?;
            prepare_v2(&dir, std::process::id()).ok()?;
            Some(dir)
        })
        .as_deref()
}

/// Makes the v2 group `dir` (the gateway's, process `pid`'s) able to hold server groups
/// with the `pids` controller: moves the gateway into the leaf `dir/wasmgate`, then
/// enables `pids` for `dir`'s children. Fails where `dir` offers no `pids` controller,
/// is not writable by this user (not delegated), or holds other processes.
fn prepare_v2(dir: &Path, pid: u32) -> io::Result<()> {
    let has_pids = |file: &str| -> io::Result<bool> {
        Ok(fs::read_to_string(dir.join(file))?.split_whitespace().any(|c| c == "pids" || c == "+pids"))
    };
    if !has_pids("cgroup.controllers")? {
        return Err(io::Error::new(io::ErrorKind::Unsupported, "no pids controller in the gateway's cgroup"));
    }
    if has_pids("cgroup.subtree_control")? {
        return Ok(());
    }
    let leaf = dir.join("wasmgate");
    match fs::create_dir(&leaf) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    fs::write(leaf.join("cgroup.procs"), pid.to_string())?;
    fs::write(dir.join("cgroup.subtree_control"), "+pids")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::{maker, own_group, prepare_v2, start_time, start_time_in, sweep};

    #[test]
    fn a_sweep_removes_only_the_empty_groups_whose_maker_is_proved_gone() {
        // A plain directory stands in for the `pids` hierarchy: a group is a directory,
        // and one without a `cgroup.procs` listing has no members.
        let parent = tempfile::tempdir().unwrap();
        let mut exited = std::process::Command::new("true").spawn().unwrap();
        let dead = exited.id();
        exited.wait().unwrap();
        let live = std::process::id();
        let started = start_time(live).unwrap();
        let group = |name: String| {
            let dir = parent.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            dir
        };
        let just_made = group(format!("wasmgate-{live}-{started}-7"));
        let left_behind = group(format!("wasmgate-{dead}-{started}-0"));
        let pid_reused = group(format!("wasmgate-{live}-{}-0", started + 1));
        let still_running = group(format!("wasmgate-{dead}-{started}-1"));
        std::fs::write(still_running.join("cgroup.procs"), format!("{live}\n")).unwrap();
        // Names that prove nothing: a test's own group, and an older gateway's form.
        let a_test_group = group("wasmgate-test-4242".into());
        let older_form = group(format!("wasmgate-{dead}-0"));
        let not_ours = group("system.slice".into());
        sweep(parent.path());
        assert!(just_made.is_dir(), "a live gateway's empty group may be about to be joined");
        assert!(!left_behind.exists(), "an exited gateway's empty group is removed");
        assert!(!pid_reused.exists(), "a pid now held by a process started at another time is gone too");
        assert!(still_running.is_dir(), "a group with a process in it stays");
        assert!(a_test_group.is_dir() && older_form.is_dir(), "a name that proves no maker gone stays");
        assert!(not_ours.is_dir());
    }

    #[test]
    fn a_group_name_yields_its_maker_only_in_the_one_form() {
        assert_eq!(maker("wasmgate-123-456-0"), Some((123, 456)));
        for name in ["wasmgate-test-1", "wasmgate-123-0", "wasmgate-123-456-0-1", "wasmgate--456-0", "wasmgate-1-2-x"] {
            assert_eq!(maker(name), None, "{name}");
        }
        assert_eq!(maker("wasmgate-99999999999-1-0"), None, "a pid out of range");
    }

    #[test]
    fn a_start_time_is_read_past_any_command_name() {
        let mine = start_time(std::process::id()).unwrap();
        assert!(mine > 0);
        assert_eq!(start_time(std::process::id()), Some(mine), "stable for one process");
        assert_eq!(start_time(u32::MAX), None);
        let fields = (3..=21).map(|n| n.to_string()).collect::<Vec<_>>().join(" ");
        let stat = format!("77 (a) b (c)) {fields} 9876 23 24\n");
        assert_eq!(start_time_in(&stat), Some(9876), "a name with spaces and parentheses");
        assert_eq!(start_time_in("77 (x) S 1 2"), None, "too few fields");
        assert_eq!(start_time_in("no name at all"), None);
    }

    #[test]
    fn the_own_group_is_found_in_each_hierarchy_and_never_outside_it() {
        let mounts = "cgroup /sys/fs/cgroup/pids cgroup rw,nosuid,relatime,pids 0 0\n\
                      cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nosuid 0 0\n";
        let groups = "12:pids:/user.slice/u\n1:name=systemd:/x\n0::/user.slice/user@1000.service/app.slice/w.scope\n";
        let v1 = own_group(mounts, groups, true).unwrap();
        assert_eq!(v1, std::path::Path::new("/sys/fs/cgroup/pids/user.slice/u"));
        let v2 = own_group(mounts, groups, false).unwrap();
        assert_eq!(v2, std::path::Path::new("/sys/fs/cgroup/unified/user.slice/user@1000.service/app.slice/w.scope"));
        assert_eq!(own_group("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n", "0::/\n", true), None, "no v1 pids");
        assert_eq!(own_group("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n", "0::/../../outside\n", false), None);
    }

    #[test]
    fn a_delegated_v2_group_moves_the_gateway_into_a_leaf_and_hands_pids_to_its_children() {
        // Plain files stand in for the kernel's: what matters is what is written where,
        // in which order. This machine's kernel binds `pids` to v1, so no real v2 group.
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str| dir.path().join(name);
        std::fs::write(file("cgroup.controllers"), "cpu io memory pids\n").unwrap();
        std::fs::write(file("cgroup.subtree_control"), "").unwrap();
        prepare_v2(dir.path(), 4242).unwrap();
        assert_eq!(std::fs::read_to_string(file("wasmgate/cgroup.procs")).unwrap(), "4242");
        assert_eq!(std::fs::read_to_string(file("cgroup.subtree_control")).unwrap(), "+pids");
        // Done once: a second gateway in the same group finds pids handed down already.
        std::fs::remove_file(file("wasmgate/cgroup.procs")).unwrap();
        prepare_v2(dir.path(), 4343).unwrap();
        assert!(!file("wasmgate/cgroup.procs").exists());

        let without = tempfile::tempdir().unwrap();
        std::fs::write(without.path().join("cgroup.controllers"), "cpu memory\n").unwrap();
        std::fs::write(without.path().join("cgroup.subtree_control"), "").unwrap();
        assert!(prepare_v2(without.path(), 4242).is_err(), "no pids controller offered");
        assert!(!without.path().join("wasmgate").exists(), "and the gateway was not moved");
        let undelegated = std::path::Path::new("/nonexistent/cgroup");
        assert!(prepare_v2(undelegated, 4242).is_err());
    }
}
