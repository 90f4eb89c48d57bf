//! Running test servers confined: what a Python interpreter needs granted beyond the
//! default system paths. A pyenv interpreter lives under `$HOME` and a virtual
//! environment anywhere, so the tests grant the interpreter's `sys.prefix` and
//! `sys.base_prefix` explicitly (both are `/usr` for a distribution's Python, which the
//! defaults already cover). Nothing is derived from the command path by the gateway.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use wasmgate_client::Confinement;

/// The real interpreter behind `python3` (a shim such as pyenv's needs variables the
/// server is not given).
pub fn python() -> PathBuf {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 is needed for the stdio transport tests");
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// `sys.prefix` and `sys.base_prefix` of `python`, canonical.
pub fn python_dirs(python: &Path) -> Vec<PathBuf> {
    let out = std::process::Command::new(python)
        .args(["-c", "import sys; print(sys.prefix); print(sys.base_prefix)"])
        .output()
        .expect("run the interpreter");
    String::from_utf8(out.stdout).unwrap().lines().map(|line| Path::new(line).canonicalize().unwrap()).collect()
}

/// The default confinement, plus read and execute on `python`'s installation and
/// read on `scripts` (the directory of the server's script).
pub fn for_python(python: &Path, scripts: &Path) -> Confinement {
    python_dirs(python).into_iter().fold(Confinement::default(), Confinement::read_exec).read_only(scripts)
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A hostile server (tests/fixtures/hostile_server.py) running confined as provider
/// `hostile`, next to another provider's directory and a fake home with a key in it.
pub struct Hostile {
    pub client: wasmgate_client::McpClient,
    pub report: Option<wasmgate_client::ConfinementReport>,
    /// The gateway's state directory: `providers/hostile`, `providers/other`, `home`.
    pub state: tempfile::TempDir,
}

impl Hostile {
    pub fn workdir(&self) -> PathBuf {
        self.state.path().join("providers/hostile")
    }

    pub fn other(&self) -> PathBuf {
        self.state.path().join("providers/other")
    }

    pub fn home_key(&self) -> PathBuf {
        self.state.path().join("home/.ssh/id_ed25519")
    }

    /// Runs attack `tool`: whether it got through, and what it said.
    pub async fn attack(&self, tool: &str, args: serde_json::Value) -> (bool, String, Vec<i32>) {
        let text = self.call(tool, args).await.expect("the attack tool answers");
        let answer: serde_json::Value = serde_json::from_str(&text).unwrap();
        let pids = answer["pids"].as_array().into_iter().flatten().filter_map(|p| p.as_i64()).map(|p| p as i32);
        (answer["ok"].as_bool().unwrap(), answer["detail"].as_str().unwrap().to_owned(), pids.collect())
    }

    /// The ordinary tool still answers.
    pub async fn assert_still_serving(&self) {
        let echo = self.call("echo", serde_json::json!({"text": "still here"})).await.unwrap();
        assert_eq!(echo, "still here");
    }

    pub async fn call(&self, tool: &str, args: serde_json::Value) -> Result<String, wasmgate_client::ClientError> {
        let args = args.as_object().cloned().unwrap_or_default();
        let call = self.client.call_tool(tool, args, wasmgate_client::CancellationToken::new());
        let result = tokio::time::timeout(std::time::Duration::from_secs(60), call).await.expect("a bounded call")?;
        Ok(result.content.first().and_then(wasmgate_protocol::ContentBlock::text).unwrap_or_default().to_owned())
    }
}

/// Starts the hostile server under `confinement` (applied on top of what Python needs).
pub async fn hostile(confine: impl FnOnce(Confinement) -> Confinement) -> Hostile {
    let state = tempfile::tempdir().unwrap();
    let workdir = wasmgate_client::confine::provider_workdir(state.path(), "hostile").unwrap();
    let other = wasmgate_client::confine::provider_workdir(state.path(), "other").unwrap();
    std::fs::write(other.join("secret.txt"), "the other provider's data").unwrap();
    std::fs::write(workdir.join("mine.txt"), "my own data").unwrap();
    let ssh = state.path().join("home/.ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----").unwrap();
    let config = wasmgate_client::StdioConfig::new("hostile", python(), &workdir)
        .arg(fixtures().join("hostile_server.py"))
        .env("HOME", state.path().join("home"))
        .confinement(Some(confine(for_python(&python(), &fixtures()))));
    let transport = wasmgate_client::StdioTransport::spawn(&config).expect("spawn");
    let report = transport.confinement().cloned();
    let client = wasmgate_client::McpClient::connect("hostile", transport, wasmgate_client::ClientConfig::default())
        .await
        .expect("connect");
    Hostile { client, report, state }
}

/// Waits (bounded) until process `pid` is gone or a zombie.
pub async fn gone(pid: i32) -> bool {
    for _ in 0..200 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"));
        if stat.map_or(true, |s| s.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z'))) {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}
