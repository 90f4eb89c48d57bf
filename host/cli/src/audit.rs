//! `wasmgate audit verify FILE...`: check audit logs' hash chains and name the first bad
//! record of each, against an anchor or against the anchors a cluster's store holds;
//! `wasmgate audit anchor FILE`: print the anchor to keep elsewhere.

use std::collections::BTreeMap;
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};
use wasmgate_audit::{Anchor, ChainKey, Tail, VerifyOptions, verify_options};
use wasmgate_store::Store;

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Check that every record is intact, in order, and chained to the one before; with
    /// --store, check every replica's log against the anchor the cluster's store holds.
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
    #[command(flatten)]
    options: ReadArgs,
}

#[derive(Debug, Args)]
pub struct ReadArgs {
    /// The key file of a keyed log (`[audit] key_file`).
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// Accept a torn last record (a crash mid-write) and verify up to the one before it.
    #[arg(long)]
    allow_incomplete: bool,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The audit logs (JSON lines): one, or one per replica of a cluster.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    options: ReadArgs,
    /// An anchor printed by `wasmgate audit anchor` (`wasmgate-audit-anchor:SEQ:HASH`): the
    /// log must still hold that record, unchanged. One log only.
    #[arg(long, value_name = "ANCHOR", conflicts_with_all = ["store", "store_env"])]
    anchor: Option<String>,
    /// A cluster's store (`redis://HOST:PORT/DB`): each log is checked against the anchor
    /// it holds for the log's replica, and every replica it anchored must have its log
    /// given.
    #[arg(long, value_name = "URL", conflicts_with = "store_env")]
    store: Option<String>,
    /// The environment variable holding the store's URL instead (with its password).
    #[arg(long, value_name = "VAR")]
    store_env: Option<String>,
}

pub fn run(command: AuditCommand) -> anyhow::Result<()> {
    match command {
        AuditCommand::Verify(args) => verify(&args),
        AuditCommand::Anchor(args) => {
            println!("{}", check(&args.file, &args.options, None)?.anchor);
            Ok(())
        }
    }
}

fn verify(args: &VerifyArgs) -> anyhow::Result<()> {
    let store = match (&args.store, &args.store_env) {
        (Some(url), _) => Some(url.clone()),
        (None, Some(var)) => Some(std::env::var(var).with_context(|| format!("--store-env {var}: not set"))?),
        (None, None) => None,
    };
    let Some(url) = store else {
        let anchor = args.anchor.as_deref().map(str::parse::<Anchor>).transpose()?;
        if anchor.is_some() && args.files.len() > 1 {
            bail!("--anchor names one record of one log: give one log with it, or use --store for a cluster's logs");
        }
        let said = if anchor.is_some() { ", the anchored record is there unchanged" } else { "" };
        let mut broken = 0;
        for file in &args.files {
            broken += usize::from(report(file, &args.options, anchor.clone(), said).is_err());
        }
        return verdict(broken, args.files.len());
    };
    let anchors = anchors(&url)?;
    let mut logs = BTreeMap::new();
    for file in &args.files {
        match replica_of(file)? {
            Some(replica) => {
                if let Some(other) = logs.insert(replica.clone(), file.clone()) {
                    bail!("{} and {} are both logs of replica {replica}", other.display(), file.display());
                }
            }
            None => bail!("{}: no record names a replica; it is not the log of a cluster's replica", file.display()),
        }
    }
    let mut broken = 0;
    for (replica, file) in &logs {
        let anchor = anchors.get(replica).cloned();
        let said = match &anchor {
            Some(anchor) => format!(", replica {replica}'s anchored record (seq {}) is there unchanged", anchor.seq),
            None => format!(", replica {replica} (the store holds no anchor for it yet)"),
        };
        broken += usize::from(report(file, &args.options, anchor, &said).is_err());
    }
    let missing: Vec<_> = anchors.iter().filter(|(replica, _)| !logs.contains_key(*replica)).collect();
    for (replica, anchor) in &missing {
        eprintln!(
            "replica {replica}: the store anchored its record seq {}, but no log of it was given: a replica's log is \
             missing",
            anchor.seq
        );
    }
    verdict(broken + missing.len(), logs.len() + missing.len())
}

