//! Continuing an existing log: find its last complete record, so the next record gets the next
//! `seq` and chains to it.
//!
//! A record is complete when its line ends in `\n` (the writer writes each record and its newline
//! in one write). Bytes after the last newline are a torn record from a process killed mid-write:
//! its append never returned, so no call ran on the strength of it. Opening the log truncates those
//! bytes (and fsyncs) and reports how many there were, and the log records a `warning` saying so.

use crate::chain::Chain;
use crate::writer::Head;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};

/// The longest last line that will be read back.
pub const MAX_LINE_BYTES: u64 = 4 << 20;
const CHUNK: u64 = 64 * 1024;

/// Where the chain continues from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tail {
    pub next_seq: u64,
    pub prev: String,
    /// Bytes of a torn last record that were cut off.
    pub truncated: u64,
    /// The last complete record, as an anchor.
    pub head: Head,
}

/// Reads (and repairs) the tail of `file`, to continue it under `chain`. Non-regular files
/// (`/dev/full`) start a fresh chain.
pub(crate) fn recover(file: &mut File, chain: &Chain) -> Result<Tail, String> {
    let meta = file.metadata().map_err(|e| e.to_string())?;
    let fresh = Tail { next_seq: 1, prev: chain.genesis(), truncated: 0, head: Head::default() };
    if !meta.is_file() || meta.len() == 0 {
        return Ok(fresh);
    }
    let len = meta.len();
    let end = last_newline(file, len).map_err(|e| e.to_string())?.map_or(0, |p| p + 1);
    let truncated = len - end;
    if truncated > 0 {
        file.set_len(end).map_err(|e| format!("cannot cut off the incomplete last record: {e}"))?;
        file.sync_all().map_err(|e| e.to_string())?;
    }
    if end == 0 {
        return Ok(Tail { truncated, ..fresh });
    }
    let start = last_newline(file, end - 1).map_err(|e| e.to_string())?.map_or(0, |p| p + 1);
    if end - 1 - start > MAX_LINE_BYTES {
        return Err(format!("the last record is longer than {MAX_LINE_BYTES} bytes"));
    }
    let mut line = vec![0; usize::try_from(end - 1 - start).map_err(|e| e.to_string())?];
    file.seek(SeekFrom::Start(start)).map_err(|e| e.to_string())?;
    file.read_exact(&mut line).map_err(|e| e.to_string())?;
    let record: serde_json::Value = serde_json::from_slice(&line).map_err(|e| format!("not JSON: {e}"))?;
    let seq = record.get("seq").and_then(serde_json::Value::as_u64).ok_or("no `seq` number")?;
    let next_seq = seq.checked_add(1).ok_or("`seq` is at its maximum")?;
    Ok(Tail { next_seq, prev: chain.link(&line), truncated, head: Head { seq, line } })
}

/// Checks that the first record of a non-empty log chains to `expected` (the genesis of
/// `chain`, or the link of the last record of the rotated file `after`) and returns its
/// `seq`. A log written with another key, or none, is refused: continuing it would break
/// its chain.
/// The next line of `reader`, its newline kept, read no further than a record can be.
fn bounded_line(reader: &mut impl BufRead) -> Result<Vec<u8>, String> {
    let mut line = Vec::new();
    reader.take(MAX_LINE_BYTES + 1).read_until(b'\n', &mut line).map_err(|e| e.to_string())?;
    Ok(line)
}

/// Whether the records of `file` (a rotated file of the log) chain under `chain`'s key:
/// its second record's `prev` is the link of its first, or, when it holds one record and
/// `first_of_set`, that record's `prev` is the genesis. A log whose current file is empty
/// has no record of its own to check the key with, so its newest rotated file is checked.
pub(crate) fn check_keyed(file: &mut File, chain: &Chain, first_of_set: bool) -> Result<(), String> {
    file.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(&mut *file);
    let first = bounded_line(&mut reader)?;
    let second = bounded_line(&mut reader)?;
    let prev = |line: &[u8]| -> Option<String> {
        let record: serde_json::Value = serde_json::from_slice(line.strip_suffix(b"\n").unwrap_or(line)).ok()?;
        record.get("prev").and_then(serde_json::Value::as_str).map(str::to_owned)
    };
    let (linked, expected) = if second.ends_with(b"\n") {
        (prev(&second), chain.link(first.strip_suffix(b"\n").unwrap_or(&first)))
    } else if first_of_set && first.ends_with(b"\n") {
        (prev(&first), chain.genesis())
    } else {
        return Ok(());
    };
    if linked.as_deref() == Some(expected.as_str()) {
        return Ok(());
    }
    Err(if chain.is_keyed() {
        "its newest rotated file is not chained with the configured key (it was written without a key, or with \
         another one): configure the key it was written with, or start a new log"
            .to_owned()
    } else {
        "its newest rotated file is chained with a key: configure the key it was written with (`[audit] key_file`), \
         or start a new log"
            .to_owned()
    })
}

