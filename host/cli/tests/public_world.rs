//! Wildcard grants and the name service end to end, on a public internet of the test's
//! own: `wasmgate serve` runs inside a user, network, mount and PID namespace the test
//! makes (`unshare`), whose loopback also holds a public-looking address, a private
//! one and a name server's (`fixtures/public_world.py`), and whose `/etc/resolv.conf`
//! names that name server. Nothing leaves the namespace; when `serve` ends, everything
//! in it does.
//!
//! Behind it, someone else's fetch server (`mcp-server-fetch` from PyPI, installed by
//! `scripts/install-peers.sh`) granted `*:80` and `*:443`, which reaches the public site
//! by name through the egress proxy and not the private one, even started with its own
//! guard off (`--allow-private-ips`); and the hostile fixture granted one name, which
//! the gateway's name service answers in its namespace and which it then reaches by a
//! plain connect.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};

use common::python_at;
use serde_json::{Value, json};
use wasmgate_client::{ClientConfig, McpClient, StdioConfig, StdioTransport};
use wasmgate_core::CancellationToken;

/// What the namespace runs: the loopback's addresses, the name server named in
/// `resolv.conf`, the world's servers, a review of the tools, then `serve` as PID 1.
const WORLD: &str = r#"set -euo pipefail
ip link set lo up
for address in 93.184.216.34 10.9.9.9 10.53.53.53; do ip addr add "$address/32" dev lo; done
mount --bind "$DIR/resolv.conf" /etc/resolv.conf
python3 "$WORLD_SCRIPT" "$DIR/ready" &
for _ in $(seq 300); do [ -e "$DIR/ready" ] && break; sleep 0.1; done
[ -e "$DIR/ready" ] || { echo "the world did not come up" >&2; exit 1; }
"$WASMGATE" review --yes >&2
exec "$WASMGATE" serve
"#;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../client/tests/fixtures").canonicalize().unwrap()
}

fn fetch_python() -> PathBuf {
    let peers = std::env::var_os("WASMGATE_PEERS_DIR")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/peers"), PathBuf::from);
    let python = peers.join("fetch/bin/python");
    assert!(python.exists(), "{} is missing: run scripts/install-peers.sh", python.display());
    python
}

/// The configuration: the fetch server granted any public address on 80 and 443, the
/// hostile fixture one name on port 7000.
fn configure(dir: &Path) {
    let (fetch, fetch_dirs) = python_at(&fetch_python());
    let (python, dirs) = common::python();
    let list = |dirs: &[PathBuf]| dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>();
    let hostile = fixtures().join("hostile_server.py");
    let config = format!(
        "state_dir = \"state\"\npolicy = \"policy.toml\"\n\n[audit]\npath = \"audit.jsonl\"\n\n\
         [providers.fetch]\ncommand = {fetch:?}\nargs = [\"-m\", \"mcp_server_fetch\", \"--allow-private-ips\"]\n\
         read_exec = {fetch_dirs:?}\n\n\
         [providers.hostile]\ncommand = {python:?}\nargs = [{hostile:?}]\nread_exec = {dirs:?}\n",
        fetch = fetch.display().to_string(),
        fetch_dirs = list(&fetch_dirs),
        python = python.display().to_string(),
        hostile = hostile.display().to_string(),
        dirs = list(&dirs),
    );
    std::fs::write(dir.join("wasmgate.toml"), config).unwrap();
    let policy = format!(
        "[providers.fetch]\nnetwork_hosts = [\"*:80\", \"*:443\"]\n\n[providers.fetch.tools]\nfetch = \"allow\"\n\n\
         [providers.hostile]\nnetwork_hosts = [\"shop.example.com:7000\"]\nread_paths = [{fixtures:?}]\n\n\
         [providers.hostile.tools]\nresolve = \"allow\"\ntcp_exchange = \"allow\"\n",
        fixtures = fixtures().display().to_string()
    );
    std::fs::write(dir.join("policy.toml"), policy).unwrap();
    std::fs::write(dir.join("resolv.conf"), "nameserver 10.53.53.53\n").unwrap();
}

