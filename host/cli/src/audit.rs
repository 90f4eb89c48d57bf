//! `wasmgate audit verify FILE`: check an audit log's hash chain and name the first bad
//! record; `wasmgate audit anchor FILE`: print the anchor to keep elsewhere.

use std::path::PathBuf;

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};
use wasmgate_audit::{Anchor, ChainKey, Tail, VerifyOptions, verify_options};

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Check that every record is intact, in order, and chained to the one before.
    Verify(VerifyArgs),
    /// Verify the log and print its last record as an anchor: keep it where the gateway
    /// cannot write, and `audit verify --anchor` later finds a log cut short or rewritten
    /// behind it.
    Anchor(LogArgs),
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// The audit log (JSON lines).
    file: PathBuf,
    /// The key file of a keyed log (`[audit] key_file`).
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// Accept a torn last record (a crash mid-write) and verify up to the one before it.
    #[arg(long)]
    allow_incomplete: bool,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    log: LogArgs,
    /// An anchor printed by `wasmgate audit anchor` (`wasmgate-audit-anchor:SEQ:HASH`): the
    /// log must still hold that record, unchanged.
    #[arg(long, value_name = "ANCHOR")]
    anchor: Option<String>,
}

pub fn run(command: AuditCommand) -> anyhow::Result<()> {
    match command {
        AuditCommand::Verify(args) => {
            let anchor = args.anchor.as_deref().map(str::parse::<Anchor>).transpose().map_err(anyhow::Error::msg)?;
            let summary = check(&args.log, anchor)?;
            println!(
                "{}: {} records, chain intact{} (last seq {}, last hash {})",
                args.log.file.display(),
                summary.records,
                if args.anchor.is_some() { ", the anchored record is there unchanged" } else { "" },
                summary.last_seq,
                summary.last_hash
            );
            if let Some(line) = summary.incomplete_last_line {
                println!("note: the last record (line {line}) is incomplete and was not checked");
            }
            Ok(())
        }
        AuditCommand::Anchor(args) => {
            println!("{}", check(&args, None)?.anchor);
            Ok(())
        }
    }
}

fn check(args: &LogArgs, anchor: Option<Anchor>) -> anyhow::Result<wasmgate_audit::Summary> {
    let key = args.key.as_deref().map(ChainKey::load).transpose().map_err(anyhow::Error::msg).context("--key")?;
    let tail = if args.allow_incomplete { Tail::AllowIncomplete } else { Tail::Strict };
    match verify_options(&args.file, &VerifyOptions { tail, key, anchor }) {
        Ok(summary) => Ok(summary),
        Err(error) => bail!("{}: the chain is broken at {error}", args.file.display()),
    }
}
