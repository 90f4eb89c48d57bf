//! `wasmgate tools`, `review`, `call` and `audit verify` on a real configuration: the
//! calendar WASM component and a stdio MCP server (spawned confined).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn wasmgate(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wasmgate"))
        .args(args)
        .env("WASMGATE_CONFIG", dir.join("wasmgate.toml"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The real interpreter and the directories it needs (a pyenv or venv Python lives
/// outside the system paths the confinement grants by default).
fn python() -> (PathBuf, Vec<PathBuf>) {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable); print(sys.prefix); print(sys.base_prefix)"])
        .output()
        .expect("python3");
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines().map(PathBuf::from);
    let exe = lines.next().unwrap();
    (exe, lines.map(|p| p.canonicalize().unwrap()).collect())
}

fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../gate/tests/fixtures").canonicalize().unwrap();
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
        r#"[providers.calendar.tools]
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

#[test]
fn review_pins_the_tools_and_calls_go_through_the_whole_pipeline() {
    let dir = setup();
    let dir = dir.path();

    let before = wasmgate(dir, &["tools"]);
    assert!(before.status.success(), "{}", stderr(&before));
    let listed = stdout(&before);
    assert!(listed.contains("calendar__calendar_query") && listed.contains("unreviewed"), "{listed}");
    assert!(listed.contains("echo (stdio)\n  confinement: "), "{listed}");

    let unreviewed = wasmgate(dir, &["call", "--unattended", "calendar__calendar_query", "--args", "{}"]);
    assert!(!unreviewed.status.success());
    assert!(stderr(&unreviewed).contains("no tool \"calendar__calendar_query\" is offered"), "{}", stderr(&unreviewed));

    let review = wasmgate(dir, &["review", "--yes"]);
    assert!(review.status.success(), "{}", stderr(&review));
    assert!(stdout(&review).contains("approved: calendar__calendar_query"));
    assert!(dir.join("wasmgate.lock").is_file());

    let after = stdout(&wasmgate(dir, &["tools"]));
    for line in ["calendar__calendar_query", "calendar__calendar_create", "calendar__calendar_delete", "echo__echo"] {
        assert!(after.contains(line), "{after}");
    }
    let state =
        |tool: &str| after.lines().find(|l| l.contains(tool)).unwrap().split_whitespace().last().unwrap().to_owned();
    assert_eq!(state("calendar__calendar_query"), "allowed");
    assert_eq!(state("calendar__calendar_create"), "ask");
    assert_eq!(state("calendar__calendar_delete"), "denied");
    assert_eq!(state("echo__env"), "denied", "unlisted tools are denied");

    let create = r#"{"user": "alice", "title": "lunch", "start": "2026-12-03T12:00", "end": "2026-12-03T13:00"}"#;
    let asked = wasmgate(dir, &["call", "--unattended", "calendar__calendar_create", "--args", create]);
    assert!(stdout(&asked).contains("denied: approval is required, and nobody is available"), "{}", stdout(&asked));
    assert_eq!(asked.status.code(), Some(2), "an error result exits 2");

    let query = wasmgate(dir, &["call", "--unattended", "calendar__calendar_query", "--args", r#"{"user": "alice"}"#]);
    assert!(query.status.success(), "{}", stderr(&query));
    assert!(stdout(&query).contains("<untrusted-data boundary="), "{}", stdout(&query));

    let echo = wasmgate(dir, &["call", "--unattended", "echo__echo", "--args", r#"{"text": "hello"}"#]);
    assert!(echo.status.success(), "{}", stderr(&echo));
    assert!(stdout(&echo).contains("hello"), "{}", stdout(&echo));

    let audit = dir.join("state/audit.jsonl");
    let verify = wasmgate(dir, &["audit", "verify", audit.to_str().unwrap()]);
    assert!(verify.status.success(), "{}", stderr(&verify));
    let log = std::fs::read_to_string(&audit).unwrap();
    assert!(log.contains("\"verdict\":\"ask\"") && log.contains("\"event\":\"started\""), "{log}");
}

#[test]
fn a_wrong_configuration_names_the_file_the_line_and_the_fix() {
    let dir = setup();
    std::fs::write(
        dir.path().join("wasmgate.toml"),
        "[providers.calendar]\ncomponent = \"x.wasm\"\nurl = \"http://x\"\n",
    )
    .unwrap();
    let out = wasmgate(dir.path(), &["tools"]);
    assert!(!out.status.success());
    let e = stderr(&out);
    assert!(e.contains("wasmgate.toml:1:") && e.contains("exactly one of") && e.contains("fix:"), "{e}");
}
