//! A cluster of gateways on loopback: a Redis store (Debian's `redis-server`) on a Unix
//! socket, replicas of `wasmgate serve --http` sharing it and one approval key, and nginx
//! (Debian's) in front, run with the repository's `deploy/nginx/wasmgate.conf`.
//! `scripts/install-peers.sh` installs both servers. Everything is stopped when dropped.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::Read as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use wasmgate_testing::{Issuer, Killed};

use super::{serve_http_at, setup, stderr, wasmgate};

/// Where nginx listens, as `deploy/nginx/wasmgate.conf` says.
pub const FRONT: &str = "127.0.0.1:7310";

/// Where replica `i` (0-based; named `r{i+1}`) listens, as the nginx file says.
pub fn replica_addr(i: usize) -> String {
    format!("127.0.0.1:{}", 7311 + i)
}

/// The secret every replica signs request states with.
pub fn approval_key(dir: &Path) -> PathBuf {
    let path = dir.join("approval.key");
    let mut key = [0u8; 32];
    std::fs::File::open("/dev/urandom").unwrap().read_exact(&mut key).unwrap();
    std::fs::write(&path, key).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

/// One replica: its own configuration, state and audit log; running or not.
pub struct Replica {
    pub name: String,
    /// Where it is told to listen: the nginx file's port, or any (`127.0.0.1:0`).
    pub addr: String,
    /// Where it listens, once started.
    url: Option<String>,
    pub dir: tempfile::TempDir,
    pub child: Option<Killed>,
}

impl Replica {
    /// Replica `i` of a cluster on `store`, signing with `key`, taking `issuer`'s tokens,
    /// with `policy_extra` added to the test suite's policy; reviewed, not started. It
    /// listens where nginx expects replica `i`; [`Replica::anywhere`] makes it listen on
    /// any port instead.
    pub fn new(i: usize, store: &str, key: &Path, issuer: &Issuer, affinity: bool, policy_extra: &str) -> Self {
        let name = format!("r{}", i + 1);
        let dir = setup();
        let config = dir.path().join("wasmgate.toml");
        let text = std::fs::read_to_string(&config).unwrap();
        let cluster = format!(
            "\n[cluster]\nreplica = {name:?}\nstore = {store:?}\napproval_key_file = {key:?}\naffinity = {affinity}\n\
             anchor_interval_ms = 200\n\n[serve]\ntrusted_proxies = [\"127.0.0.1/32\"]\n"
        );
        std::fs::write(&config, format!("{text}{}{cluster}", issuer.serve_oauth())).unwrap();
        let policy = dir.path().join("policy.toml");
        let rules = std::fs::read_to_string(&policy).unwrap();
        std::fs::write(&policy, format!("{rules}{policy_extra}")).unwrap();
        let review = wasmgate(dir.path(), &["review", "--yes"]);
        assert!(review.status.success(), "{}", stderr(&review));
        Self { name, addr: replica_addr(i), url: None, dir, child: None }
    }

    /// It listens on any free port (a test without nginx, beside others).
    pub fn anywhere(self) -> Self {
        Self { addr: "127.0.0.1:0".into(), ..self }
    }

    /// Starts it and waits until it serves.
    pub fn start(&mut self) {
        let (child, url) = serve_http_at(self.dir.path(), &self.addr, &["--per-client-requests", "1024"], &[]);
        self.url = Some(url);
        self.child = Some(child);
    }

    /// Kills it at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill();
        }
    }

    /// Stops it as an operator would (SIGTERM), and waits: its last records are written
    /// and anchored.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pid = child.0.id().to_string();
            let _ = Command::new("kill").args(["-TERM", &pid]).status();
            let _ = child.0.wait();
        }
    }

    pub fn audit_log(&self) -> PathBuf {
        self.dir.path().join("state").join("audit.jsonl")
    }

    /// Its MCP endpoint, once started.
    pub fn url(&self) -> String {
        self.url.clone().expect("started")
    }

    /// Its `/readyz`, once started.
    pub fn readyz(&self) -> String {
        self.url().replace("/mcp", "/readyz")
    }
}

/// nginx with the repository's file, for the first `replicas` replicas; stopped (with its
/// workers) when dropped.
pub struct Nginx {
    child: Child,
    dir: tempfile::TempDir,
}

impl Nginx {
    pub fn start(replicas: usize) -> Self {
        // Its port is the file's: a server left there would answer in its place.
        if let Err(e) = std::net::TcpListener::bind(FRONT) {
            panic!("{FRONT} is taken ({e}): is an nginx of an interrupted run still there? (`pkill -f 'nginx: '`)");
        }
        let dir = tempfile::tempdir().unwrap();
        // Its workers run as nobody when it is started as root: they must reach here.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/nginx/wasmgate.conf");
        let file = std::fs::read_to_string(repo).unwrap();
        let left_out: Vec<String> = (replicas + 1..=3).map(|k| format!("# replica r{k}")).collect();
        let kept: String = file
            .lines()
            .filter(|line| !left_out.iter().any(|mark| line.trim_end().ends_with(mark.as_str())))
            .map(|line| format!("{line}\n"))
            .collect();
        let d = dir.path().display();
        std::fs::write(dir.path().join("wasmgate.conf"), kept).unwrap();
        let main = format!(
            "worker_processes 1;\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/error.log warn;\n\
             events {{ worker_connections 4096; }}\nhttp {{\n    access_log off;\n    \
             client_body_temp_path {d}/body;\n    proxy_temp_path {d}/proxy;\n    fastcgi_temp_path {d}/fastcgi;\n    \
             uwsgi_temp_path {d}/uwsgi;\n    scgi_temp_path {d}/scgi;\n    include {d}/wasmgate.conf;\n}}\n"
        );
        std::fs::write(dir.path().join("nginx.conf"), main).unwrap();
        let binary = if Path::new("/usr/sbin/nginx").exists() { "/usr/sbin/nginx" } else { "nginx" };
        let child = Command::new(binary)
            .arg("-p")
            .arg(dir.path())
            .arg("-e")
            .arg(dir.path().join("error.log"))
            .arg("-c")
            .arg(dir.path().join("nginx.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("nginx is not installed: run scripts/install-peers.sh");
        let mut nginx = Self { child, dir };
        let began = Instant::now();
        while std::net::TcpStream::connect(FRONT).is_err() {
            if let Ok(Some(status)) = nginx.child.try_wait() {
                panic!("nginx exited ({status}): {}", nginx.errors());
            }
            assert!(began.elapsed() < Duration::from_secs(10), "nginx did not listen on {FRONT}: {}", nginx.errors());
            std::thread::sleep(Duration::from_millis(20));
        }
        nginx
    }

    /// What nginx logged.
    pub fn errors(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }

    pub fn url() -> String {
        format!("http://{FRONT}/mcp")
    }
}

impl Drop for Nginx {
    /// SIGTERM: the master stops its workers before it exits (SIGKILL would leave them,
    /// still listening).
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let began = Instant::now();
        while matches!(self.child.try_wait(), Ok(None)) && began.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The records of an audit log.
pub fn records(log: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}
