//! `wasmgate scan FILE`: the injection detector on a text, as it would judge a result;
//! `wasmgate scan --corpus FILE`: on every text of a JSON-lines corpus
//! (`{"family": ..., "text": ...}` per line), with how many of each family it flags.

use std::collections::BTreeMap;
use std::io::BufRead as _;
use std::path::PathBuf;

use anyhow::{Context as _, bail};
use clap::Args;
use wasmgate_policy::detect;

/// The largest text or corpus read.
const MAX_INPUT_BYTES: u64 = 256 << 20;

#[derive(Debug, Args)]
pub struct ScanArgs {
    /// The text to scan (`-` for standard input), or with `--corpus` a JSON-lines corpus.
    file: PathBuf,
    /// Read FILE as a corpus: one `{"family": ..., "text": ...}` object per line; print
    /// the share of each family's texts that the detector flags.
    #[arg(long)]
    corpus: bool,
}

/// Scans; `Ok(false)` (exit status 2) when a single text is flagged.
pub fn run(args: ScanArgs) -> anyhow::Result<bool> {
    if args.corpus {
        corpus(&args.file)?;
        return Ok(true);
    }
    let text = if args.file.as_os_str() == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::Read::take(std::io::stdin(), MAX_INPUT_BYTES), &mut text)?;
        text
    } else {
        read(&args.file)?
    };
    let found = detect(&text);
    if found.is_empty() {
        println!("nothing found");
        return Ok(true);
    }
    for flag in &found {
        println!("{}: {}", flag.rule, flag.description);
    }
    Ok(false)
}

fn read(path: &std::path::Path) -> anyhow::Result<String> {
    let file = std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let Some(text) = wasmgate_policy::read_capped_text(file, MAX_INPUT_BYTES)? else {
        bail!("{} is larger than {MAX_INPUT_BYTES} bytes", path.display());
    };
    Ok(text)
}

fn corpus(path: &std::path::Path) -> anyhow::Result<()> {
    let text = read(path)?;
    // Per family: texts, texts flagged, and how often each rule fired.
    let mut families: BTreeMap<String, (usize, usize, BTreeMap<&'static str, usize>)> = BTreeMap::new();
    for (number, line) in text.as_bytes().lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let row: serde_json::Value =
            serde_json::from_str(&line).with_context(|| format!("{}:{}", path.display(), number + 1))?;
        let (Some(family), Some(text)) = (row["family"].as_str(), row["text"].as_str()) else {
            bail!("{}:{}: expected {{\"family\": ..., \"text\": ...}}", path.display(), number + 1);
        };
        let found = detect(text);
        let entry = families.entry(family.to_owned()).or_default();
        entry.0 += 1;
        if !found.is_empty() {
            entry.1 += 1;
        }
        for flag in found {
            *entry.2.entry(flag.rule).or_default() += 1;
        }
    }
    let (mut all, mut flagged) = (0, 0);
    println!("{:<22} {:>6} {:>8} {:>8}  rules", "family", "texts", "flagged", "share");
    for (family, (texts, hits, rules)) in &families {
        all += texts;
        flagged += hits;
        let rules: Vec<String> = rules.iter().map(|(rule, n)| format!("{rule} {n}")).collect();
        println!("{family:<22} {texts:>6} {hits:>8} {:>7.1}%  {}", percent(*hits, *texts), rules.join(", "));
    }
    println!("{:<22} {all:>6} {flagged:>8} {:>7.1}%", "all", percent(flagged, all));
    Ok(())
}

#[allow(clippy::cast_precision_loss)] // counts far below 2^52
fn percent(part: usize, whole: usize) -> f64 {
    if whole == 0 { 0.0 } else { 100.0 * part as f64 / whole as f64 }
}
