//! The file a log is written to, and rotation by size.
//!
//! A log at `PATH` is a set of files: `PATH` itself, which records are appended to, and
//! the files rotated aside, `PATH.N` with `N` the `seq` of their first record. When `PATH`
//! reaches [`Options::rotate_bytes`](crate::Options::rotate_bytes), the writer syncs it,
//! renames it to `PATH.N` and goes on in a new `PATH` whose first record chains to the last
//! record of `PATH.N`: the set, oldest first, is one chain, and verification reads it
//! whole. Rotated files are never removed by the gateway.
//!
//! A write that fails (a full disk) is cut back: the file is truncated to the records it
//! held before, so it never ends in part of a record, and the log can go on once the
//! write succeeds again (see `writer`).

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

/// The file records are appended to: its length and the `seq` of its first record.
#[derive(Debug)]
pub(crate) struct Segment {
    path: PathBuf,
    file: File,
    /// Bytes of whole records the file holds.
    len: u64,
    /// The `seq` of its first record (of the next record, while it is empty).
    first_seq: u64,
    /// Rotate once the file holds this many bytes.
    limit: Option<u64>,
}

/// Why an append failed.
#[derive(Debug)]
pub(crate) enum AppendFailure {
    /// Nothing of it stayed: the file holds the records it held before. Another write
    /// may succeed (once the disk has space again).
    Cut(io::Error),
    /// Part of it may have stayed and could not be cut off: the log must stop.
    Torn(String),
}

impl Segment {
    pub fn new(path: &Path, file: File, len: u64, first_seq: u64, limit: Option<u64>) -> Self {
        Segment { path: path.to_owned(), file, len, first_seq, limit }
    }

    /// Appends `bytes` (whole records); on failure cuts the file back to what it held.
    pub fn append(&mut self, bytes: &[u8]) -> Result<(), AppendFailure> {
        match (&self.file).write_all(bytes) {
            Ok(()) => {
                self.len += bytes.len() as u64;
                Ok(())
            }
            Err(error) => match self.file.set_len(self.len) {
                Ok(()) => Err(AppendFailure::Cut(error)),
                Err(cut) => {
                    Err(AppendFailure::Torn(format!("{error}, and the part written could not be cut off ({cut})")))
                }
            },
        }
    }

    /// Makes what was appended durable.
    pub fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    /// Whether the file has reached its rotation size.
    pub fn full(&self) -> bool {
        self.limit.is_some_and(|limit| self.len >= limit)
    }

    /// Syncs the file, renames it to `PATH.N` (`N` its first record's `seq`) and goes on
    /// in a new, locked file at `PATH` whose first record will be `next_seq`.
    pub fn rotate(&mut self, next_seq: u64) -> io::Result<()> {
        self.file.sync_data()?;
        let aside = rotated_name(&self.path, self.first_seq);
        if aside.exists() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("cannot rotate the log to {}: the file exists", aside.display()),
            ));
        }
        std::fs::rename(&self.path, &aside)?;
        let file = OpenOptions::new().read(true).append(true).create_new(true).mode(0o600).open(&self.path)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(io::Error::other(format!("{} was opened by another process", self.path.display())));
            }
            Err(TryLockError::Error(e)) => return Err(e),
        }
        sync_parent(&self.path)?;
        self.file = file;
        self.len = 0;
        self.first_seq = next_seq;
        Ok(())
    }
}

/// The name of the file rotated aside from `path` whose first record is `first_seq`.
pub(crate) fn rotated_name(path: &Path, first_seq: u64) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{first_seq}"));
    PathBuf::from(name)
}

/// The files rotated aside from the log at `path`, oldest first, each with the `seq` of
/// its first record. Only names `PATH.N` with `N` a number written as rotation writes it
/// (digits, no leading zero) count.
pub(crate) fn rotated(path: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else { return Ok(Vec::new()) };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let prefix = format!("{name}.");
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry?;
        let file_name = entry.file_name();
        let Some(suffix) = file_name.to_str().and_then(|n| n.strip_prefix(&prefix)) else { continue };
        let canonical = !suffix.is_empty() && suffix.bytes().all(|b| b.is_ascii_digit()) && !suffix.starts_with('0');
        if let Some(seq) = suffix.parse::<u64>().ok().filter(|_| canonical) {
            found.push((seq, dir.join(&file_name)));
        }
    }
    found.sort();
    Ok(found)
}

/// Makes a new or renamed file's directory entry durable.
pub(crate) fn sync_parent(path: &Path) -> io::Result<()> {
    let parent: PathBuf = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    File::open(parent)?.sync_all()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn only_names_rotation_writes_are_rotated_files_and_they_come_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        for name in ["audit.jsonl.200", "audit.jsonl.3", "audit.jsonl.1", "audit.jsonl.01", "audit.jsonl.+4"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        for name in ["audit.jsonl.tmp", "audit.jsonl.", "other.jsonl.5", "audit.jsonl"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        let seqs: Vec<u64> = rotated(&path).unwrap().into_iter().map(|(seq, _)| seq).collect();
        assert_eq!(seqs, [1, 3, 200]);
        assert_eq!(rotated_name(&path, 17), dir.path().join("audit.jsonl.17"));
        assert!(rotated(&dir.path().join("missing/audit.jsonl")).unwrap().is_empty());
    }

    #[test]
    fn a_failed_append_leaves_the_file_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, "one\n").unwrap();
        // A handle that cannot write: the append fails, and the cut leaves the length.
        let file = File::open(&path).unwrap();
        let mut segment = Segment::new(&path, file, 4, 1, None);
        match segment.append(b"two\n") {
            Err(AppendFailure::Cut(_)) | Err(AppendFailure::Torn(_)) => {}
            Ok(()) => panic!("a read-only handle took a write"),
        }
        assert_eq!(std::fs::read(&path).unwrap(), b"one\n");
    }
}
