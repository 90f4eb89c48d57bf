//! `wasmgate approvals`: the calls waiting at the running gateways of the configuration
//! for a reviewer's answer (the policy's `ask_reviewers`), and answering one
//! (`--approve ID`, `--deny ID`) as the local user, over each gateway's control socket.

use anyhow::bail;
use clap::Args;
use text_safety::escape_for_display;
use wasmgate_guard::PendingAsk;

use crate::control::{self, AskAnswer, Connection};
use crate::open::ConfigArgs;

#[derive(Debug, Args)]
pub struct ApprovalsArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// Let the waiting call with this id run.
    #[arg(long, value_name = "ID", conflicts_with = "deny")]
    approve: Option<String>,
    /// Deny the waiting call with this id.
    #[arg(long, value_name = "ID")]
    deny: Option<String>,
}

/// Lists what waits, or answers one ask; false (exit status 2) when an answer was refused.
pub async fn run(args: ApprovalsArgs) -> anyhow::Result<bool> {
    let config = args.config.load()?;
    let gateways = Connection::running(&config).await?;
    let answer = match (args.approve, args.deny) {
        (Some(id), _) => Some(AskAnswer { id, approve: true }),
        (None, Some(id)) => Some(AskAnswer { id, approve: false }),
        (None, None) => None,
    };
    let Some(answer) = answer else {
        let mut none = true;
        for gateway in &gateways {
            let line = gateway.ask(control::APPROVALS, control::MAX_REVIEWS_LINE).await?;
            let pending: Vec<PendingAsk> = match serde_json::from_str(&line) {
                Ok(pending) => pending,
                Err(_) => bail!("gateway {} answered: {}", gateway.pid, escape_for_display(&line)),
            };
            for ask in pending {
                none = false;
                println!("{}", shown(&gateway.pid, &ask));
            }
        }
        if none {
            println!("no call waits for a reviewer");
        }
        return Ok(true);
    };
    // Each gateway holds its own asks: the one that has it answers.
    let mut last = String::new();
    for gateway in &gateways {
        last = gateway.ask(&control::answer_request(&answer), control::MAX_LINE).await?;
        if !last.contains("waits (answered already") {
            break;
        }
    }
    println!("{}", escape_for_display(&last));
    Ok(!last.starts_with("refused"))
}

/// One waiting ask, on one line, every text of the call escaped.
fn shown(pid: &str, ask: &PendingAsk) -> String {
    let caller = ask.caller.as_deref().unwrap_or("an unnamed caller");
    let left = ask.deadline_ms.saturating_sub(ask.asked_ms.max(now_ms())) / 1000;
    let what = if ask.subject == "call" { "run" } else { "see the flagged result of" };
    format!(
        "{id} (gateway {pid}): {caller} wants to {what} {tool} of {provider} with {arguments}; the policy says: {reason}; \
         denied unless answered within {left} s",
        id = escape_for_display(&ask.id),
        caller = escape_for_display(caller),
        tool = escape_for_display(&ask.tool),
        provider = escape_for_display(&ask.provider),
        arguments = escape_for_display(&ask.arguments.to_string()),
        reason = escape_for_display(&ask.reason),
    )
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
