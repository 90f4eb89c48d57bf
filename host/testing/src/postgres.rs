//! A PostgreSQL server of the test's own on a loopback TCP port, from the machine's
//! PostgreSQL (Debian's `postgresql` package, installed by scripts/install-peers.sh): a
//! fresh cluster in a temporary directory, run as the `postgres` user when the tests run
//! as root (PostgreSQL refuses root), killed and removed when dropped.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The role the cluster is made for; it needs no password on loopback (`trust`).
pub const POSTGRES_USER: &str = "wasmgate";

/// A PostgreSQL server on `127.0.0.1:port`; stopped and removed when dropped.
pub struct Postgres {
    child: Option<Child>,
    /// Its TCP port on 127.0.0.1.
    pub port: u16,
    bin: PathBuf,
    owner: Option<(u32, u32)>,
    dir: tempfile::TempDir,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres").field("port", &self.port).finish_non_exhaustive()
    }
}

impl Postgres {
    /// Whether the machine has PostgreSQL's programs.
    #[must_use]
    pub fn installed() -> bool {
        bin_dir().is_some()
    }

    /// Makes a cluster and starts it on a free loopback port; waits until it answers.
    ///
    /// # Panics
    ///
    /// When PostgreSQL is not installed, or does not start within 30 s.
    #[must_use]
    pub fn start() -> Self {
        let bin = bin_dir().expect("PostgreSQL is not installed (initdb, postgres): run scripts/install-peers.sh");
        let dir = tempfile::Builder::new().prefix("wasmgate-postgres-").tempdir().unwrap();
        // PostgreSQL refuses to run as root: then the cluster is its own user's.
        let owner = is_root().then(|| user_ids("postgres").expect("no `postgres` user to run PostgreSQL as"));
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).unwrap();
        }
        let mut server = Self { child: None, port: 0, bin, owner, dir };
        let data = server.dir.path().join("data");
        let made = server
            .command("initdb")
            .arg("-D")
            .arg(&data)
            .args(["-U", POSTGRES_USER, "--auth=trust", "--no-sync", "-E", "UTF8"])
            .output()
            .unwrap();
        assert!(made.status.success(), "initdb: {}", String::from_utf8_lossy(&made.stderr));
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let log = std::fs::File::create(server.dir.path().join("postgres.log")).unwrap();
            let child = server
                .command("postgres")
                .arg("-D")
                .arg(&data)
                .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
                .arg("-k")
                .arg(server.dir.path())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .unwrap();
            server.child = Some(child);
            server.port = port;
            if server.wait_ready() {
                return server;
            }
            // Another process took the port first: again, on another.
            server.stop();
        }
        let log = std::fs::read_to_string(server.dir.path().join("postgres.log")).unwrap_or_default();
        panic!("PostgreSQL did not start: {log}");
    }

    /// `postgresql://wasmgate@127.0.0.1:PORT/postgres`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("postgresql://{POSTGRES_USER}@127.0.0.1:{}/postgres", self.port)
    }

    /// Runs `sql` with `psql` over TCP; its output, one row a line.
    ///
    /// # Panics
    ///
    /// When `psql` fails.
    #[must_use]
    pub fn psql(&self, sql: &str) -> String {
        let out = self.psql_output(sql);
        assert!(out.status.success(), "psql: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn psql_output(&self, sql: &str) -> Output {
        self.command("psql")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", POSTGRES_USER, "-d", "postgres"])
            .args(["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .output()
            .unwrap()
    }

    /// Waits until it answers a query (30 s), or its process ends.
    fn wait_ready(&mut self) -> bool {
        let began = Instant::now();
        while began.elapsed() < Duration::from_secs(30) {
            if self.child.as_mut().is_some_and(|c| c.try_wait().ok().flatten().is_some()) {
                return false;
            }
            if self.psql_output("SELECT 1").status.success() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }

    /// A command of PostgreSQL's, run as the cluster's owner.
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(self.bin.join(program));
        command.current_dir(self.dir.path()).env("LC_ALL", "C").env_remove("PGPASSWORD");
        if let Some((uid, gid)) = self.owner {
            command.uid(uid).gid(gid);
        }
        command
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The directory of `initdb` and `postgres`: Debian keeps them out of `PATH`.
fn bin_dir() -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|entries| entries.flatten().map(|e| e.path().join("bin")).filter(|b| b.join("initdb").exists()).collect())
        .unwrap_or_default();
    versions.sort_by_key(|dir| {
        dir.parent().and_then(Path::file_name).and_then(|v| v.to_str()).and_then(|v| v.parse::<u32>().ok())
    });
    versions.pop().or_else(|| {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path).find(|dir| dir.join("initdb").exists() && dir.join("postgres").exists())
    })
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

/// The uid and gid of `user`, from `/etc/passwd`.
fn user_ids(user: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.first() == Some(&user) && fields.len() > 3)
            .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))?
    })
}
