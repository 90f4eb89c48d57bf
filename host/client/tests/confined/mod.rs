//! Running test servers confined: what a Python interpreter needs granted beyond the
//! default system paths. A pyenv interpreter lives under `$HOME` and a virtual
//! environment anywhere, so the tests grant the interpreter's `sys.prefix` and
//! `sys.base_prefix` explicitly (both are `/usr` for a distribution's Python, which the
//! defaults already cover). Nothing is derived from the command path by the gateway.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use wasmgate_confine::Confinement;

/// The real interpreter behind `python3` (a shim such as pyenv's needs variables the
/// server is not given), or `WASMGATE_TEST_PYTHON` (one an unprivileged user may run).
pub fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("WASMGATE_TEST_PYTHON") {
        return PathBuf::from(python);
    }
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

/// The fixtures: this crate's, or `WASMGATE_TEST_FIXTURES` (a copy an unprivileged
/// user may read).
pub fn fixtures() -> PathBuf {
    std::env::var_os("WASMGATE_TEST_FIXTURES")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"), PathBuf::from)
}

/// The way this run of the suite is confined, when a test re-ran it
/// (`the_suite_holds_as_a_user_and_without_user_namespaces`): `user`, `no-userns`,
/// `user-no-userns` (with a cgroup delegated to it), `user-no-userns-no-cgroup`.
pub fn mode() -> Option<String> {
    std::env::var("WASMGATE_TEST_MODE").ok()
}

/// In a mode without user namespaces, a seccomp filter on this whole test process
/// refuses to make one (`EPERM`, as a distribution that restricts them answers), and
/// `clone3` (whose flags a filter cannot read) answers `ENOSYS` so the C library uses
/// `clone`. The servers it starts inherit the filter. Installed once, on every thread.
pub fn refuse_user_namespaces_if_asked() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    if !mode().is_some_and(|mode| mode.contains("no-userns")) {
        return;
    }
    ONCE.call_once(|| {
        use seccompiler::{
            SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
        };
        let arch = std::env::consts::ARCH.try_into().unwrap();
        let newuser = libc::CLONE_NEWUSER as u64;
        let flag = || {
            let condition = SeccompCondition::new(0, SeccompCmpArgLen::Qword, SeccompCmpOp::MaskedEq(newuser), newuser);
            vec![SeccompRule::new(vec![condition.unwrap()]).unwrap()]
        };
        let rules = [(libc::SYS_unshare, flag()), (libc::SYS_clone, flag())].into_iter().collect();
        let eperm = SeccompAction::Errno(libc::EPERM as u32);
        let refuse = SeccompFilter::new(rules, SeccompAction::Allow, eperm, arch).unwrap();
        let clone3 = [(libc::SYS_clone3, vec![])].into_iter().collect();
        let enosys = SeccompAction::Errno(libc::ENOSYS as u32);
        let fallback = SeccompFilter::new(clone3, SeccompAction::Allow, enosys, arch).unwrap();
        for filter in [fallback, refuse] {
            let program: seccompiler::BpfProgram = filter.try_into().unwrap();
            seccompiler::apply_filter_all_threads(&program).expect("install the test's own filter");
        }
    });
}

/// A hostile server (tests/fixtures/hostile_server.py) running confined as provider
/// `hostile`, next to another provider's directory and a fake home with a key in it.
pub struct Hostile {
    pub client: wasmgate_client::McpClient,
    pub report: Option<wasmgate_confine::ConfinementReport>,
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
        let call = self.client.call_tool(tool, args, wasmgate_core::CancellationToken::new());
        let result = tokio::time::timeout(std::time::Duration::from_secs(60), call).await.expect("a bounded call")?;
        Ok(result.content.first().and_then(wasmgate_protocol::ContentBlock::text).unwrap_or_default().to_owned())
    }
}

/// Starts the hostile server under `confinement` (applied on top of what Python needs).
pub async fn hostile(confine: impl FnOnce(Confinement) -> Confinement) -> Hostile {
    hostile_with(confine, None).await.expect("spawn")
}

/// Starts the hostile server under `confinement`, granted `egress` if given.
pub async fn hostile_with(
    confine: impl FnOnce(Confinement) -> Confinement,
    egress: Option<wasmgate_egress::EgressGrant>,
) -> Result<Hostile, wasmgate_client::TransportError> {
    refuse_user_namespaces_if_asked();
    let state = tempfile::tempdir().unwrap();
    let workdir = wasmgate_confine::provider_workdir(state.path(), "hostile").unwrap();
    let other = wasmgate_confine::provider_workdir(state.path(), "other").unwrap();
    std::fs::write(other.join("secret.txt"), "the other provider's data").unwrap();
    std::fs::write(workdir.join("mine.txt"), "my own data").unwrap();
    let ssh = state.path().join("home/.ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----").unwrap();
    let mut config = wasmgate_client::StdioConfig::new("hostile", python(), &workdir)
        .arg(fixtures().join("hostile_server.py"))
        .env("HOME", state.path().join("home"))
        .confinement(Some(confine(for_python(&python(), &fixtures()))));
    config.egress = egress;
    let transport = wasmgate_client::StdioTransport::spawn(&config)?;
    let report = transport.confinement().cloned();
    let client = wasmgate_client::McpClient::connect("hostile", transport, wasmgate_client::ClientConfig::default())
        .await
        .expect("connect");
    Ok(Hostile { client, report, state })
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

/// The next record within `millis`, waited for without blocking the runtime: the tasks
/// that end a connection and report it run on this test's own thread.
pub async fn next_record(
    records: &std::sync::mpsc::Receiver<wasmgate_egress::EgressRecord>,
    millis: u64,
) -> Option<wasmgate_egress::EgressRecord> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(millis);
    loop {
        if let Ok(record) = records.try_recv() {
            return Some(record);
        }
        if std::time::Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}
