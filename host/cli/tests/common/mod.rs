//! A gateway configuration in a tempdir: the calendar WASM component and a stdio MCP
//! server (the gate crate's stdlib Python fixture, spawned confined), and a way to run
//! the `wasmgate` binary on it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod cluster;
pub mod console;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use wasmgate_testing::Killed;

/// `wasmgate serve --http 127.0.0.1:0 EXTRA...` on the configuration in `dir`, and the
/// URL it says it serves on. Its log is drained so it never blocks on a full pipe.
pub fn serve_http(dir: &Path, extra: &[&str]) -> (Killed, String) {
    serve_http_with(dir, extra, &[])
}

/// [`serve_http`] with `env` set for the gateway.
pub fn serve_http_with(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> (Killed, String) {
    serve_http_at(dir, "127.0.0.1:0", extra, env)
}

/// [`serve_http_with`] on the address `addr`.
pub fn serve_http_at(dir: &Path, addr: &str, extra: &[&str], env: &[(&str, &str)]) -> (Killed, String) {
    let mut child = command(dir)
        .envs(env.iter().copied())
        .args(["serve", "--http", addr])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (url, lines) = listening(&mut child);
    std::thread::spawn(move || lines.for_each(drop));
    (Killed(child), url)
}

/// The URL a `wasmgate serve --http` `child` says it serves on, and the rest of its log,
/// which the caller must drain so that the server never blocks on a full pipe.
pub fn listening(child: &mut std::process::Child) -> (String, std::io::Lines<BufReader<std::process::ChildStderr>>) {
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("wasmgate: serving MCP on ").map(str::to_owned))
        .expect("the server says where it listens");
    (url, lines)
}

/// Points the echo provider of the configuration in `dir` at a copy of its server, in
/// `dir/server`, that a test can change; the copy's path.
pub fn own_echo_server(dir: &Path) -> PathBuf {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../client/tests/fixtures/stdio_server.py");
    std::fs::create_dir(dir.join("server")).unwrap();
    let script = dir.join("server/stdio_server.py");
    std::fs::copy(&fixture, &script).unwrap();
    let fixtures = fixture.parent().unwrap().canonicalize().unwrap();
    for file in ["wasmgate.toml", "policy.toml"] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        let text = text
            .replace(&fixture.canonicalize().unwrap().display().to_string(), &script.display().to_string())
            .replace(
                &format!("{:?}", fixtures.display().to_string()),
                &format!("{:?}", dir.join("server").display().to_string()),
            );
        std::fs::write(dir.join(file), text).unwrap();
    }
    script
}

/// Waits (at most 30 s) until `client` follows the tool list, and returns its change
/// counter, seen.
pub async fn following(client: &wasmgate_client::McpClient) -> tokio::sync::watch::Receiver<u64> {
    let mut watch = client.tools_watch();
    let active = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        watch.wait_for(|s| *s == wasmgate_client::ToolsWatch::Active),
    )
    .await;
    assert!(active.is_ok_and(|r| r.is_ok()), "the client follows the tool list");
    let mut changes = client.tool_list_changes();
    changes.borrow_and_update();
    changes
}

/// Waits (at most 30 s) for the next tools/list_changed notice on `changes`.
pub async fn changed(changes: &mut tokio::sync::watch::Receiver<u64>) {
    let heard = tokio::time::timeout(std::time::Duration::from_secs(30), changes.changed()).await;
    assert!(heard.is_ok_and(|r| r.is_ok()), "a tools/list_changed notice");
    changes.borrow_and_update();
}

/// `wasmgate ARGS` on the configuration in `dir`.
pub fn wasmgate(dir: &Path, args: &[&str]) -> Output {
    command(dir).args(args).output().unwrap()
}

/// `wasmgate serve` over stdio on the configuration in `dir`, as a stdio server for our
/// client (unconfined: it is the gateway, not a provider).
pub fn serve_stdio(dir: &Path) -> wasmgate_client::StdioConfig {
    wasmgate_client::StdioConfig::new("wasmgate", env!("CARGO_BIN_EXE_wasmgate"), dir)
        .arg("serve")
        .env("WASMGATE_CONFIG", dir.join("wasmgate.toml"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .confinement(None)
}

/// The `wasmgate` command, pointed at the configuration in `dir`.
pub fn command(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_wasmgate"));
    command.env("WASMGATE_CONFIG", dir.join("wasmgate.toml")).env("XDG_CACHE_HOME", dir.join("cache"));
    command
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The real interpreter and the directories it needs (a pyenv or venv Python lives
/// outside the system paths the confinement grants by default).
pub fn python() -> (PathBuf, Vec<PathBuf>) {
    python_at(Path::new("python3"))
}

/// [`python`] for the interpreter at `exe` (a venv's, say): its executable and the
/// directories it runs from.
pub fn python_at(exe: &Path) -> (PathBuf, Vec<PathBuf>) {
    let out = Command::new(exe)
        .args(["-c", "import sys; print(sys.executable); print(sys.prefix); print(sys.base_prefix)"])
        .output()
        .expect("python3");
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines().map(PathBuf::from);
    let exe = lines.next().unwrap();
    (exe, lines.map(|p| p.canonicalize().unwrap()).collect())
}

pub fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../client/tests/fixtures").canonicalize().unwrap();
    let (python, dirs) = python();
    let config = format!(
        r#"state_dir = "state"

[providers.calendar]
component = {calendar:?}
dirs = [{{ host = "data", guest = "/data", read_only = false }}]

[providers.echo]
command = {python:?}
args = [{server:?}]
read_exec = {dirs:?}
"#,
        calendar = wasmgate_guests::CALENDAR_PATH,
        python = python.display().to_string(),
        server = fixtures.join("stdio_server.py").display().to_string(),
        dirs = dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>(),
    );
    std::fs::write(dir.path().join("wasmgate.toml"), config).unwrap();
    let policy = format!(
        r#"[providers.calendar]
sinks = ["calendar_create", "calendar_delete"]

[providers.calendar.tools]
calendar_query = "allow"
calendar_create = "ask"
calendar_delete = "deny"

[providers.echo]
read_paths = [{fixtures:?}]

[providers.echo.tools]
echo = "allow"
"#,
        fixtures = fixtures.display().to_string()
    );
    std::fs::write(dir.path().join("policy.toml"), policy).unwrap();
    dir
}

/// Everything `out` printed, stdout then stderr.
pub fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// Approves every question a call asks (elicitation), as the person at the client would.
#[derive(Debug)]
pub struct Person;

impl wasmgate_client::InputHandler for Person {
    fn answer(
        &self,
        request: wasmgate_client::InputRequest,
    ) -> wasmgate_core::BoxFuture<'_, Result<serde_json::Value, wasmgate_client::InputDeclined>> {
        let answer = match request.method.as_str() {
            "elicitation/create" => Ok(serde_json::json!({"action": "accept", "content": {"approve": true}})),
            _ => Err(wasmgate_client::InputDeclined::Unsupported),
        };
        Box::pin(std::future::ready(answer))
    }
}
