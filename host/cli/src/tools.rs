//! `wasmgate tools`: every provider, how it is confined, and each tool's state.

use std::sync::Arc;

use wasmgate_gateway::ToolState;
use wasmgate_guard::Unattended;
use wasmgate_policy::sanitize::escape_for_display;

use crate::open::ConfigArgs;

pub async fn run(args: ConfigArgs) -> anyhow::Result<()> {
    let gateway = args.start(Arc::new(Unattended)).await?;
    let statuses = gateway.tool_statuses().await;
    for provider in &gateway.providers {
        let kind = format!("{:?}", provider.kind).to_lowercase();
        println!("{} ({kind})", provider.name);
        if let Some(confinement) = &provider.confinement {
            println!("  confinement: {confinement}");
        }
        if let Some(why) = gateway.provider_trouble(&provider.name) {
            // A provider's own words may be in it (a server's error message).
            println!("  withheld: {}", escape_for_display(&why));
        }
        for status in statuses.iter().filter(|s| s.provider == provider.name) {
            println!("  {:<48} {}", status.exposed, status.state);
            match &status.state {
                ToolState::Changed(diff) => {
                    // The diff escapes the provider's text itself (`Diff`'s Display).
                    for line in diff.lines() {
                        println!("      {line}");
                    }
                }
                ToolState::Unusable(why) => println!("      {}", escape_for_display(why)),
                _ => {}
            }
        }
    }
    gateway.close().await;
    Ok(())
}
