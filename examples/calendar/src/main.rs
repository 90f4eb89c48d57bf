//! `calendar-demo [STATE_DIR]`: the calendar scenario end to end, in-process through the
//! gateway library. It writes the bundled configuration into a fresh state directory
//! (default `target/calendar-demo`), starts the gateway with nobody present to approve
//! anything, runs a scripted agent turn over the guarded tools, prints what the model
//! saw, and verifies the audit log. `scripts/demo.sh` builds and runs it.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use wasmgate_agent::{AgentConfig, AllowAll, CancellationToken, run_agent};
use wasmgate_example_calendar::setup::Setup;
use wasmgate_example_calendar::{checks, scenario, show};
use wasmgate_gateway::{Config, Gateway, ToolState};
use wasmgate_guard::Unattended;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_ansi(false).with_env_filter("warn").init();
    let state_dir = std::env::args_os().nth(1).map_or_else(Setup::default_state_dir, PathBuf::from);
    let setup = Setup::new(&state_dir);
    let config_path = setup.write()?;
    let config = Config::load(&config_path)?;

    show::heading("wasmgate calendar demo");
    println!("  state:    {} (fresh on every run)", show::short(&state_dir));
    println!("  config:   {} (examples/calendar/wasmgate.toml, filled in)", show::short(&config_path));
    println!("  policy:   {} (examples/calendar/policy.toml, filled in)", show::short(&config.policy));
    println!("  reviewed: {}", show::short(&config.lock));
    println!("  approver: unattended: nobody is present, so every \"ask\" is answered no");

    let gateway = Gateway::start(&config, Arc::new(Unattended)).await.context("starting the gateway")?;
    show::heading("Providers");
    show::providers(&gateway.providers);
    show::heading("Tools, and what the policy says about each");
    let statuses = gateway.tool_statuses().await;
    show::tools(&statuses);
    let unreviewed: Vec<&str> = statuses
        .iter()
        .filter(|s| matches!(s.state, ToolState::Unreviewed | ToolState::Changed(_)))
        .map(|s| s.exposed.as_str())
        .collect();
    if !unreviewed.is_empty() {
        println!("\n  withheld until reviewed: {}", unreviewed.join(", "));
        println!("  (a definition changed since examples/calendar/wasmgate.lock was written: review it with");
        println!("   `target/debug/wasmgate review --config {}`)", show::short(&config_path));
    }

    show::heading("The agent's turn");
    let model = scenario::model();
    let mut conversation = scenario::conversation();
    let cancel = CancellationToken::new();
    let outcome =
        run_agent(&model, gateway.toolset.as_ref(), &AllowAll, &mut conversation, &AgentConfig::default(), &cancel)
            .await;
    show::conversation(&conversation);
    match &outcome {
        Ok(_) => println!("The turn ended with the model's answer."),
        Err(error) => println!("The turn ended without an answer: {error}"),
    }

    show::heading("The trust checklist, checked against what the model read");
    let checks = checks::run(&show::exchanges(&conversation));
    for check in &checks {
        println!("  {}  {}", if check.holds { "ok  " } else { "FAIL" }, check.claim);
    }

    gateway.close().await;
    let audit = Arc::clone(gateway.guard.audit());
    drop(gateway);
    let Ok(audit) = Arc::try_unwrap(audit) else {
        bail!("the audit log is still in use after the gateway closed");
    };
    audit.close().context("closing the audit log")?;
    show::heading("Audit log");
    println!("  {}", show::short(&config.audit.path));
    let summary = wasmgate_audit::verify(&config.audit.path).context("verifying the audit log")?;
    println!(
        "  verified: {} records, chain intact (last seq {}, last hash {})",
        summary.records, summary.last_seq, summary.last_hash
    );
    show::audit_records(&config.audit.path).context("reading the audit log")?;
    println!("  check it yourself: target/debug/wasmgate audit verify {}", show::short(&config.audit.path));

    outcome.context("the agent's turn")?;
    if checks.iter().any(|c| !c.holds) || !unreviewed.is_empty() {
        bail!("the scenario did not go as the checklist says (see above)");
    }
    Ok(())
}
