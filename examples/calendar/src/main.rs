//! `calendar-demo [STATE_DIR]`: the calendar scenario end to end, in-process through the
//! gateway library, in two acts, and a third through `wasmgate serve`. Each writes its bundled configuration into a fresh state
//! directory (default `target/calendar-demo`), starts a gateway with nobody present to
//! approve anything, runs a scripted agent turn over the guarded tools, prints what the
//! model saw, checks the trust checklist, and verifies the audit log. The first act's
//! providers are this project's (a hostile calendar server, the WASM calendar); the
//! second's are real and someone else's: caldav-mcp from npm in front of Radicale from
//! PyPI, granted that one host; the third's are server-postgres from npm on the machine's
//! PostgreSQL, used by a scripted MCP client of the `wasmgate` binary built beside this
//! one. `scripts/demo.sh` installs them, builds and runs it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, bail};
use wasmgate_agent::{AgentConfig, AllowAll, run_agent};
use wasmgate_core::CancellationToken;
use wasmgate_example_calendar::setup::Setup;
use wasmgate_example_calendar::{caldav, checks, postgres, scenario, show};
use wasmgate_gateway::{Config, Gateway, ToolState};
use wasmgate_guard::Unattended;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter("warn,wasmgate_client::transport::process=error")
        .init();
    let state_dir = std::env::args_os().nth(1).map_or_else(Setup::default_state_dir, PathBuf::from);
    let first = first_act(&state_dir).await?;
    let second = second_act(&state_dir).await?;
    let third = third_act(&state_dir).await?;
    if !(first && second && third) {
        bail!("the scenario did not go as the checklist says (see above)");
    }
    Ok(())
}

/// The first act: this project's hostile calendar server and the WASM calendar. Whether
/// every check held.
async fn first_act(state_dir: &Path) -> anyhow::Result<bool> {
    let setup = Setup::new(state_dir);
    let config_path = setup.write()?;
    let config = Config::load(&config_path)?;

    show::heading("wasmgate calendar demo, first act: a hostile calendar server and a WASM calendar");
    println!("  state:    {} (fresh on every run)", show::short(state_dir));
    println!("  config:   {} (examples/calendar/wasmgate.toml, filled in)", show::short(&config_path));
    println!("  policy:   {} (examples/calendar/policy.toml, filled in)", show::short(&config.policy));
    println!("  reviewed: {}", show::short(&config.lock));
    println!("  approver: unattended: nobody is present, so every \"ask\" is answered no");

    let gateway = Gateway::start(&config, Arc::new(Unattended)).await.context("starting the gateway")?;
    show::heading("Providers");
    show::providers(&gateway.providers(), "stdio MCP server (examples/calendar/server.py), a native process");
    let unreviewed = tools(&gateway, &config_path).await;

    show::heading("The agent's turn");
    let conversation = turn(&gateway, scenario::model(), scenario::conversation()).await;
    show::heading("The trust checklist, checked against what the model read");
    let checks = checks::run(&show::exchanges(&conversation.0));
    print_checks(&checks);
    close(gateway).await?;
    verify(&config)?;
    conversation.1.context("the agent's turn")?;
    Ok(checks.iter().all(|c| c.holds) && unreviewed.is_empty())
}

