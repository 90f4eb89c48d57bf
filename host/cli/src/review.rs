//! `wasmgate review`: show each new or changed tool definition and pin the ones approved
//! in the lock file.

use std::io::{BufRead as _, Write as _};
use std::sync::Arc;

use anyhow::bail;
use clap::Args;
use text_safety::escape_for_display;
use wasmgate_guard::Unattended;
use wasmgate_policy::{CodeState, ReviewState, clean_schema, poisoned};

use crate::open::ConfigArgs;

#[derive(Debug, Args)]
pub struct ReviewArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// Approve every definition shown, without asking (for scripts that have reviewed
    /// them some other way).
    #[arg(long)]
    yes: bool,
}

pub async fn run(args: ReviewArgs) -> anyhow::Result<()> {
    if !args.yes && !std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        let config = args.config.load()?;
        if wasmgate_gateway::review_code(&config)?.iter().any(|r| r.code.is_ok() && r.state != CodeState::Reviewed) {
            bail!("no terminal to ask on; review interactively, or pass --yes to approve everything shown");
        }
    }
    review_code(&args)?;
    let gateway = args.config.start(Arc::new(Unattended)).await?;
    gateway.toolset.refresh().await;
    let pending = gateway.toolset.withheld();
    if pending.is_empty() {
        println!("nothing to review: every offered tool is reviewed and unchanged");
    }
    let mut answers = (!args.yes).then(|| std::io::stdin().lock());
    if answers.is_some() && !std::io::IsTerminal::is_terminal(&std::io::stdin()) && !pending.is_empty() {
        bail!("no terminal to ask on; review interactively, or pass --yes to approve everything shown");
    }
    let mut approved = 0;
    let mut reviewable = 0;
    for item in &pending {
        let offer = &item.offer;
        if let Some(why) = &item.unusable {
            println!(
                "\n{} of provider {} is reviewed but WITHHELD: {}",
                offer.name,
                offer.provider,
                escape_for_display(why)
            );
            println!("(review cannot change that: the provider must send a definition without those characters)");
            continue;
        }
        reviewable += 1;
        match &item.state {
            ReviewState::Changed { diff } => {
                println!("\n{} of provider {} CHANGED since it was reviewed:", offer.name, offer.provider);
                println!("{}", escape_for_display(&diff.to_string()));
            }
            _ => {
                println!("\n{} of provider {} is NEW:", offer.name, offer.provider);
                let shown = serde_json::to_string_pretty(&offer.definition).unwrap_or_default();
                println!("{}", escape_for_display(&shown));
            }
        }
        if let Some(why) = gateway.guard.policy().sink_reason(&offer.provider, &offer.name, &offer.definition) {
            println!(
                "SINK: {}. A value of an untrusted result in its arguments, and a call after a flagged result, \
                 follow the policy's `sink_` flow rules",
                escape_for_display(&why)
            );
        }
        if let Some(Err(why)) = offer.definition.get("inputSchema").map(clean_schema) {
            println!("WITHHELD even if approved: its inputSchema: {}", escape_for_display(&why.to_string()));
        }
        for (at, found) in poisoned(&offer.definition) {
            println!(
                "WARNING: {at} reads like instructions to the model ({}). A tool's text reaches the model \
                 beside the tool: approve it only if you trust what it asks.",
                found.join("; ")
            );
        }
        let yes = match answers.as_mut() {
            None => true,
            Some(input) => {
                print!("approve this definition? [y/N] ");
                std::io::stdout().flush()?;
                let mut line = String::new();
                input.read_line(&mut line)?;
                matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
            }
        };
        if yes {
            gateway.guard.approve_definition(offer)?;
            approved += 1;
            println!("approved: {}__{}", offer.provider, offer.name);
        }
    }
    println!("{approved} of {reviewable} definitions approved");
    gateway.close().await;
    Ok(())
}

/// Shows each provider's code that is new or changed since review (by role: the file,
/// its SHA-256 and size) and pins the code approved. A provider whose code changed does
/// not run until then; new code runs, to list its tools for review.
fn review_code(args: &ReviewArgs) -> anyhow::Result<()> {
    let config = args.config.load()?;
    for review in wasmgate_gateway::review_code(&config)? {
        let provider = &review.provider;
        let code = match (&review.code, &review.state) {
            (_, CodeState::Reviewed) => continue,
            (Err(why), _) => {
                println!(
                    "\nthe code of provider {provider} cannot be read: {}",
                    escape_for_display(&wasmgate_core::report(why))
                );
                continue;
            }
            (Ok(code), CodeState::New) => {
                println!("\nthe code of provider {provider} is NEW:");
                for (role, pin) in &code.pins {
                    println!("  {role}: {} (sha256 {}, {} bytes)", escape_for_display(&pin.path), pin.sha256, pin.size);
                }
                if code.pins.is_empty() {
                    println!("  (no file of its own to pin: an HTTP server, or a program of the system)");
                }
                code
            }
            (Ok(code), CodeState::Changed(changes)) => {
                println!(
                    "\nthe code of provider {provider} CHANGED since it was reviewed (it does not run until approved):"
                );
                for change in changes {
                    println!("  {}", escape_for_display(&change.to_string()));
                }
                code
            }
        };
        for grant in &review.grants {
            println!("  its policy grants: it {}", escape_for_display(grant));
        }
        if let Some(fetches) = &code.fetches {
            println!("WARNING: unpinnable: {}", escape_for_display(fetches));
        }
        if ask(args.yes, "approve this code?")? {
            wasmgate_gateway::approve_code(&config, provider, code)?;
            println!("approved the code of {provider}");
        }
    }
    Ok(())
}

/// `yes`, or the answer of the person at the terminal.
fn ask(yes: bool, question: &str) -> anyhow::Result<bool> {
    if yes {
        return Ok(true);
    }
    print!("{question} [y/N] ");
    std::io::stdout().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
}