/// Verifies `file` (against `anchor`) and prints what was found; `said` adds to the line.
fn report(file: &Path, options: &ReadArgs, anchor: Option<Anchor>, said: &str) -> Result<(), ()> {
    match check(file, options, anchor) {
        Ok(summary) => {
            println!(
                "{}: {} records, chain intact{said} (last seq {}, last hash {})",
                file.display(),
                summary.records,
                summary.last_seq,
                summary.last_hash
            );
            if let Some(line) = summary.incomplete_last_line {
                println!("note: the last record (line {line}) is incomplete and was not checked");
            }
            Ok(())
        }
        Err(error) => {
            eprintln!("{error:#}");
            Err(())
        }
    }
}

fn verdict(broken: usize, of: usize) -> anyhow::Result<()> {
    if broken > 0 {
        bail!("{broken} of {of} logs failed verification");
    }
    Ok(())
}

/// Every replica's anchor in the store at `url`.
fn anchors(url: &str) -> anyhow::Result<BTreeMap<String, Anchor>> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("no async runtime")?;
    runtime.block_on(async {
        let store = Store::new(url, Duration::from_secs(5))?;
        Ok(store.anchors().await?)
    })
}

/// The replica a log's records name (the first that names one).
fn replica_of(file: &Path) -> anyhow::Result<Option<String>> {
    use std::io::Read as _;
    const MAX_LINE: u64 = wasmgate_audit::MAX_LINE_BYTES;
    let mut reader =
        std::io::BufReader::new(std::fs::File::open(file).with_context(|| format!("cannot read {}", file.display()))?);
    let mut line = Vec::new();
    loop {
        line.clear();
        // A record and its newline, and one byte more to tell a longer line.
        let read = (&mut reader)
            .take(MAX_LINE + 2)
            .read_until(b'\n', &mut line)
            .with_context(|| format!("cannot read {}", file.display()))?;
        if read == 0 {
            break;
        }
        if line.strip_suffix(b"\n").unwrap_or(&line).len() as u64 > MAX_LINE {
            bail!("{} holds a line over {MAX_LINE} bytes: it is no audit log", file.display());
        }
        // Only a line that can name one is parsed.
        if !line.windows(10).any(|w| w == b"\"replica\":") {
            continue;
        }
        if let Ok(record) = serde_json::from_slice::<serde_json::Value>(&line)
            && let Some(replica) = record.get("replica").and_then(serde_json::Value::as_str)
        {
            return Ok(Some(replica.to_owned()));
        }
    }
    Ok(None)
}

fn check(file: &Path, options: &ReadArgs, anchor: Option<Anchor>) -> anyhow::Result<wasmgate_audit::Summary> {
    let key = options.key.as_deref().map(ChainKey::load).transpose().context("--key")?;
    let tail = if options.allow_incomplete { Tail::AllowIncomplete } else { Tail::Strict };
    match verify_options(file, &VerifyOptions { tail, key, anchor }) {
        Ok(summary) => Ok(summary),
        Err(error) => bail!("{}: the chain is broken at {error}", file.display()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_replica_a_log_names_is_read_without_reading_a_line_past_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let named = dir.path().join("named.jsonl");
        std::fs::write(&named, "{\"seq\":1}\n{\"seq\":2,\"replica\":\"r1\"}\n").unwrap();
        assert_eq!(replica_of(&named).unwrap().as_deref(), Some("r1"));
        let hostile = dir.path().join("hostile.jsonl");
        let long = vec![b'x'; usize::try_from(wasmgate_audit::MAX_LINE_BYTES).unwrap() + 10];
        std::fs::write(&hostile, long).unwrap();
        let refused = replica_of(&hostile).unwrap_err().to_string();
        assert!(refused.contains("a line over"), "{refused}");
    }
}
