//! `wasmgate call TOOL --args JSON`: one call through the whole pipeline (policy,
//! approval, sandbox formatting, audit), printing what an agent would see.

use std::sync::Arc;

use anyhow::{Context as _, bail};
use clap::Args;
use serde_json::Value;
use wasmgate_core::{CancellationToken, Toolset as _};
use wasmgate_guard::{Approver, Unattended};

use crate::open::{ConfigArgs, approver};

#[derive(Debug, Args)]
pub struct CallArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// The tool, as the agent sees it: `<provider>__<tool>`.
    tool: String,
    /// The arguments, a JSON object.
    #[arg(long, default_value = "{}", value_name = "JSON")]
    args: String,
    /// Never ask at the terminal: a call the policy marks `ask` is denied.
    #[arg(long)]
    unattended: bool,
}

pub async fn run(args: CallArgs) -> anyhow::Result<bool> {
    let input: Value = serde_json::from_str(&args.args).context("--args is not JSON")?;
    let approver: Arc<dyn Approver> = if args.unattended { Arc::new(Unattended) } else { approver() };
    let gateway = args.config.start(approver).await?;
    let tools = gateway.toolset.current().await;
    let Some(tool) = tools.iter().find(|t| t.spec.name == args.tool) else {
        let names: Vec<&str> = tools.iter().map(|t| t.spec.name.as_str()).collect();
        gateway.close().await;
        bail!("no tool {:?} is offered; offered: {} (see `wasmgate tools`)", args.tool, names.join(", "));
    };
    let cancel = CancellationToken::new();
    let outcome = tool.execute(input, cancel).await;
    gateway.close().await;
    match outcome {
        Ok(result) => {
            println!("{}", result.content);
            Ok(!result.is_error)
        }
        Err(error) => bail!("{error} ({})", error.detail()),
    }
}
