//! A Redis server of a test's own: Debian's `redis-server` (which
//! `scripts/install-peers.sh` installs), on a Unix socket in a directory of its own, with
//! no TCP port: nothing another test runs can reach it, and nothing of it outlives the
//! test.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A Redis server on a Unix socket; stopped when dropped.
pub struct Redis {
    child: Option<Child>,
    /// Its socket.
    pub socket: PathBuf,
    dir: tempfile::TempDir,
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redis").finish_non_exhaustive()
    }
}

impl Redis {
    /// Starts one and waits for its socket.
    #[must_use]
    pub fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("redis.sock");
        let mut redis = Self { child: None, socket, dir };
        redis.restart();
        redis
    }

    /// Starts it (again) with what it kept (every write is on disk before it is
    /// answered, so a test can tell what reached it), and waits for its socket.
    pub fn restart(&mut self) {
        self.stop();
        let mut child = Command::new("redis-server")
            .args(["--port", "0", "--save", "", "--appendonly", "yes", "--appendfsync", "always"])
            .args(["--unixsocketperm", "700"])
            .arg("--unixsocket")
            .arg(&self.socket)
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server is not installed: run scripts/install-peers.sh");
        let began = Instant::now();
        while !self.socket.exists() {
            if began.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("redis-server did not open {}", self.socket.display());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.child = Some(child);
    }

    /// Starts it again without what it kept, as a store without persistence would come
    /// back.
    pub fn restart_empty(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(self.dir.path().join("appendonlydir"));
        self.restart();
    }

    /// Stops it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_file(&self.socket);
    }

    /// Its URL.
    #[must_use]
    pub fn url(&self) -> String {
        format!("redis+unix://{}", self.socket.display())
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}
