//! `wasmgate audit verify FILE`: check an audit log's hash chain and name the first bad
//! record.

use std::path::PathBuf;

use anyhow::bail;
use clap::{Args, Subcommand};
use wasmgate_audit::{Tail, verify_with};

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Check that every record is intact, in order, and chained to the one before.
    Verify(VerifyArgs),
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The audit log (JSON lines).
    file: PathBuf,
    /// Accept a torn last record (a crash mid-write) and verify up to the one before it.
    #[arg(long)]
    allow_incomplete: bool,
}

pub fn run(command: AuditCommand) -> anyhow::Result<()> {
    let AuditCommand::Verify(args) = command;
    let tail = if args.allow_incomplete { Tail::AllowIncomplete } else { Tail::Strict };
    match verify_with(&args.file, tail) {
        Ok(summary) => {
            println!(
                "{}: {} records, chain intact (last seq {}, last hash {})",
                args.file.display(),
                summary.records,
                summary.last_seq,
                summary.last_hash
            );
            if let Some(line) = summary.incomplete_last_line {
                println!("note: the last record (line {line}) is incomplete and was not checked");
            }
            Ok(())
        }
        Err(error) => bail!("{}: the chain is broken at {error}", args.file.display()),
    }
}
