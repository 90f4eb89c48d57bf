//! `wasmgate init --from FILE`: each client's layout, what is written, and what is
//! refused. The quick start (quickstart.rs) runs it end to end with an install.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

fn init(dir: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_wasmgate"));
    command.arg("init").args(args).arg("--dir").arg(dir).stdin(Stdio::null());
    command.output().unwrap()
}

fn said(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn a_vs_code_file_becomes_a_configuration_that_asks_for_every_tool() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("mcp.json");
    std::fs::write(
        &file,
        r#"{"servers": {
            "files": {"type": "stdio", "command": "/usr/bin/python3", "args": ["server.py"], "env": {"ROOT": "/srv"}},
            "search": {"type": "http", "url": "https://search.example/mcp", "headers": {"X-Key": "${env:SEARCH_KEY}"}},
            "old": {"command": "x", "disabled": true}
        }}"#,
    )
    .unwrap();
    let dir = home.path().join("gw");
    let out = init(&dir, &["--from", &file.display().to_string()]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("(2 servers)"), "the disabled one is left out: {}", said(&out));
    let config = std::fs::read_to_string(dir.join("wasmgate.toml")).unwrap();
    assert!(config.contains("[providers.files]") && config.contains("command = \"/usr/bin/python3\""), "{config}");
    assert!(config.contains("ROOT = \"/srv\""), "{config}");
    assert!(
        config.contains("url = \"https://search.example/mcp\"") && config.contains("env = \"SEARCH_KEY\""),
        "{config}"
    );
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(dir.join("wasmgate.toml")).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600, "an env value may be a credential: the file is the user's alone");
    let policy = std::fs::read_to_string(dir.join("policy.toml")).unwrap();
    assert_eq!(policy.matches("unlisted = \"ask\"").count(), 2, "{policy}");
    assert_eq!(policy.matches("confinement = \"required\"").count(), 1, "the stdio server only: {policy}");

    // What it wrote is a configuration the gateway reads.
    let tools = Command::new(env!("CARGO_BIN_EXE_wasmgate"))
        .args(["tools", "--config"])
        .arg(dir.join("wasmgate.toml"))
        .env("SEARCH_KEY", "k")
        .output()
        .unwrap();
    assert!(said(&tools).contains("files (stdio)"), "{}", said(&tools));
}

#[test]
fn a_server_fetched_at_start_is_left_alone_without_consent_and_files_are_never_overwritten() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("claude.json");
    std::fs::write(&file, r#"{"mcpServers": {"fetched": {"command": "npx", "args": ["-y", "some-server"]}}}"#).unwrap();
    let dir = home.path().join("gw");
    let from = file.display().to_string();
    let out = init(&dir, &["--from", &from]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("fetched: left as `npx some-server`"), "no terminal, no --install: {}", said(&out));
    assert!(std::fs::read_to_string(dir.join("wasmgate.toml")).unwrap().contains("command = \"npx\""));
    assert!(!dir.join("state/packages").exists(), "nothing installed");

    let again = init(&dir, &["--from", &from, "--no-install"]);
    assert!(!again.status.success() && said(&again).contains("is already there: pass --force"), "{}", said(&again));
    let forced = init(&dir, &["--from", &from, "--no-install", "--force"]);
    assert!(forced.status.success(), "{}", said(&forced));

    let snippet = init(&dir, &["--client-config"]);
    let snippet: serde_json::Value = serde_json::from_slice(&snippet.stdout).unwrap();
    assert_eq!(snippet["mcpServers"]["wasmgate"]["args"][0], "serve");
    let nowhere = init(&home.path().join("none"), &["--client-config"]);
    assert!(!nowhere.status.success() && said(&nowhere).contains("run `wasmgate init --from FILE` first"));
}

