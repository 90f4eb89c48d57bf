//! The web console's configuration, shared by its HTTP test and its browser test.

use std::sync::Arc;

use serde_json::json;
use wasmgate_client::McpClient;
use wasmgate_core::CancellationToken;
use wasmgate_testing::Issuer;

use super::{own_echo_server, setup};

/// A description no console may run.
pub const HOSTILE: &str = "Echoes. <script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\"> \
                           <a href=\"javascript:window.__pwned = 3\">docs</a>";

/// The console's configuration on a new tempdir: the issuer's tokens and its sign-in,
/// reviewers in group `security` (alice), admins in `ops` (dave), calendar_create's asks
/// routed to reviewers, and the echo server's tool echo described with `description`
/// (its environment's `ECHO_DESCRIPTION`, which a test may change).
pub fn console_setup(issuer: &Issuer, description: &str) -> tempfile::TempDir {
    let dir = setup();
    let script = own_echo_server(dir.path());
    let server = std::fs::read_to_string(&script).unwrap();
    let described = server.replacen(
        "{\"name\": name, \"inputSchema\": {\"type\": \"object\"}}",
        "{\"name\": name, \"description\": os.environ.get(\"ECHO_DESCRIPTION\", name) if name == \"echo\" else name, \"inputSchema\": {\"type\": \"object\"}}",
        1,
    );
    assert_ne!(described, server);
    std::fs::write(&script, described).unwrap();
    let config = dir.path().join("wasmgate.toml");
    let text = std::fs::read_to_string(&config).unwrap().replacen(
        "[providers.echo]\n",
        &format!("[providers.echo]\nenv = {{ ECHO_DESCRIPTION = {description:?} }}\n"),
        1,
    );
    std::fs::write(&config, text + &issuer.serve_oauth() + &issuer.serve_console("console")).unwrap();
    let policy = dir.path().join("policy.toml");
    let rules = std::fs::read_to_string(&policy).unwrap().replacen(
        "[providers.calendar]\n",
        "[providers.calendar]\nask_reviewers = [\"calendar_create\"]\n",
        1,
    );
    let console = "\n[approvals]\ndeadline_seconds = 600\n\n[console]\nreviewers = [{ groups = [\"security\"] }]\n\
                   admins = [{ groups = [\"ops\"] }]\n";
    std::fs::write(&policy, rules + console).unwrap();
    issuer.set_groups("alice", &["security"]);
    issuer.set_groups("dave", &["ops"]);
    issuer.set_groups("mallory", &["staff"]);
    dir
}

/// Starts `client`'s call of calendar_create; its outcome: error or not, and the text.
pub fn create(client: &Arc<McpClient>, title: &str) -> tokio::task::JoinHandle<(bool, String)> {
    let client = Arc::clone(client);
    let arguments = json!({"user": "bob", "title": title, "start": "2026-12-03T12:00", "end": "2026-12-03T13:00"});
    tokio::spawn(async move {
        let arguments = arguments.as_object().cloned().unwrap();
        let result = client.call_tool("calendar__calendar_create", arguments, CancellationToken::new()).await.unwrap();
        (result.is_error, result.content.iter().filter_map(|b| b.text()).collect())
    })
}
