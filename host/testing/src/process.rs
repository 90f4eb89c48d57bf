//! Child processes of a test: killed when the test ends, whatever happens, and looked at
//! through `/proc`.

use std::process::Child;

/// A child killed (SIGKILL) and reaped when dropped, so a failed assertion leaves no
/// process behind.
#[derive(Debug)]
pub struct Killed(pub Child);

impl Killed {
    /// Kills and reaps it now.
    pub fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Killed {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The process ids of `pid`'s children (the servers a gateway started, say).
#[must_use]
pub fn children(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return found };
    for task in tasks.filter_map(Result::ok) {
        let text = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        found.extend(text.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
    }
    found
}

/// Whether process `pid` exists and is not a zombie.
#[must_use]
pub fn is_running(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    // The state follows the command name, which is in parentheses and may hold spaces.
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
    !matches!(state, None | Some("Z" | "X"))
}