pub(crate) fn check_start(
    file: &mut File,
    chain: &Chain,
    expected: &str,
    after: Option<&std::path::Path>,
) -> Result<u64, String> {
    file.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
    let first = bounded_line(&mut BufReader::new(&mut *file))?;
    let record: serde_json::Value =
        serde_json::from_slice(first.strip_suffix(b"\n").unwrap_or(&first)).map_err(|e| format!("not JSON: {e}"))?;
    let seq = record.get("seq").and_then(serde_json::Value::as_u64).ok_or("its first record has no `seq` number")?;
    if record.get("prev").and_then(serde_json::Value::as_str) == Some(expected) {
        return Ok(seq);
    }
    Err(match after {
        Some(last) => format!(
            "its first record does not chain to the last record of {}, the file rotated before it (or the two \
             were written under different keys): run `wasmgate audit verify` on the log, and move the files that \
             do not belong to it aside",
            last.display()
        ),
        None if chain.is_keyed() => "its chain is not keyed with the configured key (it was written without a key, \
             or with another one): start a new log file, or configure the key it was written with"
            .to_owned(),
        None => "its chain is keyed, or its first record was altered: configure the key it was written with \
             (`[audit] key_file`), or start a new log file"
            .to_owned(),
    })
}

/// The offset of the last `\n` before `before`, reading backwards in chunks.
fn last_newline(file: &mut File, before: u64) -> std::io::Result<Option<u64>> {
    let mut end = before;
    let mut buf = vec![0; CHUNK as usize];
    while end > 0 {
        let start = end.saturating_sub(CHUNK);
        let n = (end - start) as usize;
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut buf[..n])?;
        if let Some(i) = buf[..n].iter().rposition(|&b| b == b'\n') {
            return Ok(Some(start + i as u64));
        }
        end = start;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::io::Write;

    /// The first record of an unkeyed log, with `rest` after its `seq` and `prev`.
    fn first(rest: &str) -> String {
        format!("{{\"seq\":1,\"prev\":\"{}\"{rest}}}\n", crate::chain::genesis_hash())
    }

    fn file_with(bytes: &[u8]) -> (tempfile::TempDir, File) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, bytes).unwrap();
        let f = std::fs::OpenOptions::new().read(true).append(true).open(&path).unwrap();
        (dir, f)
    }

    #[test]
    fn an_empty_log_starts_at_genesis() {
        let (_d, mut f) = file_with(b"");
        assert_eq!(
            recover(&mut f, &Chain::default()).unwrap(),
            Tail { next_seq: 1, prev: crate::chain::genesis_hash(), truncated: 0, head: Head::default() }
        );
    }

    #[test]
    fn the_chain_continues_after_the_last_complete_record() {
        let (_d, mut f) = file_with(format!("{}{{\"seq\":2}}\n", first("")).as_bytes());
        assert_eq!(
            recover(&mut f, &Chain::default()).unwrap(),
            Tail {
                next_seq: 3,
                prev: crate::chain::line_hash(b"{\"seq\":2}"),
                truncated: 0,
                head: Head { seq: 2, line: b"{\"seq\":2}".to_vec() }
            }
        );
    }

    #[test]
    fn a_torn_last_record_is_cut_off() {
        let (_d, mut f) = file_with(format!("{}{{\"seq\":2,\"ti", first("")).as_bytes());
        let tail = recover(&mut f, &Chain::default()).unwrap();
        assert_eq!((tail.next_seq, tail.truncated), (2, 12));
        assert_eq!(f.metadata().unwrap().len(), first("").len() as u64);
        f.write_all(b"x").unwrap();
    }

    #[test]
    fn a_log_that_is_only_a_torn_record_starts_fresh() {
        let (_d, mut f) = file_with(b"{\"seq\":1,");
        assert_eq!(
            recover(&mut f, &Chain::default()).unwrap(),
            Tail { next_seq: 1, prev: crate::chain::genesis_hash(), truncated: 9, head: Head::default() }
        );
    }

    #[test]
    fn a_last_line_longer_than_a_chunk_is_found() {
        let long = first(&format!(",\"x\":\"{}\"", "a".repeat(200_000)));
        let (_d, mut f) = file_with(long.as_bytes());
        assert_eq!(recover(&mut f, &Chain::default()).unwrap().next_seq, 2);
    }

    #[test]
    fn a_last_line_over_the_bound_is_an_error_not_an_allocation() {
        let mut bytes = first("").into_bytes();
        bytes.resize(bytes.len() + MAX_LINE_BYTES as usize + 1, b'x');
        bytes.push(b'\n');
        let (_d, mut f) = file_with(&bytes);
        assert!(recover(&mut f, &Chain::default()).unwrap_err().contains("longer than"));
    }

    #[test]
    fn an_unreadable_last_record_is_an_error() {
        let (_d, mut f) = file_with(b"garbage\n");
        assert!(recover(&mut f, &Chain::default()).unwrap_err().starts_with("not JSON"));
        let (_d, mut f) = file_with(b"{\"seq\":-1}\n");
        assert_eq!(recover(&mut f, &Chain::default()).unwrap_err(), "no `seq` number");
    }

    #[test]
    fn a_log_is_continued_only_under_the_chain_it_was_written_with() {
        let keyed = Chain::new(Some(crate::chain::ChainKey::new(vec![9; 32]).unwrap()));
        let (_d, mut f) = file_with(first("").as_bytes());
        let check = |f: &mut File, chain: &Chain| check_start(f, chain, &chain.genesis(), None);
        assert!(check(&mut f, &keyed).unwrap_err().contains("not keyed with the configured key"));
        assert_eq!(check(&mut f, &Chain::default()).unwrap(), 1);
        let keyed_log = format!("{{\"seq\":1,\"prev\":\"{}\"}}\n", keyed.genesis());
        let (_d, mut f) = file_with(keyed_log.as_bytes());
        assert!(check(&mut f, &Chain::default()).unwrap_err().contains("its chain is keyed"));
        check(&mut f, &keyed).unwrap();
        let tail = recover(&mut f, &keyed).unwrap();
        assert_eq!(tail.prev, keyed.link(keyed_log.trim_end().as_bytes()));
    }
}
