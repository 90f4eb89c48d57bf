//! Reading a log a page at a time, newest first, with filters (the web console's audit
//! view): [`Index`] reads each record once, verifying it as `verify` does (`seq` and
//! `prev`, across the files rotated aside), and keeps where the record is and the fields
//! a [`Filter`] looks at. A page reads only the records it shows.
//!
//! Each [`Index::refresh`] goes on from where the last one stopped: records appended
//! since are verified and indexed, and a file rotated aside is followed by its inode. A
//! rotated file that changes (its length or modification time), or a file of the set
//! that is replaced or removed, makes it start again from the first record.
//!
//! What it cannot see: a record altered in place in the file being appended to, after
//! it was indexed, without changing the file's length. `wasmgate audit verify` reads
//! the whole chain again.
//!
//! Memory is bounded: at most the index's capacity ([`MAX_INDEXED`] by default) of the
//! newest records are kept (older ones are verified, then dropped from the index).

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::chain::{Anchor, Chain, ChainKey, GENESIS, line_hash};
use crate::segment::rotated;
use crate::tail::MAX_LINE_BYTES;
use crate::verify::{Problem, Summary, VerifyError, check_record};

/// The most records an index keeps by default (the newest); older ones are verified
/// and dropped.
pub const MAX_INDEXED: usize = 1_000_000;

/// The most records one page holds.
pub const MAX_PAGE: usize = 500;

/// The longest text of a field kept for filtering (longer values are cut).
const MAX_FIELD_CHARS: usize = 256;

/// Which records a page shows: each field set must equal the record's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// The record's `caller`.
    pub caller: Option<String>,
    /// Its `provider`.
    pub provider: Option<String>,
    /// Its `tool`.
    pub tool: Option<String>,
    /// Its `event` (`requested`, `finished`, `review`, ...).
    pub event: Option<String>,
    /// Its `verdict` (`allow`, `ask`, `deny` on a `requested` record), or `approved` or
    /// `refused` for a record with `approved` (an `approval` or a `review`).
    pub verdict: Option<String>,
    /// Records at or after this time (RFC 3339, compared as text, so `2026-12-07` is the
    /// start of that day).
    pub since: Option<String>,
    /// Records before this time (as `since`).
    pub until: Option<String>,
}

/// A page of records, newest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Page {
    /// The records, as written.
    pub records: Vec<Map<String, Value>>,
    /// When older records match too: the `before` that shows the next page.
    pub older: Option<u64>,
}

/// What verifying the log found so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verified {
    /// Every record read chains to the one before.
    Intact {
        /// Records verified.
        records: u64,
        /// The last record, as an anchor.
        anchor: Anchor,
    },
    /// The first bad record; the records before it are indexed.
    Broken(VerifyError),
}

/// One file of the log as indexed so far.
#[derive(Debug)]
struct Tracked {
    /// Where it is now (`PATH`, or `PATH.N` once rotated).
    path: PathBuf,
    /// Which file it is.
    id: (u64, u64),
    /// Bytes of complete records indexed.
    len: u64,
    /// Lines indexed.
    lines: u64,
    /// For a file rotated aside and read to its end: its length and modification time,
    /// which must not change.
    sealed: Option<(u64, i64, i64)>,
}

/// Where one record is, and what a filter compares.
#[derive(Debug)]
struct Slot {
    seq: u64,
    file: u32,
    offset: u64,
    len: u32,
    time: Box<str>,
    caller: u32,
    provider: u32,
    tool: u32,
    event: u32,
    verdict: u32,
}

/// Field values, each kept once; 0 stands for none.
#[derive(Debug, Default)]
struct Names {
    ids: HashMap<Box<str>, u32>,
    count: u32,
}

/// The most field values kept. A record whose value comes after them (a model naming
/// made-up tools without end) takes [`UNNAMED`], which no filter matches: the memory the
/// names take stays bounded.
const MAX_NAMES: usize = 100_000;
/// The id of a value past [`MAX_NAMES`].
const UNNAMED: u32 = u32::MAX;

impl Names {
    fn id(&mut self, text: Option<&str>) -> u32 {
        let Some(text) = text else { return 0 };
        let text = cut(text);
        if let Some(id) = self.ids.get(text) {
            return *id;
        }
        if self.ids.len() >= MAX_NAMES {
            return UNNAMED;
        }
        self.count = self.count.saturating_add(1);
        self.ids.insert(text.into(), self.count);
        self.count
    }