#[test]
fn a_file_in_no_layout_or_two_is_refused_with_the_layouts_named() {
    let home = tempfile::tempdir().unwrap();
    for (body, expected) in [
        (r#"{"theme": "dark"}"#, "no servers in the file"),
        (r#"{"mcpServers": {"a": {"command": "x"}}, "servers": {"b": {"command": "y"}}}"#, "more than one layout"),
        (r#"{"servers": {"a": {"command": "x", "envFile": ".env"}}}"#, "unknown field `envFile`"),
    ] {
        let file = home.path().join("client.json");
        std::fs::write(&file, body).unwrap();
        let out = init(&home.path().join("gw"), &["--from", &file.display().to_string()]);
        assert!(!out.status.success() && said(&out).contains(expected), "{body}: {}", said(&out));
    }
}

/// An npm package, packed into `dir`, whose install script writes `marker`; its tarball.
fn package_with_install_script(dir: &Path, marker: &Path) -> std::path::PathBuf {
    let source = dir.join("source");
    std::fs::create_dir_all(&source).unwrap();
    let manifest = serde_json::json!({
        "name": "marker-server",
        "version": "1.0.0",
        "bin": {"marker-server": "index.js"},
        "scripts": {"postinstall": format!("node -e \"require('fs').writeFileSync('{}', 'ran')\"", marker.display())}
    });
    std::fs::write(source.join("package.json"), manifest.to_string()).unwrap();
    std::fs::write(source.join("index.js"), "#!/usr/bin/env node\n").unwrap();
    let packed = Command::new("npm")
        .args(["pack", "--silent", "--pack-destination"])
        .arg(dir)
        .current_dir(&source)
        .output()
        .unwrap();
    assert!(packed.status.success(), "{}", said(&packed));
    dir.join("marker-server-1.0.0.tgz")
}

#[test]
fn an_install_runs_none_of_the_packages_own_code_unless_allowed_and_then_confined() {
    let home = tempfile::tempdir().unwrap();
    let marker = home.path().join("outside-its-folder");
    let tarball = package_with_install_script(home.path(), &marker);
    let file = home.path().join("claude.json");
    let servers =
        serde_json::json!({"mcpServers": {"m": {"command": "npx", "args": ["-y", tarball.display().to_string()]}}});
    std::fs::write(&file, servers.to_string()).unwrap();

    let dir = home.path().join("gw");
    let out = init(&dir, &["--from", &file.display().to_string(), "--install"]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("m: installed marker-server 1.0.0 (npm)"), "{}", said(&out));
    assert!(!marker.exists(), "the install script ran");
    let config = std::fs::read_to_string(dir.join("wasmgate.toml")).unwrap();
    assert!(config.contains("state/packages/m/node_modules/marker-server/index.js"), "{config}");

    // Allowed, the script runs, confined as a server is: it may write the package folder
    // only, so its write outside fails, and the install with it.
    let again = home.path().join("gw-scripts");
    let out = init(&again, &["--from", &file.display().to_string(), "--install", "--allow-install-scripts"]);
    assert!(!out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("EACCES") && said(&out).contains("ran confined"), "{}", said(&out));
    assert!(!marker.exists(), "the confined install script wrote outside its folder");
}

#[test]
fn paths_a_servers_arguments_name_are_granted_read_only_unless_named_writable() {
    let home = tempfile::tempdir().unwrap();
    let (notes, docs) = (home.path().join("notes"), home.path().join("docs"));
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::create_dir_all(&docs).unwrap();
    let file = home.path().join("claude.json");
    let args = [
        "/usr/bin/server.js".to_owned(),
        notes.display().to_string(),
        docs.display().to_string(),
        "--flag".to_owned(),
        "/no/such/dir".to_owned(),
    ];
    let servers = serde_json::json!({"mcpServers": {"fs": {"command": "/usr/bin/node", "args": args}}});
    std::fs::write(&file, servers.to_string()).unwrap();
    let dir = home.path().join("gw");
    let out = init(&dir, &["--from", &file.display().to_string(), "--writable", &notes.display().to_string()]);
    assert!(out.status.success(), "{}", said(&out));
    let shown = said(&out);
    assert!(
        shown.contains(&format!("fs: may read {} and read and write {}", docs.display(), notes.display())),
        "{shown}"
    );
    let policy: toml::Table = std::fs::read_to_string(dir.join("policy.toml")).unwrap().parse().unwrap();
    let fs = &policy["providers"]["fs"];
    assert_eq!(fs["read_paths"].as_array().unwrap(), &[toml::Value::from(docs.display().to_string())]);
    assert_eq!(fs["write_paths"].as_array().unwrap(), &[toml::Value::from(notes.display().to_string())]);
    // The policy loads, with its grants.
    let loaded = wasmgate_policy::Policy::load(&dir.join("policy.toml")).unwrap();
    assert_eq!(loaded.provider("fs").unwrap().write_paths, std::slice::from_ref(&notes));
    // Review shows them with the code.
    let review = Command::new(env!("CARGO_BIN_EXE_wasmgate"))
        .args(["review", "--yes", "--config"])
        .arg(dir.join("wasmgate.toml"))
        .env("XDG_CACHE_HOME", home.path().join("cache"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let shown = said(&review);
    assert!(shown.contains(&format!("its policy grants: it may read {}", docs.display())), "{shown}");
    assert!(shown.contains(&format!("its policy grants: it may read and write {}", notes.display())), "{shown}");
}

#[test]
fn a_python_server_is_installed_into_a_virtual_environment_by_a_confined_pip() {
    let home = tempfile::tempdir().unwrap();
    // A wheel of our own, so that pip needs no index (PIP_NO_INDEX).
    let wheel = home.path().join("hello_mcp-1.0-py3-none-any.whl");
    let script = r#"
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as w:
    w.writestr("hello_mcp/__init__.py", "def main():\n    print('hi')\n")
    info = "hello_mcp-1.0.dist-info/"
    w.writestr(info + "METADATA", "Metadata-Version: 2.1\nName: hello-mcp\nVersion: 1.0\n")
    w.writestr(info + "WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    w.writestr(info + "entry_points.txt", "[console_scripts]\nhello-mcp = hello_mcp:main\n")
    w.writestr(info + "RECORD", "")
"#;
    let made = Command::new("python3").arg("-c").arg(script).arg(&wheel).output().unwrap();
    assert!(made.status.success(), "{}", said(&made));
    let file = home.path().join("claude.json");
    let servers = serde_json::json!({"mcpServers": {"hello": {"command": "uvx", "args": ["--from", wheel.display().to_string(), "hello-mcp"]}}});
    std::fs::write(&file, servers.to_string()).unwrap();
    let dir = home.path().join("gw");
    let mut command = Command::new(env!("CARGO_BIN_EXE_wasmgate"));
    command.arg("init").args(["--from", &file.display().to_string(), "--install", "--dir"]).arg(&dir);
    let out = command.env("PIP_NO_INDEX", "1").stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("installing") && said(&out).contains("with pip, confined"), "{}", said(&out));
    let config = std::fs::read_to_string(dir.join("wasmgate.toml")).unwrap();
    let installed = dir.join("state/packages/hello/venv/bin/hello-mcp");
    assert!(config.contains(&installed.display().to_string()), "{config}");
    let ran = Command::new(&installed).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "hi\n");
    assert!(!dir.join("state/packages/hello/.pip-cache").exists(), "the install's cache is gone");
}
