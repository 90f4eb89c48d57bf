//! A stdio server that fails to start says why: its last lines of stderr and the likely
//! cause with the key or command that fixes it, never only a timeout; and the log that
//! says so is one line per event, without terminal escape codes when stderr is not a
//! terminal, or JSON lines with `--log-format json`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use common::{command, python, stderr};
use serde_json::Value;

/// A gateway in a fresh directory whose one provider, `broken`, runs `program` with
/// `args`; `dirs` are granted to it (`read_exec`).
fn gateway(program: &Path, args: &[String], dirs: &[&Path]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    let config = format!(
        "state_dir = \"state\"\n\n[providers.broken]\ncommand = {:?}\nargs = {args:?}\nread_exec = {dirs:?}\n",
        program.display().to_string()
    );
    std::fs::write(dir.path().join("wasmgate.toml"), config).unwrap();
    std::fs::write(dir.path().join("policy.toml"), "[providers.broken]\n").unwrap();
    dir
}

/// A Python server at `dir/server.py` that runs `body` and never answers.
fn python_server(dir: &Path, body: &str) -> (std::path::PathBuf, Vec<String>, Vec<std::path::PathBuf>) {
    let script = dir.join("server.py");
    std::fs::write(&script, body).unwrap();
    let (python, mut dirs) = python();
    dirs.push(dir.to_owned());
    (python, vec![script.display().to_string()], dirs)
}

/// `wasmgate tools` on `dir` with `extra` arguments first: (stdout, stderr).
fn tools(dir: &Path, extra: &[&str]) -> (String, String) {
    let out = command(dir).args(extra).arg("tools").env("WASMGATE_LOG", "info").output().unwrap();
    (String::from_utf8_lossy(&out.stdout).into_owned(), stderr(&out))
}

#[test]
fn a_server_missing_a_module_quotes_its_stderr_and_says_what_to_grant() {
    let code = tempfile::tempdir().unwrap();
    let (python, args, dirs) = python_server(code.path(), "import caldav_that_is_not_installed\n");
    let dirs: Vec<&Path> = dirs.iter().map(|d| d.as_path()).collect();
    let dir = gateway(&python, &args, &dirs);
    let (listed, log) = tools(dir.path(), &[]);
    assert!(listed.contains("its last lines of stderr:"), "{listed}");
    assert!(listed.contains("No module named 'caldav_that_is_not_installed'"), "{listed}");
    assert!(listed.contains("likely cause: something it needs is missing"), "{listed}");
    assert!(listed.contains("`read_exec` under [providers.broken]"), "{listed}");

    // The log says the same, as text: no escape codes (stderr is a pipe here), one
    // line per event, each starting with its timestamp.
    assert!(!log.contains('\u{1b}'), "no terminal escape codes: {log:?}");
    let events: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(events.iter().any(|l| l.contains("WARN") && l.contains("likely cause")), "{log}");
    for line in &events {
        assert!(line.starts_with("20"), "every line is an event of its own: {line:?}");
    }
}

#[test]
fn a_server_downloaded_at_start_is_told_to_be_installed_once() {
    // A stand-in for npx, as a confined `npx -y pkg` fares with no network.
    let code = tempfile::tempdir().unwrap();
    let npx = code.path().join("npx");
    std::fs::write(&npx, "#!/bin/sh\necho 'npm error network request to https://registry.npmjs.org/pkg failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org' >&2\nexit 1\n").unwrap();
    std::fs::set_permissions(&npx, std::fs::Permissions::from_mode(0o755)).unwrap();
    let dir = gateway(&npx, &["-y".into(), "@modelcontextprotocol/server-everything".into()], &[code.path()]);
    let (listed, log) = tools(dir.path(), &["--log-format", "json"]);
    assert!(listed.contains("getaddrinfo EAI_AGAIN registry.npmjs.org"), "{listed}");
    assert!(listed.contains("`npx` downloads the server each time it starts"), "{listed}");
    assert!(listed.contains("wasmgate init --from FILE"), "{listed}");

    // As JSON lines: each one an object with a level, the warning among them.
    let events: Vec<Value> = log
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line: {l:?}: {e}")))
        .collect();
    assert!(events.iter().all(|e| e["level"].is_string()), "{events:?}");
    let warned = events.iter().any(|e| {
        e["level"] == "WARN" && e["fields"]["message"].as_str().is_some_and(|m| m.contains("downloads the server"))
    });
    assert!(warned, "{events:?}");
}
