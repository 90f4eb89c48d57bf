//! Someone else's database MCP server on a real database, confined: the reference
//! PostgreSQL MCP server (`@modelcontextprotocol/server-postgres` 0.6.2 from npm, a Node
//! process using `pg`, which knows nothing of proxies) granted one PostgreSQL on loopback
//! (`network_hosts = ["127.0.0.1:PORT"]`). Its plain connect reaches the database through
//! the gateway (`direct`), and with the grant naming another port it reaches nothing: the
//! connect is refused at once, and reported.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod confined;
mod peers;

use std::sync::Arc;
use std::sync::mpsc::Receiver;

use peers::{call, first_text, peer};
use serde_json::json;
use wasmgate_client::{ClientConfig, McpClient, StdioConfig, StdioTransport};
use wasmgate_confine::Confinement;
use wasmgate_egress::{EgressGrant, EgressKind, EgressObserver, EgressRecord, HostGrant};
use wasmgate_testing::Postgres;

/// The server, confined, its database at `url`, granted `grant` (`host:port`).
async fn server(url: &str, grant: &str) -> (McpClient, Receiver<EgressRecord>, tempfile::TempDir) {
    let entry = peer("postgres-mcp/node_modules/@modelcontextprotocol/server-postgres/dist/index.js");
    let workdir = tempfile::tempdir().unwrap();
    let (sender, records) = std::sync::mpsc::channel();
    let observer: EgressObserver = Arc::new(move |record| {
        let _ = sender.send(record);
    });
    let grant = EgressGrant { hosts: vec![HostGrant::parse(grant).unwrap()], observer: Some(observer) };
    let confinement = Confinement::default().read_only(peer("postgres-mcp").canonicalize().unwrap());
    let config =
        StdioConfig::new("db", "node", workdir.path()).arg(entry).arg(url).confinement(Some(confinement)).egress(grant);
    let transport = StdioTransport::spawn(&config).unwrap();
    let client = McpClient::connect("db", transport, ClientConfig::default()).await.unwrap();
    (client, records, workdir)
}

/// The error of a `query` that fails, as the server reports it (a JSON-RPC error, or an
/// error result).
async fn fails(client: &McpClient, sql: &str) -> String {
    let args = json!({"sql": sql}).as_object().cloned().unwrap();
    match client.call_tool("query", args, wasmgate_core::CancellationToken::new()).await {
        Ok(result) if result.is_error => first_text(&result).to_owned(),
        Ok(result) => panic!("{sql}: it ran: {}", first_text(&result)),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn a_postgres_mcp_server_granted_its_database_queries_it_and_reaches_nothing_else() {
    let postgres = Postgres::start();
    let rows = postgres.psql(
        "CREATE TABLE events (title text, starts date);
         INSERT INTO events VALUES ('Lunch with Sam', '2026-12-08'), ('Standup', '2026-12-07');
         SELECT count(*) FROM events;",
    );
    assert_eq!(rows.trim(), "2");

    let granted = format!("127.0.0.1:{}", postgres.port);
    let (client, records, _workdir) = server(&postgres.url(), &granted).await;
    let tools = client.list_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "query"), "{tools:?}");
    let result = call(&client, "query", json!({"sql": "SELECT title FROM events ORDER BY starts"})).await;
    assert!(!result.is_error, "{}", first_text(&result));
    let text = first_text(&result);
    assert!(text.find("Standup").unwrap() < text.find("Lunch with Sam").unwrap(), "{text}");
    // Its queries run read-only: a write fails in the server, the table stays.
    let write = fails(&client, "DROP TABLE events").await;
    assert!(write.contains("read-only transaction"), "{write}");
    assert_eq!(postgres.psql("SELECT count(*) FROM events").trim(), "2");
    client.close().await;
    // Each connection is reported when it ends: `pg` keeps its pool's open until then.
    let connection = confined::next_record(&records, 30_000).await.expect("a direct connection reported");
    assert_eq!(connection.kind, EgressKind::Direct, "{connection:?}");
    assert_eq!(connection.address, Some(granted.parse().unwrap()));
    assert!(connection.refused.is_none() && connection.bytes_up > 0 && connection.bytes_down > 0, "{connection:?}");

    // Granted another port only: its connect to the database is refused at once in its
    // namespace, and the gateway hears of it.
    let elsewhere = format!("127.0.0.1:{}", postgres.port.wrapping_add(1));
    let (client, records, _workdir) = server(&postgres.url(), &elsewhere).await;
    let refused = fails(&client, "SELECT title FROM events").await;
    assert!(refused.contains("ECONNREFUSED"), "{refused}");
    let record = confined::next_record(&records, 10_000).await.expect("the refused connect reported");
    assert_eq!(record.kind, EgressKind::Direct, "{record:?}");
    assert_eq!(record.address, Some(format!("127.0.0.1:{}", postgres.port).parse().unwrap()), "{record:?}");
    let why = record.refused.unwrap_or_default();
    assert!(why.contains(&format!("no grant names port {}", postgres.port)), "{why}");
    client.close().await;
    assert!(confined::next_record(&records, 500).await.is_none(), "no connection reached the gateway");
}
