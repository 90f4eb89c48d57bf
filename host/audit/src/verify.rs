//! Checking a log: every line is a JSON object, `seq` runs 1, 2, 3, ... without gaps, and every
//! `prev` is the hash of the line before (the first record's, of the genesis string). The first
//! record that fails is named by its line number. A log that was rotated is checked as the
//! one chain its files make, oldest first (`PATH.N`, then `PATH`); an error in a rotated
//! file names that file.
//!
//! A last line without its newline is a record torn by a process stopped mid-write. [`verify`]
//! reports it as [`Problem::IncompleteLastRecord`]; [`verify_with`] and [`Tail::AllowIncomplete`]
//! verify up to the last complete record and report the torn line in the [`Summary`] instead.
//! Opening the log with [`crate::AuditLog::open`] cuts such a tail off.
//!
//! What a chain cannot show: the removal of records from the end (truncation), or replacing the
//! whole file. Keep an [`Anchor`] ([`Summary::anchor`], `wasmgate audit anchor`) somewhere the
//! writer of the log cannot reach, and verify with it ([`Options::anchor`]) to detect those. A
//! keyed log ([`Options::key`]) also cannot be rebuilt by a writer without the key.

use crate::chain::{Anchor, Chain, ChainKey, GENESIS, line_hash};
use crate::segment::rotated;
use crate::tail::MAX_LINE_BYTES;
use serde_json::Value;
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// What [`verify`] found in a good log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Complete records checked.
    pub records: u64,
    /// The last record's `seq` (0 for an empty log).
    pub last_seq: u64,
    /// The hash the next record must carry as `prev`.
    pub last_hash: String,
    /// The last record as an anchor: keep it elsewhere, and a log cut short behind it, or
    /// rewritten up to it, fails verification with it.
    pub anchor: Anchor,
    /// The line number of a torn last record, when [`Tail::AllowIncomplete`] let it pass.
    pub incomplete_last_line: Option<u64>,
}

/// How to verify.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// How to treat a torn last record.
    pub tail: Tail,
    /// The key of a keyed chain.
    pub key: Option<ChainKey>,
    /// A record the log must still hold, unchanged.
    pub anchor: Option<Anchor>,
}

/// How to treat a torn last record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Tail {
    /// It is an error ([`Problem::IncompleteLastRecord`]).
    #[default]
    Strict,
    /// Verify up to the last complete record and report it in [`Summary::incomplete_last_line`].
    AllowIncomplete,
}

/// The first bad record: its file when it is a rotated one, its line (1-based), its `seq`
/// if it could be read, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "{}line {line}{}: {problem}",
    file.as_ref().map(|f| format!("{}, ", f.display())).unwrap_or_default(),
    seq.map(|s| format!(" (seq {s})")).unwrap_or_default()
)]
pub struct VerifyError {
    /// The rotated file the record is in (`None`: the log's own file).
    pub file: Option<PathBuf>,
    /// 1-based line number.
    pub line: u64,
    /// The record's `seq`, when it has one.
    pub seq: Option<u64>,
    /// What is wrong.
    pub problem: Problem,
}

/// What is wrong with a record.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// The file could not be read.
    Io(String),
    /// The line is longer than any record the log writes.
    TooLong,
    /// The line is not a JSON object.
    NotJson(String),
    /// A required field is missing or has the wrong type.
    MissingField(&'static str),
    /// `seq` is not the one after the previous record's (a record was removed, duplicated or moved).
    Sequence {
        /// The `seq` that should be here.
        expected: u64,
    },
    /// The first record does not chain to the genesis hash (the front of the log was cut or altered).
    NotGenesis,
    /// The first record of a file does not chain to the last record of the file rotated
    /// before it (a file of the set is missing, or the one before was cut or altered).
    Unlinked,
    /// The next record's `prev` does not match this record: this record was altered (or the
    /// `prev` field of the next record was).
    Altered {
        /// The line whose `prev` does not match.
        next_line: u64,
    },
    /// The last line has no newline: a record torn by a process stopped mid-write.
    IncompleteLastRecord,
    /// The anchored record is not the one anchored: the log was rewritten up to it.
    AnchorMismatch,
    /// The log ends before the anchored record: it was cut short.
    CutShort {
        /// The anchored record's `seq`.
        anchored: u64,
        /// The log's last `seq`.
        last: u64,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Io(e) => write!(f, "cannot read the log: {e}"),
            Problem::TooLong => write!(f, "record longer than {MAX_LINE_BYTES} bytes"),
            Problem::NotJson(e) => write!(f, "not a JSON record: {e}"),
            Problem::MissingField(name) => write!(f, "record has no valid `{name}` field"),
            Problem::Sequence { expected } => {
                write!(f, "expected seq {expected}: a record was removed, duplicated or moved here")
            }
            Problem::NotGenesis => write!(
                f,
                "the first record does not start the chain: the log's start was cut or altered, or the log is keyed \
                 and was verified without its key (or with another one)"
            ),
            Problem::Unlinked => write!(
                f,
                "the first record of this file does not chain to the last record of the file rotated before it: \
                 a file of the set is missing, or the one before it was cut short or altered"
            ),
            Problem::AnchorMismatch => {
                write!(f, "this is not the anchored record: the log was rewritten up to the anchor")
            }
            Problem::CutShort { anchored, last } => write!(
                f,
                "the log ends at seq {last}, before the anchored record (seq {anchored}): records were removed from its end"
            ),
            Problem::Altered { next_line } => {
                write!(f, "record was altered after it was written: its hash does not match `prev` in line {next_line}")
            }
            Problem::IncompleteLastRecord => {
                write!(f, "incomplete last record (the writer stopped mid-write); the records before it are intact")
            }
        }
    }
}