    /// The id of `text` if any record has it (`Some(None)`: no record does).
    fn find(&self, text: Option<&String>) -> Option<Option<u32>> {
        text.map(|text| self.ids.get(cut(text)).copied())
    }
}

fn cut(text: &str) -> &str {
    match text.char_indices().nth(MAX_FIELD_CHARS) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// An index of the log at one path; see the module docs.
#[derive(Debug)]
pub struct Index {
    path: PathBuf,
    chain: Chain,
    capacity: usize,
    files: Vec<Tracked>,
    slots: VecDeque<Slot>,
    names: Names,
    summary: Summary,
    broken: Option<VerifyError>,
    /// The files and their lengths when the log was found broken: unchanged, it is not
    /// read again.
    broken_at: Vec<((u64, u64), u64)>,
}

impl Index {
    /// An index of the log at `path` (keyed with `key`, if it is), keeping up to
    /// [`MAX_INDEXED`] records. Nothing is read until [`Index::refresh`].
    #[must_use]
    pub fn new(path: &Path, key: Option<ChainKey>) -> Self {
        Self::with_capacity(path, key, MAX_INDEXED)
    }

    /// As [`Index::new`], keeping up to `capacity` records (at least one).
    #[must_use]
    pub fn with_capacity(path: &Path, key: Option<ChainKey>, capacity: usize) -> Self {
        let chain = Chain::new(key);
        let summary = Self::empty(&chain);
        Self {
            path: path.to_owned(),
            chain,
            capacity: capacity.max(1),
            files: Vec::new(),
            slots: VecDeque::new(),
            names: Names::default(),
            summary,
            broken: None,
            broken_at: Vec::new(),
        }
    }

    fn empty(chain: &Chain) -> Summary {
        Summary {
            records: 0,
            last_seq: 0,
            last_hash: chain.genesis(),
            anchor: Anchor { seq: 0, hash: line_hash(GENESIS) },
            incomplete_last_line: None,
        }
    }

    /// Forgets what was read: the next refresh starts from the first record.
    fn reset(&mut self) {
        *self = Self::with_capacity(&self.path, self.chain.key().cloned(), self.capacity);
    }

    /// What verification found so far.
    #[must_use]
    pub fn verified(&self) -> Verified {
        match &self.broken {
            Some(error) => Verified::Broken(error.clone()),
            None => Verified::Intact { records: self.summary.records, anchor: self.summary.anchor.clone() },
        }
    }

    /// How many records the index holds, and the `seq` of the oldest (0 when none).
    #[must_use]
    pub fn held(&self) -> (usize, u64) {
        (self.slots.len(), self.slots.front().map_or(0, |s| s.seq))
    }

    /// Reads what was appended since the last refresh (all of the log the first time, or
    /// when a file of the set changed).
    ///
    /// # Errors
    ///
    /// The log's directory cannot be listed. A record that fails verification is no
    /// error here: it is in [`Index::verified`].
    pub fn refresh(&mut self) -> std::io::Result<()> {
        let current = self.listing()?;
        if self.broken.is_some() {
            if shape(&current) == self.broken_at {
                return Ok(());
            }
            self.reset();
        }
        if !self.follows(&current) {
            self.reset();
        }
        let last = current.len().saturating_sub(1);
        for (i, (path, meta)) in current.iter().enumerate() {
            if i == self.files.len() {
                self.files.push(Tracked {
                    path: path.clone(),
                    id: (meta.dev(), meta.ino()),
                    len: 0,
                    lines: 0,
                    sealed: None,
                });
            }
            self.files[i].path.clone_from(path);
            if self.files[i].sealed.is_some() {
                continue;
            }
            self.read_file(i, i < last)?;
            if self.broken.is_some() {
                self.broken_at = shape(&current);
                return Ok(());
            }
            if i < last {
                self.files[i].sealed = Some((meta.len(), meta.mtime(), meta.mtime_nsec()));
            }
        }
        Ok(())
    }

    /// The log's files now, oldest first, with their metadata.
    fn listing(&self) -> std::io::Result<Vec<(PathBuf, std::fs::Metadata)>> {
        let mut files = Vec::new();
        for (_, path) in rotated(&self.path)? {
            match std::fs::metadata(&path) {
                Ok(meta) => files.push((path, meta)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        match std::fs::metadata(&self.path) {
            Ok(meta) => files.push((self.path.clone(), meta)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        Ok(files)
    }

    /// Whether the files indexed so far are, in order, the first of `current`, none cut
    /// short, and none sealed changed.
    fn follows(&self, current: &[(PathBuf, std::fs::Metadata)]) -> bool {
        self.files.len() <= current.len()
            && self.files.iter().zip(current).all(|(tracked, (_, meta))| {
                tracked.id == (meta.dev(), meta.ino())
                    && meta.len() >= tracked.len
                    && tracked.sealed.is_none_or(|sealed| sealed == (meta.len(), meta.mtime(), meta.mtime_nsec()))
            })
    }

    /// Verifies and indexes the records of file `i` from where it stopped; `rotated`:
    /// it is not the file appended to, so a torn last line is an error.
    fn read_file(&mut self, i: usize, rotated: bool) -> std::io::Result<()> {
        let named = (self.files[i].path != self.path).then(|| self.files[i].path.clone());
        let broken = |line, seq, problem| VerifyError { file: named.clone(), line, seq, problem };
        let mut file = File::open(&self.files[i].path)?;
        let mut offset = self.files[i].len;
        file.seek(SeekFrom::Start(offset))?;
        let mut reader = BufReader::new(file);
        let mut buf = Vec::new();
        let mut line_no = self.files[i].lines;
        let first_file = self.summary.last_seq == 0;
        loop {
            buf.clear();
            let n = (&mut reader).take(MAX_LINE_BYTES + 2).read_until(b'\n', &mut buf)?;
            if n == 0 {
                return Ok(());
            }
            if buf.last() != Some(&b'\n') {
                if buf.len() as u64 > MAX_LINE_BYTES {
                    self.broken = Some(broken(line_no + 1, None, Problem::TooLong));
                } else if rotated {
                    self.broken = Some(broken(line_no + 1, None, Problem::IncompleteLastRecord));
                }
                // The file appended to may end in a record being written: read it next time.
                return Ok(());
            }
            line_no += 1;
            let line = &buf[..buf.len() - 1];
            let (record, seq) = match check_record(line, line_no, first_file, &self.summary) {
                Ok(checked) => checked,
                Err((seq, problem)) => {
                    let at = if matches!(problem, Problem::Altered { .. }) { line_no - 1 } else { line_no };
                    self.broken = Some(broken(at, seq, problem));
                    return Ok(());
                }
            };
            let text = |field: &str| record.get(field).and_then(Value::as_str);
            let verdict = match (text("verdict"), record.get("approved").and_then(Value::as_bool)) {
                (Some(verdict), _) => Some(verdict),
                (None, Some(true)) => Some("approved"),
                (None, Some(false)) => Some("refused"),
                (None, None) => None,
            };
            let slot = Slot {
                seq,
                file: u32::try_from(i).unwrap_or(u32::MAX),
                offset,
                len: u32::try_from(line.len()).unwrap_or(u32::MAX),
                time: cut(text("time").unwrap_or_default()).into(),
                caller: self.names.id(text("caller")),
                provider: self.names.id(text("provider")),
                tool: self.names.id(text("tool")),
                event: self.names.id(text("event")),
                verdict: self.names.id(verdict),
            };
            self.slots.push_back(slot);
            if self.slots.len() > self.capacity {
                self.slots.pop_front();
            }
            self.summary.records += 1;
            self.summary.last_seq = seq;
            self.summary.last_hash = self.chain.link(line);
            self.summary.anchor = Anchor { seq, hash: line_hash(line) };
            offset += n as u64;
            self.files[i].len = offset;
            self.files[i].lines = line_no;
        }
    }

    /// The records that match `filter`, newest first, older than `before` (a `seq`;
    /// `None`: from the newest), at most `limit` (up to [`MAX_PAGE`]). Call
    /// [`Index::refresh`] first to include what was appended since.
    ///
    /// # Errors
    ///
    /// A file of the log cannot be read, or changed under the index (refresh, and ask
    /// again).
    pub fn page(&self, filter: &Filter, before: Option<u64>, limit: usize) -> std::io::Result<Page> {
        let limit = limit.clamp(1, MAX_PAGE);
        let ids = [&filter.caller, &filter.provider, &filter.tool, &filter.event, &filter.verdict]
            .map(|wanted| self.names.find(wanted.as_ref()));
        if ids.contains(&Some(None)) {
            // A value no record has.
            return Ok(Page::default());
        }
        let [caller, provider, tool, event, verdict] = ids.map(Option::flatten);
        let matches = |slot: &Slot| {
            caller.is_none_or(|id| slot.caller == id)
                && provider.is_none_or(|id| slot.provider == id)
                && tool.is_none_or(|id| slot.tool == id)
                && event.is_none_or(|id| slot.event == id)
                && verdict.is_none_or(|id| slot.verdict == id)
                && filter.since.as_deref().is_none_or(|since| &*slot.time >= since)
                && filter.until.as_deref().is_none_or(|until| &*slot.time < until)
        };
        let oldest = self.slots.front().map_or(0, |s| s.seq);
        let end = match before {
            Some(before) => usize::try_from(before.saturating_sub(oldest)).unwrap_or(usize::MAX).min(self.slots.len()),
            None => self.slots.len(),
        };
        let mut chosen = Vec::new();
        let mut older = None;
        for slot in self.slots.range(..end).rev().filter(|slot| matches(slot)) {
            if chosen.len() == limit {
                older = chosen.last().map(|last: &&Slot| last.seq);
                break;
            }
            chosen.push(slot);
        }
        let mut open: HashMap<u32, File> = HashMap::new();
        let mut records = Vec::with_capacity(chosen.len());
        for slot in chosen {
            let file = match open.entry(slot.file) {
                std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
                std::collections::hash_map::Entry::Vacant(entry) => entry.insert(self.open(slot.file)?),
            };
            let mut line = vec![0; slot.len as usize];
            file.read_exact_at(&mut line, slot.offset)?;
            let record = serde_json::from_slice::<Map<String, Value>>(&line).ok();
            match record {
                Some(record) if record.get("seq").and_then(Value::as_u64) == Some(slot.seq) => records.push(record),
                _ => return Err(changed()),
            }
        }
        Ok(Page { records, older })
    }

    /// File `i` of the log, if it is still the one indexed.
    fn open(&self, i: u32) -> std::io::Result<File> {
        let tracked = self.files.get(i as usize).ok_or_else(changed)?;
        let file = File::open(&tracked.path)?;
        let meta = file.metadata()?;
        if (meta.dev(), meta.ino()) != tracked.id {
            return Err(changed());
        }
        Ok(file)
    }
}

/// Which files the log is made of now, and their lengths.
fn shape(files: &[(PathBuf, std::fs::Metadata)]) -> Vec<((u64, u64), u64)> {
    files.iter().map(|(_, meta)| ((meta.dev(), meta.ino()), meta.len())).collect()
}

fn changed() -> std::io::Error {
    std::io::Error::other("the log changed while it was read (a file was rotated or replaced): read it again")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::{AuditLog, Durability, Entry, Event, Options};

    fn options(rotate: Option<u64>) -> Options {
        Options { durability: Durability::Off, rotate_bytes: rotate, ..Options::default() }
    }

    #[test]
    fn field_values_are_kept_up_to_a_bound_and_those_after_it_match_no_filter() {
        let mut names = Names::default();
        let first = names.id(Some("calendar"));
        for n in 0..MAX_NAMES + 10 {
            names.id(Some(&format!("made-up-{n}")));
        }
        assert_eq!(names.ids.len(), MAX_NAMES);
        assert_eq!(names.id(Some("calendar")), first, "a value kept before stays");
        assert_eq!(names.id(Some("made-up-new")), UNNAMED);
        assert_eq!(names.find(Some(&"made-up-new".to_owned())), Some(None), "no filter matches it");
    }

    fn call(log: &AuditLog, i: usize) {
        let (caller, provider) = (["alice", "bob"][i % 2], ["mail", "calendar", "files"][i % 3]);
        let verdict = if i.is_multiple_of(5) { "deny" } else { "allow" }.to_owned();
        let mut entry = Entry::call(
            format!("c{i}"),
            provider,
            "send",
            Event::Requested { verdict, reason: "policy".into(), arguments: serde_json::json!({"n": i}) },
        );
        entry.caller = Some(caller.into());
        log.append(entry).unwrap();
    }

    #[test]
    fn pages_go_newest_first_with_filters_and_follow_appends_and_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&path, options(Some(2048))).unwrap();
        for i in 0..40 {
            call(&log, i);
        }
        let mut index = Index::new(&path, None);
        index.refresh().unwrap();
        assert!(crate::segment::rotated(&path).unwrap().len() > 2, "the log spans rotated files");
        assert_eq!(index.verified(), Verified::Intact { records: 40, anchor: crate::verify(&path).unwrap().anchor });

        let all = index.page(&Filter::default(), None, 10).unwrap();
        let seqs: Vec<u64> = all.records.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
        assert_eq!(seqs, (31..=40).rev().collect::<Vec<_>>());
        assert_eq!(all.older, Some(31));
        let next = index.page(&Filter::default(), all.older, 10).unwrap();
        assert_eq!(next.records[0]["seq"], 30);

        let bob_mail = Filter { caller: Some("bob".into()), provider: Some("mail".into()), ..Filter::default() };
        let page = index.page(&bob_mail, None, 100).unwrap();
        assert!(page.records.iter().all(|r| r["caller"] == "bob" && r["provider"] == "mail"));
        assert_eq!(page.records.len(), (0..40).filter(|i| i % 2 == 1 && i % 3 == 0).count());
        assert_eq!(page.older, None);
        let denied = index.page(&Filter { verdict: Some("deny".into()), ..Filter::default() }, None, 100).unwrap();
        assert_eq!(denied.records.len(), 8);
        let nobody = index.page(&Filter { caller: Some("mallory".into()), ..Filter::default() }, None, 10).unwrap();
        assert_eq!(nobody, Page::default());
        let time = all.records[0]["time"].as_str().unwrap().to_owned();
        assert_eq!(
            index.page(&Filter { since: Some("9999".into()), ..Filter::default() }, None, 5).unwrap().records,
            vec![]
        );
        assert_eq!(
            index.page(&Filter { until: Some(time.clone()), ..Filter::default() }, None, 500).unwrap().records.len(),
            40 - index.page(&Filter { since: Some(time), ..Filter::default() }, None, 500).unwrap().records.len()
        );

        // Appends and rotations since are read, and only they.
        for i in 40..90 {
            call(&log, i);
        }
        index.refresh().unwrap();
        assert_eq!(index.page(&Filter::default(), None, 1).unwrap().records[0]["seq"], 90);
        assert_eq!(index.verified(), Verified::Intact { records: 90, anchor: crate::verify(&path).unwrap().anchor });
        log.close().unwrap();
    }

    #[test]
    fn a_record_altered_or_a_rotated_file_changed_is_found_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&path, options(Some(1024))).unwrap();
        for i in 0..30 {
            call(&log, i);
        }
        log.close().unwrap();
        let mut index = Index::new(&path, None);
        index.refresh().unwrap();
        assert!(matches!(index.verified(), Verified::Intact { records: 30, .. }));

        // A rotated file rewritten after it was indexed: read again, and the change named.
        let (_, first) = crate::segment::rotated(&path).unwrap().remove(0);
        let text = std::fs::read_to_string(&first).unwrap().replacen("\"n\":0", "\"n\":7", 1);
        std::fs::write(&first, text).unwrap();
        index.refresh().unwrap();
        let Verified::Broken(error) = index.verified() else { panic!("the change went unseen") };
        assert_eq!((error.file.as_deref(), error.line), (Some(first.as_path()), 1), "{error}");
        assert!(matches!(error.problem, Problem::Altered { next_line: 2 }), "{error}");
        // Unchanged since: not read again, and still broken.
        index.refresh().unwrap();
        assert_eq!(index.verified(), Verified::Broken(error));
        assert_eq!(index.page(&Filter::default(), None, 500).unwrap().records.len(), 1, "the records before it stay");
    }

    #[test]
    fn a_torn_record_waits_and_the_index_keeps_its_newest_records_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&path, options(None)).unwrap();
        for i in 0..12 {
            call(&log, i);
        }
        log.close().unwrap();
        use std::io::Write as _;
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"{\"seq\":13,").unwrap();
        let mut index = Index::with_capacity(&path, None, 5);
        index.refresh().unwrap();
        assert!(matches!(index.verified(), Verified::Intact { records: 12, .. }), "a torn last record is no error");
        assert_eq!(index.held(), (5, 8));
        let page = index.page(&Filter::default(), None, 500).unwrap();
        assert_eq!(page.records.iter().map(|r| r["seq"].as_u64().unwrap()).collect::<Vec<_>>(), vec![12, 11, 10, 9, 8]);
        assert_eq!(index.page(&Filter::default(), Some(3), 5).unwrap(), Page::default());
    }

    #[test]
    fn a_keyed_log_is_verified_with_its_key_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let key = ChainKey::new(vec![7; 32]).unwrap();
        let log = AuditLog::open(&path, Options { key: Some(key.clone()), ..options(None) }).unwrap();
        call(&log, 1);
        log.close().unwrap();
        let mut keyed = Index::new(&path, Some(key));
        keyed.refresh().unwrap();
        assert!(matches!(keyed.verified(), Verified::Intact { records: 1, .. }));
        let mut unkeyed = Index::new(&path, None);
        unkeyed.refresh().unwrap();
        assert!(matches!(unkeyed.verified(), Verified::Broken(VerifyError { problem: Problem::NotGenesis, .. })));
    }
}