/// The second act: someone else's CalDAV MCP server in front of a real CalDAV server,
/// granted that one host. Whether every check held.
async fn second_act(state_dir: &Path) -> anyhow::Result<bool> {
    show::heading("Second act: a third-party CalDAV MCP server on a real CalDAV server");
    let peers = caldav::Peers::find()?;
    let radicale = caldav::Radicale::start(&peers, &state_dir.join("radicale")).context("starting Radicale")?;
    println!("  CalDAV server: Radicale 3.9.0 (PyPI), at http://{} (loopback)", radicale.host);
    println!("    seeded with alice's week: an injected instruction, invisible and bidi characters,");
    println!("    a description of 100 KB");
    println!("  MCP server:    caldav-mcp 0.10.0 (npm), {}", show::short(&peers.caldav_mcp));
    let config_path = caldav::write_config(&state_dir.join("caldav"), &peers, &radicale)?;
    let config = Config::load(&config_path)?;
    println!("  config:        {} (examples/calendar/caldav/, filled in)", show::short(&config_path));
    println!("  reviewed:      {} (its tools and its code, pinned)", show::short(&config.lock));
    let gateway = Gateway::start(&config, Arc::new(Unattended)).await.context("starting the second gateway")?;
    let granted: Vec<String> = gateway
        .guard
        .policy()
        .provider("caldav")
        .map(|p| p.network_hosts.iter().map(ToString::to_string).collect())
        .unwrap_or_default();
    println!("  egress grant:  network_hosts = {granted:?}: the one host it may reach, through the gateway's proxy");
    show::heading("Providers");
    show::providers(&gateway.providers(), "stdio MCP server (caldav-mcp, Node.js), a native process");
    let unreviewed = tools(&gateway, &config_path).await;

    show::heading("The agent's turn");
    let conversation = turn(&gateway, scenario::caldav_model(), scenario::caldav_conversation()).await;
    show::heading("The second line of defence: the address typed into a new conversation");
    println!("  The guard refused the injected call because it remembers which result carried the address.");
    println!("  Typed by the user instead, the address comes from no result: the call reaches the server,");
    println!("  and the egress grant is what stops its connection.");
    let second_line = turn(&gateway, scenario::second_line_model(), scenario::second_line_conversation()).await;
    close(gateway).await?;
    drop(radicale);

    show::heading("Connections the server made");
    let connections = show::connections(&config.audit.path).context("reading the audit log")?;
    show::connection_summary(&connections);
    show::heading("The trust checklist, checked against what the model read and the connections made");
    let granted = granted.first().cloned().unwrap_or_default();
    let (exchanges, second) = (show::exchanges(&conversation.0), show::exchanges(&second_line.0));
    let checks = checks::caldav(&exchanges, &second, &connections, &granted);
    print_checks(&checks);
    verify(&config)?;
    conversation.1.context("the agent's turn")?;
    second_line.1.context("the second line's turn")?;
    Ok(checks.iter().all(|c| c.holds) && unreviewed.is_empty())
}

/// The third act: someone else's PostgreSQL MCP server on a real PostgreSQL, through
/// `wasmgate serve` as a user's MCP client runs it. Whether every check held.
async fn third_act(state_dir: &Path) -> anyhow::Result<bool> {
    show::heading("Third act: a third-party PostgreSQL MCP server on a real PostgreSQL, through `wasmgate serve`");
    let peers = caldav::Peers::find()?;
    let databases = postgres::Databases::start().context("starting PostgreSQL")?;
    println!("  shop database:    PostgreSQL at {} (loopback), tables customers and orders;", databases.shop_host());
    println!("                    order 2's note carries an injected instruction");
    println!("  payroll database: PostgreSQL at 127.0.0.1:{} (loopback), granted to nobody", databases.payroll.port);
    println!("  MCP server:       @modelcontextprotocol/server-postgres 0.6.2 (npm), three times: shop, payroll");
    println!(
        "                    and warehouse ({}), each with its own database on its command line",
        postgres::WAREHOUSE_HOST
    );
    let config_path = postgres::write_config(&state_dir.join("postgres"), &peers, &databases)?;
    let config = Config::load(&config_path)?;
    println!("  config:           {} (examples/calendar/postgres/, filled in)", show::short(&config_path));
    println!(
        "  egress grant:     network_hosts = [\"{}\"] for all three: a plain connect, no proxy",
        databases.shop_host()
    );
    println!("  client:           a scripted MCP client of `wasmgate serve --config {}`", show::short(&config_path));
    show::heading("The client's session");
    let client = postgres::serve(&config_path).await?;
    let session = postgres::session(&client).await;
    client.close().await;
    let (tools, calls) = session?;
    let status = databases.shop.psql("SELECT status FROM orders WHERE id = 2").trim().to_owned();
    drop(databases);

    show::heading("Why the failed calls failed, from the audit log (the client reads only that they did)");
    let failures = postgres::failures(&config.audit.path).context("reading the audit log")?;
    for (provider, error) in &failures {
        println!("  {provider:<10} {error}");
    }
    show::heading("Connections the servers made");
    let connections = show::connections(&config.audit.path).context("reading the audit log")?;
    show::connection_summary(&connections);
    show::heading("The trust checklist, checked against what the client read, the log and the connections made");
    let checks = checks::postgres(&tools, &calls, &failures, &connections, &status);
    print_checks(&checks);
    verify(&config)?;
    Ok(checks.iter().all(|c| c.holds))
}