/// `wasmgate serve` in the world, as an MCP client starts a stdio server.
async fn serve_in_world(dir: &Path) -> McpClient {
    let flags = [
        "--user",
        "--map-root-user",
        "--net",
        "--mount",
        "--pid",
        "--fork",
        "--mount-proc",
        "--propagation",
        "private",
        "bash",
        "-c",
        WORLD,
    ];
    let world = flags.into_iter().fold(StdioConfig::new("world", "unshare", dir), StdioConfig::arg);
    let world = world
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("DIR", dir)
        .env("WORLD_SCRIPT", Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/public_world.py"))
        .env("WASMGATE", env!("CARGO_BIN_EXE_wasmgate"))
        .env("WASMGATE_CONFIG", dir.join("wasmgate.toml"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .confinement(None);
    let transport = StdioTransport::spawn(&world).unwrap();
    McpClient::connect("world", transport, ClientConfig::default()).await.expect("serve answers in the world")
}

/// The text of a call's result, and whether it was an error.
async fn call(client: &McpClient, tool: &str, args: Value) -> (String, bool) {
    let args = args.as_object().cloned().unwrap();
    let result = client.call_tool(tool, args, CancellationToken::new()).await.unwrap();
    let text: Vec<&str> = result.content.iter().filter_map(wasmgate_protocol::ContentBlock::text).collect();
    (text.join("\n"), result.is_error)
}

/// The hostile fixture's `{"ok", "detail"}` answer, as the default formatter renders
/// it inside the frame (`ok: true`, `detail: ...`).
fn outcome(text: &str) -> (bool, String) {
    let field = |name: &str| text.lines().find_map(|line| line.strip_prefix(name)).map(str::trim);
    let ok = field("ok:").unwrap_or_else(|| panic!("no outcome in {text}"));
    (ok == "true", field("detail:").unwrap_or_default().to_owned())
}

#[tokio::test]
async fn wildcard_grants_reach_the_public_web_and_not_the_lan_and_a_granted_name_is_answered_and_reached() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    configure(dir);
    let client = serve_in_world(dir).await;
    let tools: Vec<String> = client.list_tools().await.unwrap().into_iter().map(|t| t.name).collect();
    assert!(tools.iter().any(|t| t == "fetch__fetch"), "{tools:?}");

    // `*:80`: a public site by name, through the proxy.
    let (page, error) = call(&client, "fetch__fetch", json!({"url": "http://news.example.com/today"})).await;
    let log = || std::fs::read_to_string(dir.join("audit.jsonl")).unwrap_or_default();
    assert!(!error && page.contains("The bridge on Mill Road reopens on Monday"), "{page}\n{}", log());
    // Not the LAN, by address or by name, though the server's own guard is off.
    for url in ["http://10.9.9.9/", "http://intranet.example.com/"] {
        let (text, error) = call(&client, "fetch__fetch", json!({"url": url})).await;
        assert!(error && !text.contains("payroll export"), "{url}: {text}");
    }

    // A granted name: the name service in the server's namespace answers it with the
    // address the gateway resolved, and a plain connect to that address is admitted.
    let (text, _) = call(&client, "hostile__resolve", json!({"name": "shop.example.com"})).await;
    assert_eq!(outcome(&text), (true, "93.184.216.34".to_owned()), "{text}");
    let (text, _) = call(&client, "hostile__tcp_exchange", json!({"host": "shop.example.com", "port": 7000})).await;
    assert_eq!(outcome(&text), (true, "pong!".to_owned()), "{text}");
    // A name no grant of its names: refused in its namespace.
    let (text, _) = call(&client, "hostile__resolve", json!({"name": "news.example.com"})).await;
    assert!(!outcome(&text).0, "{text}");
    client.close().await;

    let audit = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap();
    let egress: Vec<Value> = audit
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|record| record["event"] == "egress")
        .collect();
    // A proxied connection's record has no `kind`.
    let find = |kind: &str, host: &str, refused: bool| {
        egress.iter().any(|r| {
            r.get("kind").and_then(Value::as_str).unwrap_or("proxied") == kind
                && r["host"] == host
                && r.get("refused").is_some() == refused
        })
    };
    assert!(find("proxied", "news.example.com", false), "{egress:#?}");
    assert!(find("proxied", "10.9.9.9", true) && find("proxied", "intranet.example.com", true), "{egress:#?}");
    assert!(find("lookup", "shop.example.com", false) && find("lookup", "news.example.com", true), "{egress:#?}");
    assert!(find("direct", "93.184.216.34", false), "{egress:#?}");
}
