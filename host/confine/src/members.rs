//! Finding a server's processes by its user namespace, where it has no cgroup.
//!
//! A server in a user namespace of its own cannot leave it (`setns` and `unshare` are
//! refused by the seccomp filter), and neither can anything it starts, so the namespace
//! names every process of the server, including children that left its process group
//! with `setsid`. Without a cgroup to list them, the gateway finds them in `/proc` by
//! the namespace's inode and kills them when the server ends.

use std::os::unix::fs::MetadataExt as _;

use rustix::process::{Pid, Signal, kill_process};

/// The processes of one server's user namespace; dropping it kills them.
#[derive(Debug)]
pub struct NamespaceMembers {
    /// The inode of the namespace (`/proc/<pid>/ns/user`).
    inode: u64,
}

impl NamespaceMembers {
    /// The user namespace of process `pid`, if it is not the gateway's own.
    #[must_use]
    pub fn of(pid: u32) -> Option<Self> {
        let inode = namespace(&format!("/proc/{pid}/ns/user"))?;
        // Built only once known to be another namespace: dropping one kills its members.
        is_foreign(inode).then(|| Self { inode })
    }

    /// Sends `SIGKILL` to every process in the namespace, a few passes over `/proc`
    /// so that one forked during a pass is found in the next.
    pub fn kill_all(&self) {
        // Never the gateway's own namespace, whatever happened since: that would be
        // every process of the machine the gateway may signal.
        if !is_foreign(self.inode) {
            return;
        }
        for _ in 0..3 {
            let members = self.members();
            if members.is_empty() {
                return;
            }
            for pid in members {
                let _ = kill_process(pid, Signal::KILL);
            }
        }
    }

    fn members(&self) -> Vec<Pid> {
        let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
        entries
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| namespace(&format!("/proc/{pid}/ns/user")) == Some(self.inode))
            .filter_map(Pid::from_raw)
            .collect()
    }
}

impl Drop for NamespaceMembers {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// Whether `inode` is a user namespace other than the gateway's own (known for sure).
fn is_foreign(inode: u64) -> bool {
    namespace("/proc/self/ns/user").is_some_and(|own| own != inode)
}

fn namespace(path: &str) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.ino())
}

#[cfg(test)]
mod tests {
    use super::NamespaceMembers;

    #[test]
    fn the_gateways_own_namespace_is_never_taken_for_a_servers() {
        assert!(NamespaceMembers::of(std::process::id()).is_none(), "killing it would kill the gateway");
        assert!(NamespaceMembers::of(u32::MAX).is_none(), "no such process");
        // Even one made by hand for the gateway's own namespace kills nothing.
        let own = super::namespace("/proc/self/ns/user").unwrap_or(0);
        drop(NamespaceMembers { inode: own });
    }

    #[test]
    fn every_process_of_a_servers_namespace_is_killed() {
        // A process in a user namespace of its own, with a child that left its process
        // group: both found by the namespace, both killed.
        let Ok(mut leader) = std::process::Command::new("unshare")
            .args(["--user", "sh", "-c", "setsid sleep 600 & exec sleep 600"])
            .spawn()
        else {
            panic!("unshare(1) is needed");
        };
        let pid = leader.id();
        let members = (0..100).find_map(|_| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            NamespaceMembers::of(pid).filter(|m| m.members().len() == 2)
        });
        let members = members.unwrap_or_else(|| panic!("no user namespace of its own for {pid}"));
        let found = members.members();
        drop(members);
        assert!(leader.wait().is_ok_and(|status| !status.success()), "the leader was killed");
        for pid in found {
            let gone = (0..100).any(|_| {
                std::thread::sleep(std::time::Duration::from_millis(20));
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .map_or(true, |s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')))
            });
            assert!(gone, "{pid} survived");
        }
    }
}
