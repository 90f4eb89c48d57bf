//! `wasmgate review`: show each new or changed tool definition and pin the ones approved
//! in the lock file.

use std::io::{BufRead as _, Write as _};
use std::sync::Arc;

use anyhow::bail;
use clap::Args;
use wasmgate_guard::Unattended;
use wasmgate_policy::sanitize::escape_for_display;
use wasmgate_policy::{ReviewState, definition};

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
        if let Some(Err(why)) = offer.definition.get("inputSchema").map(definition::clean_schema) {
            println!("WITHHELD even if approved: its inputSchema: {}", escape_for_display(&why));
        }
        for (at, found) in definition::poisoned(&offer.definition) {
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