/// Verifies the log at `path`, treating a torn last record as an error.
pub fn verify(path: &Path) -> Result<Summary, VerifyError> {
    verify_with(path, Tail::Strict)
}

/// Verifies the log at `path`.
pub fn verify_with(path: &Path, tail: Tail) -> Result<Summary, VerifyError> {
    verify_options(path, &Options { tail, ..Options::default() })
}

/// Whether the log at `path` still holds the record `anchor` names, unchanged: the line
/// whose `seq` it names has its hash. Reads up to that line only (a record's `seq` is its
/// line number), so a gateway can check its log against an anchor kept elsewhere before
/// it goes on writing; [`verify_options`] checks the whole chain.
///
/// # Errors
///
/// The log cannot be read.
pub fn holds(path: &Path, anchor: &Anchor) -> std::io::Result<bool> {
    if anchor.seq == 0 {
        return Ok(anchor.hash == line_hash(GENESIS));
    }
    // The file the anchored record is in: the newest whose first record is not after it.
    let mut files = rotated(path)?;
    if let Some(first) = first_seq(path)? {
        files.push((first, path.to_owned()));
    }
    let Some((first, file)) = files.into_iter().rev().find(|(first, _)| *first <= anchor.seq) else {
        return Ok(false);
    };
    let file = std::fs::File::open(file)?;
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    for number in first..=anchor.seq {
        line.clear();
        let read = (&mut reader).take(MAX_LINE_BYTES + 2).read_until(b'\n', &mut line)?;
        if read == 0 || line.last() != Some(&b'\n') {
            // The log ends (or a record is torn) before the anchored record.
            return Ok(false);
        }
        if number == anchor.seq {
            break;
        }
    }
    let line = &line[..line.len() - 1];
    let seq = serde_json::from_slice::<Value>(line).ok().and_then(|record| record.get("seq")?.as_u64());
    Ok(seq == Some(anchor.seq) && line_hash(line) == anchor.hash)
}

/// The `seq` of the first record of the file at `path`; `None` when it is missing or empty.
fn first_seq(path: &Path) -> std::io::Result<Option<u64>> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut line = Vec::new();
    BufReader::new(file).take(MAX_LINE_BYTES + 2).read_until(b'\n', &mut line)?;
    Ok(serde_json::from_slice::<Value>(line.strip_suffix(b"\n").unwrap_or(&line))
        .ok()
        .and_then(|record| record.get("seq")?.as_u64()))
}

/// Verifies the log at `path` as `options` say: with the files rotated aside from it,
/// oldest first, as one chain.
pub fn verify_options(path: &Path, options: &Options) -> Result<Summary, VerifyError> {
    let io = |file: Option<PathBuf>, e: std::io::Error| VerifyError {
        file,
        line: 0,
        seq: None,
        problem: Problem::Io(e.to_string()),
    };
    let aside = rotated(path).map_err(|e| io(None, e))?;
    let chain = Chain::new(options.key.clone());
    let mut summary = Summary {
        records: 0,
        last_seq: 0,
        last_hash: chain.genesis(),
        anchor: Anchor { seq: 0, hash: line_hash(GENESIS) },
        incomplete_last_line: None,
    };
    if let Some(anchor) = options.anchor.as_ref().filter(|a| a.seq == 0 && a.hash != summary.anchor.hash) {
        return Err(VerifyError { file: None, line: 0, seq: Some(anchor.seq), problem: Problem::AnchorMismatch });
    }
    let current = !aside.is_empty() && !path.exists();
    let mut lines_in_last = 0;
    for (i, (_, file)) in aside.iter().enumerate() {
        let last = current && i + 1 == aside.len();
        let tail = if last { options.tail } else { Tail::Strict };
        (summary, lines_in_last) = chain_file(file, Some(file), tail, options, &chain, summary)?;
    }
    if !current {
        (summary, lines_in_last) = chain_file(path, None, options.tail, options, &chain, summary)?;
    }
    if let Some(anchor) = &options.anchor
        && summary.last_seq < anchor.seq
    {
        return Err(VerifyError {
            file: None,
            line: lines_in_last + 1,
            seq: None,
            problem: Problem::CutShort { anchored: anchor.seq, last: summary.last_seq },
        });
    }
    Ok(summary)
}

