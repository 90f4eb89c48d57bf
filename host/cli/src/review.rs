//! `wasmgate review`: show each new or changed tool definition and provider code, and
//! pin the ones approved in the lock file.
//!
//! With a gateway of the configuration running, the review goes through its control
//! socket: the gateway shows what waits, takes each decision (writing the lock file
//! itself, and the decision in its audit log with who made it), and serves what was
//! approved at once. Without one, the review starts the providers itself.

use std::io::{BufRead as _, Write as _};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use clap::Args;
use text_safety::escape_for_display;
use wasmgate_gateway::{Code, CodeReview, Config, Decision, DefinitionReview, Gateway, Reviews};
use wasmgate_guard::Unattended;

use crate::control::{self, Connection};
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

/// Where decisions go.
enum Target<'a> {
    /// A running gateway, through its control socket.
    Running(&'a Connection),
    /// No gateway runs: code is pinned in the lock file before anything starts.
    Files(&'a Config),
    /// No gateway runs: definitions are decided by one started for the review.
    Local { gateway: &'a Gateway, path: &'a Path, reviewer: &'a str },
}

impl Target<'_> {
    /// Takes `decision`; the answer line (`approved: ...`, `refused as asked: ...`,
    /// `refused: WHY`).
    async fn decide(&self, decision: &Decision) -> anyhow::Result<String> {
        match self {
            Target::Running(gateway) => gateway.ask(&control::decide_request(decision), control::MAX_LINE).await,
            Target::Files(config) => {
                if decision.approve {
                    let reviews = wasmgate_gateway::code_reviews(config)?;
                    let code = reviews
                        .into_iter()
                        .find(|c| c.provider == decision.provider && c.hash.as_ref() == Some(&decision.hash))
                        .context("the code changed while it was shown; review again")?;
                    wasmgate_gateway::approve_code(
                        config,
                        &code.provider,
                        &Code { pins: code.pins, fetches: code.fetches },
                    )?;
                    Ok(format!("approved: the code of {}", decision.provider))
                } else {
                    Ok(format!("refused as asked: the code of {}", decision.provider))
                }
            }
            Target::Local { gateway, path, reviewer } => match gateway.decide(path, decision, reviewer).await {
                Ok(_) if decision.approve => Ok(format!("approved: {}__{}", decision.provider, tool(decision))),
                Ok(_) => Ok(format!("refused as asked: {}__{}", decision.provider, tool(decision))),
                Err(e) => Ok(format!("refused: {e}")),
            },
        }
    }
}

fn tool(decision: &Decision) -> &str {
    decision.tool.as_deref().unwrap_or_default()
}

pub async fn run(args: ReviewArgs) -> anyhow::Result<()> {
    let config = args.config.load()?;
    let interactive = std::io::IsTerminal::is_terminal(&std::io::stdin());
    let gateways = Connection::all(&config.state_dir).await;
    if let Some(running) = gateways.first() {
        println!(
            "reviewing through the running gateway {} (it writes the lock file and serves what you approve)",
            running.pid
        );
        let reviews = fetch(running).await?;
        refuse_without_terminal(&args, interactive, &reviews)?;
        let target = Target::Running(running);
        let approved_code = review_code(&args, &target, &reviews.code).await?;
        // Approved code started its provider, whose tools wait for review now.
        let reviews = if approved_code > 0 { fetch(running).await? } else { reviews };
        refuse_without_terminal(&args, interactive, &reviews)?;
        return review_definitions(&args, &target, &reviews.definitions).await;
    }
    let code = wasmgate_gateway::code_reviews(&config)?;
    refuse_without_terminal(&args, interactive, &Reviews { code: code.clone(), definitions: Vec::new() })?;
    review_code(&args, &Target::Files(&config), &code).await?;
    let gateway = args.config.start(Arc::new(Unattended)).await?;
    let reviews = gateway.reviews(&config.path).await?;
    refuse_without_terminal(&args, interactive, &reviews)?;
    let reviewer = crate::control::local_reviewer(rustix::process::getuid().as_raw()).shown;
    let target = Target::Local { gateway: &gateway, path: &config.path, reviewer: &reviewer };
    let outcome = review_definitions(&args, &target, &reviews.definitions).await;
    gateway.close().await;
    outcome
}

/// What waits for review at the running `gateway`.
async fn fetch(gateway: &Connection) -> anyhow::Result<Reviews> {
    let answer = gateway.ask(control::REVIEWS_REQUEST, control::MAX_REVIEWS_LINE).await?;
    if let Some(why) = answer.strip_prefix("refused: ") {
        bail!("gateway {} cannot show what waits for review: {why}", gateway.pid);
    }
    serde_json::from_str(&answer).with_context(|| format!("gateway {} answered what is not a review", gateway.pid))
}

/// Refuses to go on when a decision would be asked without a terminal to ask on.
fn refuse_without_terminal(args: &ReviewArgs, interactive: bool, reviews: &Reviews) -> anyhow::Result<()> {
    let waiting =
        reviews.code.iter().any(|c| c.hash.is_some()) || reviews.definitions.iter().any(|d| d.unusable.is_none());
    if !args.yes && !interactive && waiting {
        bail!("no terminal to ask on; review interactively, or pass --yes to approve everything shown");
    }
    Ok(())
}

/// Shows each provider's code that is new or changed since review (by role: the file,
/// its SHA-256 and size) and pins the code approved. A provider whose code changed does
/// not run until then; new code runs, to list its tools for review. How many approved.
async fn review_code(args: &ReviewArgs, target: &Target<'_>, reviews: &[CodeReview]) -> anyhow::Result<usize> {
    let mut approved = 0;
    for review in reviews {
        let provider = &review.provider;
        let Some(hash) = &review.hash else {
            let why = review.unreadable.as_deref().unwrap_or("unknown");
            println!("\nthe code of provider {provider} cannot be read: {}", escape_for_display(why));
            continue;
        };
        if review.changed {
            println!(
                "\nthe code of provider {provider} CHANGED since it was reviewed (it does not run until approved):"
            );
            for change in &review.changes {
                println!("  {}", escape_for_display(change));
            }
        } else {
            println!("\nthe code of provider {provider} is NEW:");
            for (role, pin) in &review.pins {
                println!("  {role}: {} (sha256 {}, {} bytes)", escape_for_display(&pin.path), pin.sha256, pin.size);
            }
            if review.pins.is_empty() {
                println!("  (no file of its own to pin: an HTTP server, or a program of the system)");
            }
        }
        for grant in &review.grants {
            println!("  its policy grants: it {}", escape_for_display(grant));
        }
        if let Some(fetches) = &review.fetches {
            println!("WARNING: unpinnable: {}", escape_for_display(fetches));
        }
        let approve = ask(args.yes, "approve this code?")?;
        let decision = Decision { provider: provider.clone(), tool: None, hash: hash.clone(), approve };
        let answer = target.decide(&decision).await?;
        if approve && answer.starts_with("approved") {
            approved += 1;
            println!("approved the code of {provider}");
        } else {
            println!("{}", escape_for_display(&answer));
        }
    }
    Ok(approved)
}

/// Shows each withheld definition (its diff when it changed) and decides on it.
async fn review_definitions(
    args: &ReviewArgs,
    target: &Target<'_>,
    pending: &[DefinitionReview],
) -> anyhow::Result<()> {
    if pending.is_empty() {
        println!("nothing to review: every offered tool is reviewed and unchanged");
    }
    let mut approved = 0;
    let mut reviewable = 0;
    for item in pending {
        let (provider, name) = (&item.provider, &item.tool);
        if let Some(why) = &item.unusable {
            println!("\n{name} of provider {provider} is reviewed but WITHHELD: {}", escape_for_display(why));
            println!("(review cannot change that: the provider must send a definition without those characters)");
            continue;
        }
        reviewable += 1;
        match &item.diff {
            Some(diff) if item.changed => {
                println!("\n{name} of provider {provider} CHANGED since it was reviewed:");
                println!("{}", escape_for_display(diff));
            }
            _ => {
                println!("\n{name} of provider {provider} is NEW:");
                let shown = serde_json::to_string_pretty(&item.definition).unwrap_or_default();
                println!("{}", escape_for_display(&shown));
            }
        }
        if let Some(why) = &item.sink {
            println!(
                "SINK: {}. A value of an untrusted result in its arguments, and a call after a flagged result, \
                 follow the policy's `sink_` flow rules",
                escape_for_display(why)
            );
        }
        if let Some(why) = &item.schema {
            println!("WITHHELD even if approved: its inputSchema: {}", escape_for_display(why));
        }
        for warning in &item.warnings {
            let (at, found) = warning.split_once(": ").unwrap_or((warning, ""));
            println!(
                "WARNING: {} reads like instructions to the model ({}). A tool's text reaches the model \
                 beside the tool: approve it only if you trust what it asks.",
                escape_for_display(at),
                escape_for_display(found)
            );
        }
        let approve = ask(args.yes, "approve this definition?")?;
        let decision =
            Decision { provider: provider.clone(), tool: Some(name.clone()), hash: item.hash.clone(), approve };
        let answer = target.decide(&decision).await?;
        if approve && answer.starts_with("approved") {
            approved += 1;
        }
        println!("{}", escape_for_display(&answer));
    }
    println!("{approved} of {reviewable} definitions approved");
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