/// Prints every tool's state; returns those withheld until reviewed.
async fn tools(gateway: &Gateway, config_path: &Path) -> Vec<String> {
    show::heading("Tools, and what the policy says about each");
    let statuses = gateway.tool_statuses().await;
    show::tools(&statuses);
    let unreviewed: Vec<String> = statuses
        .iter()
        .filter(|s| matches!(s.state, ToolState::Unreviewed | ToolState::Changed(_)))
        .map(|s| s.exposed.clone())
        .collect();
    if !unreviewed.is_empty() {
        println!("\n  withheld until reviewed: {}", unreviewed.join(", "));
        println!("  (a definition changed since the committed lock was written: review it with");
        println!("   `target/debug/wasmgate review --config {}`)", show::short(config_path));
    }
    unreviewed
}

/// Runs one scripted turn over the gateway's tools and prints it.
async fn turn(
    gateway: &Gateway,
    model: wasmgate_agent::ScriptedModel,
    mut conversation: Vec<wasmgate_agent::Message>,
) -> (Vec<wasmgate_agent::Message>, Result<(), wasmgate_agent::AgentError>) {
    let cancel = CancellationToken::new();
    let outcome =
        run_agent(&model, gateway.toolset.as_ref(), &AllowAll, &mut conversation, &AgentConfig::default(), &cancel)
            .await;
    show::conversation(&conversation);
    match &outcome {
        Ok(_) => println!("The turn ended with the model's answer."),
        Err(error) => println!("The turn ended without an answer: {error}"),
    }
    (conversation, outcome.map(|_| ()))
}

fn print_checks(checks: &[checks::Check]) {
    for check in checks {
        println!("  {}  {}", if check.holds { "ok  " } else { "FAIL" }, check.claim);
    }
}

/// Closes the gateway and its audit log.
async fn close(gateway: Gateway) -> anyhow::Result<()> {
    gateway.close().await;
    let mut audit = Arc::clone(gateway.guard.audit());
    drop(gateway);
    // The egress proxy's last connections end a moment after their server does, and each
    // records itself in the log on its way out: wait for them to let go of it (10 s at
    // most), so that the log is closed with every record in it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let audit = loop {
        match Arc::try_unwrap(audit) {
            Ok(audit) => break audit,
            Err(shared) if std::time::Instant::now() < deadline => {
                audit = shared;
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            Err(_) => bail!("the audit log is still in use 10 s after the gateway closed"),
        }
    };
    audit.close().context("closing the audit log")
}

/// Verifies the closed audit log of `config` and prints its records.
fn verify(config: &Config) -> anyhow::Result<()> {
    show::heading("Audit log");
    println!("  {}", show::short(&config.audit.path));
    let summary = wasmgate_audit::verify(&config.audit.path).context("verifying the audit log")?;
    println!(
        "  verified: {} records, chain intact (last seq {}, last hash {})",
        summary.records, summary.last_seq, summary.last_hash
    );
    show::audit_records(&config.audit.path).context("reading the audit log")?;
    println!("  check it yourself: target/debug/wasmgate audit verify {}", show::short(&config.audit.path));
    Ok(())
}