/// Checks the records of one file of the log (named in errors as `named`), going on from
/// `summary`; returns the summary after it and how many complete records it holds.
fn chain_file(
    path: &Path,
    named: Option<&Path>,
    tail: Tail,
    options: &Options,
    chain: &Chain,
    mut summary: Summary,
) -> Result<(Summary, u64), VerifyError> {
    let first_file = summary.last_seq == 0;
    let err = |line, seq, problem| VerifyError { file: named.map(Path::to_owned), line, seq, problem };
    let file = std::fs::File::open(path).map_err(|e| err(0, None, Problem::Io(e.to_string())))?;
    let mut reader = BufReader::new(file);
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    loop {
        buf.clear();
        line_no += 1;
        let n = (&mut reader)
            .take(MAX_LINE_BYTES + 2)
            .read_until(b'\n', &mut buf)
            .map_err(|e| err(line_no, None, Problem::Io(e.to_string())))?;
        if n == 0 {
            return Ok((summary, line_no - 1));
        }
        if buf.last() != Some(&b'\n') {
            if buf.len() as u64 > MAX_LINE_BYTES {
                return Err(err(line_no, None, Problem::TooLong));
            }
            return match tail {
                Tail::Strict => Err(err(line_no, None, Problem::IncompleteLastRecord)),
                Tail::AllowIncomplete => Ok((Summary { incomplete_last_line: Some(line_no), ..summary }, line_no - 1)),
            };
        }
        let line = &buf[..buf.len() - 1];
        let (_, seq) = check_record(line, line_no, first_file, &summary).map_err(|(seq, problem)| {
            let at = if matches!(problem, Problem::Altered { .. }) { line_no - 1 } else { line_no };
            err(at, seq, problem)
        })?;
        let hash = line_hash(line);
        if options.anchor.as_ref().is_some_and(|a| a.seq == seq && a.hash != hash) {
            return Err(err(line_no, Some(seq), Problem::AnchorMismatch));
        }
        summary.records += 1;
        summary.last_seq = seq;
        summary.last_hash = chain.link(line);
        summary.anchor = Anchor { seq, hash };
    }
}

/// What is wrong with a record: its `seq` (if read), and the problem.
pub(crate) type BadRecord = (Option<u64>, Problem);

/// Checks one complete record (`line`, without its newline, at `line_no` of its file)
/// against the chain so far (`summary`): a JSON object whose `seq` follows, whose
/// `prev` is the last hash, with `time` and `event`. `first_file`: whether no record came
/// before its file (a bad `prev` on its first line is then [`Problem::NotGenesis`]).
/// Returns the record and its `seq`, or the `seq` (if read) and what is wrong; an
/// [`Problem::Altered`] names the record before (`line_no - 1`).
pub(crate) fn check_record(
    line: &[u8],
    line_no: u64,
    first_file: bool,
    summary: &Summary,
) -> Result<(serde_json::Map<String, Value>, u64), BadRecord> {
    let record: Value = serde_json::from_slice(line).map_err(|e| (None, Problem::NotJson(e.to_string())))?;
    let Value::Object(record) = record else { return Err((None, Problem::NotJson("not an object".into()))) };
    let seq = record.get("seq").and_then(Value::as_u64).ok_or((None, Problem::MissingField("seq")))?;
    let expected = summary.last_seq + 1;
    if seq != expected {
        return Err((Some(seq), Problem::Sequence { expected }));
    }
    let prev = record.get("prev").and_then(Value::as_str).ok_or((Some(seq), Problem::MissingField("prev")))?;
    if prev != summary.last_hash {
        return Err(match line_no {
            1 if first_file => (Some(seq), Problem::NotGenesis),
            1 => (Some(seq), Problem::Unlinked),
            _ => (Some(summary.last_seq), Problem::Altered { next_line: line_no }),
        });
    }
    for field in ["time", "event"] {
        if !record.get(field).is_some_and(Value::is_string) {
            return Err((Some(seq), Problem::MissingField(field)));
        }
    }
    Ok((record, seq))
}
