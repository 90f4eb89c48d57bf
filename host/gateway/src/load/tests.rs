#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use super::*;
use crate::config::{HeaderConfig, MAX_PREPARED_INSTANCES, ProviderKind};

fn parse(text: &str) -> Result<Config, PolicyError> {
    Config::parse(text, "wasmgate.toml", Path::new("/etc/wg/wasmgate.toml"), Path::new("/etc/wg"))
}

fn error(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

#[test]
fn the_three_kinds_of_provider_and_relative_paths() {
    let config = parse(
        r#"
state_dir = "state"
[providers.calendar]
command = "python3"
args = ["server.py"]
[providers.search]
url = "https://search.example/mcp"
token_env = "SEARCH_TOKEN"
[providers.diary]
component = "diary.wasm"
dirs = [{ host = "data", guest = "/data", read_only = false }]
"#,
    )
    .unwrap();
    assert_eq!(config.policy, Path::new("/etc/wg/policy.toml"));
    assert_eq!(config.audit.path, Path::new("/etc/wg/state/audit.jsonl"));
    assert_eq!(config.providers["calendar"].kind(), ProviderKind::Stdio);
    assert_eq!(config.providers["search"].kind(), ProviderKind::Http);
    assert_eq!(config.providers["diary"].component.as_deref(), Some(Path::new("/etc/wg/diary.wasm")));
    assert_eq!(config.providers["diary"].dirs[0].host, Path::new("/etc/wg/data"));
    assert!(!config.providers["diary"].dirs[0].read_only);
}

#[test]
fn a_call_timeout_is_for_servers_and_must_be_positive() {
    let config = parse("[providers.slow]\ncommand = \"x\"\ncall_timeout_ms = 30000\n").unwrap();
    assert_eq!(config.providers["slow"].call_timeout_ms, Some(30_000));
    assert_eq!(parse("[providers.a]\ncommand = \"x\"\n").unwrap().providers["a"].call_timeout_ms, None);
    let e = error("[providers.slow]\ncommand = \"x\"\ncall_timeout_ms = 0\n");
    assert!(e.contains("would fail every call") && e.contains("fix: give a time"), "{e}");
    let e = error("[providers.diary]\ncomponent = \"d.wasm\"\ncall_timeout_ms = 10\n");
    assert!(e.contains("`providers.diary`") && e.contains("deadline_ms"), "{e}");
}

#[test]
fn errors_name_the_line_the_key_and_the_fix() {
    let e = error("[providers.calendar]\ncommand = \"x\"\nurl = \"http://y\"\n");
    assert!(e.starts_with("wasmgate.toml:1:"), "{e}");
    assert!(e.contains("`providers.calendar`") && e.contains("exactly one of"), "{e}");

    let e = error("[providers.Calendar]\ncommand = \"x\"\n");
    assert!(e.contains("provider name") && e.contains("fix: rename"), "{e}");

    let e = error("[audit]\ndurability = \"sometimes\"\n");
    assert!(e.contains("wasmgate.toml:2:") && e.contains("every-call"), "{e}");

    let e = error("[providers.calendar]\ncomand = \"x\"\n");
    assert!(e.contains("did you mean `command`"), "{e}");
}

#[test]
fn an_audit_key_file_is_read_relative_to_the_config() {
    let config = parse("[audit]\nkey_file = \"keys/audit.key\"\n").unwrap();
    assert_eq!(config.audit.key_file.as_deref(), Some(Path::new("/etc/wg/keys/audit.key")));
    assert_eq!(parse("").unwrap().audit.key_file, None);
}

#[test]
fn the_audit_log_rotates_at_64_mib_unless_told_another_size_or_never() {
    assert_eq!(parse("").unwrap().audit.rotate_bytes, Some(64 << 20));
    assert_eq!(parse("[audit]\nrotate_mb = 8\n").unwrap().audit.rotate_bytes, Some(8 << 20));
    assert_eq!(parse("[audit]\nrotate_mb = 0\n").unwrap().audit.rotate_bytes, None);
    let e = error(&format!("[audit]\nrotate_mb = {}\n", i64::MAX));
    assert!(e.contains("audit.rotate_mb") && e.contains("too large"), "{e}");
}

#[test]
fn mcp_servers_json_is_imported_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("claude.json");
    std::fs::write(&json, r#"{"mcpServers": {"files": {"command": "npx", "args": ["-y", "fs"]}, "web": {"url": "http://127.0.0.1:9/mcp"}}}"#).unwrap();
    let text = format!("mcp_servers = {:?}\n[providers.calendar]\ncommand = \"python3\"\n", json.display().to_string());
    let config = parse(&text).unwrap();
    assert_eq!(config.providers["files"].args, ["-y", "fs"]);
    assert_eq!(config.providers["web"].kind(), ProviderKind::Http);

    std::fs::write(&json, r#"{"mcpServers": {"calendar": {"command": "x"}}}"#).unwrap();
    let e = parse(&text).unwrap_err().to_string();
    assert!(e.contains("already defines a provider \"calendar\""), "{e}");

    std::fs::write(&json, "{\"mcpServers\": {\n  \"My Server\": {\"command\": \"x\"}}}").unwrap();
    let e = parse(&text).unwrap_err().to_string();
    assert!(e.contains(":2:") && e.contains("mcpServers.My Server") && e.contains("rename the entry"), "{e}");

    // A disabled server is left out; a setting wasmgate would not honour is refused.
    std::fs::write(&json, r#"{"mcpServers": {"off": {"command": "x", "disabled": true}, "on": {"command": "y"}}}"#)
        .unwrap();
    let config = parse(&text).unwrap();
    assert!(!config.providers.contains_key("off") && config.providers.contains_key("on"));
    // Headers: `${VAR}` and `${env:VAR}` name variables; anything else is the value.
    let headers = r#"{"X-Api-Key": "${env:SEARCH_KEY}", "X-Other": "${OTHER}", "X-Team": "blue ${x}"}"#;
    std::fs::write(&json, format!(r#"{{"mcpServers": {{"web": {{"url": "https://x/mcp", "headers": {headers}}}}}}}"#))
        .unwrap();
    let imported = parse(&text).unwrap().providers["web"].headers.clone();
    assert_eq!(imported["X-Api-Key"], HeaderConfig::Env { env: "SEARCH_KEY".into() });
    assert_eq!(imported["X-Other"], HeaderConfig::Env { env: "OTHER".into() });
    assert_eq!(imported["X-Team"], HeaderConfig::Value("blue ${x}".into()));
    assert_eq!(format!("{:?}", imported["X-Team"]), "Value(<redacted>)", "a value never reaches a log");
    std::fs::write(&json, r#"{"mcpServers": {"s": {"command": "x", "headers": {"A": "b"}}}}"#).unwrap();
    let e = parse(&text).unwrap_err().to_string();
    assert!(e.contains("`headers` does nothing"), "{e}");

    std::fs::write(&json, r#"{"mcpServers": {"web": {"url": "http://x/mcp", "env": {"K": "v"}}}}"#).unwrap();
    let e = parse(&text).unwrap_err().to_string();
    assert!(e.contains("`env` does nothing") && e.contains("mcpServers.web"), "{e}");

    // `type`, as Claude Code writes it, must fit the entry.
    std::fs::write(
        &json,
        r#"{"mcpServers": {"a": {"type": "stdio", "command": "x"}, "b": {"type": "http", "url": "http://x/mcp"}}}"#,
    )
    .unwrap();
    assert_eq!(parse(&text).unwrap().providers["b"].kind(), ProviderKind::Http);
    for entry in [r#"{"type": "sse", "url": "http://x/sse"}"#, r#"{"type": "http", "command": "x"}"#] {
        std::fs::write(&json, format!(r#"{{"mcpServers": {{"a": {entry}}}}}"#)).unwrap();
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.contains("does not fit") && e.contains("HTTP+SSE transport is not supported"), "{e}");
    }

    // A command with a separator is the file's; a bare one is looked up in PATH.
    std::fs::write(&json, r#"{"mcpServers": {"local": {"command": "./bin/server"}, "bare": {"command": "node"}}}"#)
        .unwrap();
    let config = parse(&text).unwrap();
    assert_eq!(config.providers["local"].command.as_deref(), Some(dir.path().join("./bin/server").as_path()));
    assert_eq!(config.providers["bare"].command.as_deref(), Some(Path::new("node")));

    // A file of any length is read only up to the limit (a FIFO or a device has no size).
    let e = parse("mcp_servers = \"/dev/zero\"\n").unwrap_err();
    let report = wasmgate_core::report(&e);
    assert_eq!(report, "cannot read /dev/zero: the file is over 1048576 bytes");
}

#[test]
fn an_http_providers_headers_come_from_variables_or_values() {
    let config = parse(
        "[providers.search]\nurl = \"https://s/mcp\"\nheaders = { \"X-Api-Key\" = { env = \"KEY\" }, \"X-Team\" = \"blue\" }\n",
    )
    .unwrap();
    let headers = &config.providers["search"].headers;
    assert_eq!(headers["X-Api-Key"], HeaderConfig::Env { env: "KEY".into() });
    assert_eq!(headers["X-Team"], HeaderConfig::Value("blue".into()));
    assert!(error("[providers.c]\ncomponent = \"c.wasm\"\nheaders = { A = \"b\" }\n").contains("headers"));
}

#[test]
fn a_key_the_providers_kind_does_not_use_is_refused() {
    for (text, key, kind) in [
        ("[providers.a]\ncommand = \"x\"\ndirs = [{ host = \"d\", guest = \"/d\" }]\n", "dirs", "stdio"),
        ("[providers.a]\ncomponent = \"a.wasm\"\ntoken_env = \"T\"\n", "token_env", "component"),
        ("[providers.a]\nurl = \"http://x/mcp\"\nargs = [\"-v\"]\n", "args", "HTTP"),
        ("[providers.a]\nurl = \"http://x/mcp\"\nread_exec = [\"/opt\"]\n", "read_exec", "HTTP"),
    ] {
        let e = error(text);
        assert!(e.contains(&format!("`providers.a.{key}`")) && e.contains(&format!("for a {kind} provider")), "{e}");
    }
}

#[test]
fn a_relative_command_with_a_separator_is_the_config_files() {
    let config = parse("[providers.a]\ncommand = \"./server\"\n[providers.b]\ncommand = \"python3\"\n").unwrap();
    assert_eq!(config.providers["a"].command.as_deref(), Some(Path::new("/etc/wg/./server")));
    assert_eq!(config.providers["b"].command.as_deref(), Some(Path::new("python3")), "looked up in PATH");
}

#[test]
fn a_bare_file_name_resolves_paths_against_the_current_directory() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = std::env::current_dir().unwrap();
    let name = format!("wasmgate-test-{}.toml", std::process::id());
    let path = cwd.join(&name);
    std::fs::write(&path, "state_dir = \"state\"\n").unwrap();
    let config = Config::load(Path::new(&name));
    std::fs::remove_file(&path).unwrap();
    let config = config.unwrap();
    assert!(config.state_dir.is_absolute(), "{}", config.state_dir.display());
    assert_eq!(config.state_dir, cwd.join("state"));
    drop(dir);
}

#[test]
fn prepared_instances_are_bounded_and_optional() {
    assert_eq!(parse("").unwrap().sandbox.prepared_instances, None, "the sandbox's default applies");
    assert_eq!(parse("[sandbox]\nprepared_instances = 0\n").unwrap().sandbox.prepared_instances, Some(0));
    let most = format!("[sandbox]\nprepared_instances = {MAX_PREPARED_INSTANCES}\n");
    assert_eq!(parse(&most).unwrap().sandbox.prepared_instances, Some(MAX_PREPARED_INSTANCES));
    let err = error(&format!("[sandbox]\nprepared_instances = {}\n", MAX_PREPARED_INSTANCES + 1));
    assert!(
        err.contains("prepared_instances") && err.contains("at most 256") && err.contains("wasmgate.toml:2:"),
        "{err}"
    );
    let err = error("[sandbox]\nprepared_instances = -1\n");
    assert!(err.contains("prepared_instances"), "{err}");
}

#[test]
fn an_oauth_table_is_checked_at_load() {
    let config = parse(
        "[providers.mail]\nurl = \"https://m/mcp\"\n[providers.mail.oauth]\nclient_id = \"wg\"\nclient_secret = { file = \"mail.secret\" }\nissuer = \"https://auth.example\"\nscopes = [\"read\"]\n",
    )
    .unwrap();
    let oauth = config.providers["mail"].oauth.as_ref().unwrap();
    assert_eq!(
        oauth.client_secret,
        Some(crate::oauth_settings::SecretConfig::File { file: "/etc/wg/mail.secret".into() }),
        "a secret file is the config file's"
    );
    assert!(parse("[providers.m]\nurl = \"https://m/mcp\"\noauth = {}\n").unwrap().providers["m"].oauth.is_some());
    let bad = |table: &str| error(&format!("[providers.m]\nurl = \"https://m/mcp\"\noauth = {{ {table} }}\n"));
    assert!(bad("grant = \"password\"").contains("client_credentials"));
    assert!(bad("token_auth = \"tls\"").contains("private_key_jwt"));
    assert!(bad("client_secret = { env = \"S\" }").contains("client_id"));
    assert!(bad("client_id = \"x\", token_auth = \"private_key_jwt\"").contains("private_key"));
    assert!(bad("client_id = \"x\", token_auth = \"client_secret_post\"").contains("client secret"));
    assert!(bad("client_metadata_url = \"http://me/c.json\"").contains("https"));
    let e = bad("client_id = \"x\", client_secret = { env = \"S\" }");
    assert!(e.contains("issuer") && e.contains("could name one of its own"), "{e}");
    assert!(bad("client_id = \"x\", issuer = \"http://auth.example\"").contains("not an https URL"));
    // A literal secret in the shared file is not a form the table takes.
    let e = bad("client_id = \"x\", client_secret = \"hunter2\"");
    assert!(e.contains("never the value itself"), "{e}");
    let e = error("[providers.m]\nurl = \"https://m/mcp\"\ntoken_env = \"T\"\noauth = {}\n");
    assert!(e.contains("keep one"), "{e}");
    let e = error("[providers.m]\ncommand = \"x\"\noauth = {}\n");
    assert!(e.contains("`oauth` does nothing"), "{e}");
}

#[test]
fn a_cluster_names_its_replica_its_store_and_its_key() {
    let cluster = parse(
        "[cluster]\nreplica = \"r1\"\nstore = \"redis://127.0.0.1:6379/0\"\napproval_key_file = \"approval.key\"\n",
    )
    .unwrap()
    .cluster
    .unwrap();
    assert_eq!(cluster.replica, "r1");
    assert_eq!(cluster.approval_key_file, Path::new("/etc/wg/approval.key"));
    assert_eq!((cluster.anchor_interval_ms, cluster.store_timeout_ms, cluster.affinity), (1000, 1000, false));
    assert!(parse("").unwrap().cluster.is_none());

    let key = "approval_key_file = \"k\"\n";
    for (text, names) in [
        (format!("[cluster]\nreplica = \"r 1\"\nstore = \"redis://h\"\n{key}"), "cluster.replica"),
        (format!("[cluster]\nreplica = \"r1\"\n{key}"), "cluster.store"),
        (format!("[cluster]\nreplica = \"r1\"\nstore = \"redis://h\"\nstore_env = \"V\"\n{key}"), "cluster.store"),
        (
            format!("[cluster]\nreplica = \"r1\"\nstore = \"redis://h\"\n{key}anchor_interval_ms = 5\n"),
            "anchor_interval_ms",
        ),
        (
            format!("[cluster]\nreplica = \"r1\"\nstore = \"redis://h\"\n{key}store_timeout_ms = 0\n"),
            "store_timeout_ms",
        ),
        ("[cluster]\nreplica = \"r1\"\nstore = \"redis://h\"\n".to_owned(), "approval_key_file"),
    ] {
        let error = error(&text);
        assert!(error.contains(names), "{text}: {error}");
    }
}

#[test]
fn trusted_proxies_are_networks() {
    let serve = parse("[serve]\ntrusted_proxies = [\"127.0.0.1/32\", \"10.0.0.0/8\", \"::1/128\"]\n").unwrap().serve;
    assert_eq!(serve.trusted_proxies.len(), 3);
    assert!(parse("").unwrap().serve.trusted_proxies.is_empty(), "none by default");
    let error = error("[serve]\ntrusted_proxies = [\"nginx\"]\n");
    assert!(error.contains("trusted_proxies"), "{error}");
}
