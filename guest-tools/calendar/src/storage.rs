//! Where the calendar lives: one JSON file, read whole and replaced whole.
//!
//! [`DirStorage`] keeps it at `events.json` in a directory (the granted
//! `/data` in the component). A write goes to a temporary file of its own
//! first (`events.json.<n>.tmp`, created exclusively, so two calls running at
//! once in separate instances never write into the same file), is synced, then
//! renamed over the file, so a reader never sees half a calendar. Two calls that
//! wrote at once would still race (the later rename wins and the other's change
//! is lost: WASI has no file locks), so the host runs the calls of a component
//! granted a writable directory one at a time; the file is always one whole
//! calendar either way.
//! The [`Storage`] trait lets the tool logic run natively in tests.

use std::fs::{self, File};
use std::io::{self, ErrorKind, Read as _, Write as _};
use std::path::PathBuf;

/// Largest events file read, so a planted huge file cannot exhaust memory.
pub const MAX_FILE_BYTES: u64 = 4 << 20;
const FILE_NAME: &str = "events.json";
/// Temporary names tried before a write gives up.
const TEMP_ATTEMPTS: u64 = 16;

/// Why the calendar file could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorageError {
    /// There is no data directory: nothing was granted.
    NoDataDir(String),
    /// The data directory may be read but not written.
    ReadOnly,
    /// Anything else, with what went wrong.
    Io(String),
}

/// The calendar file.
pub trait Storage {
    /// The file's text, or `None` when there is no file yet.
    fn read(&self) -> Result<Option<String>, StorageError>;
    /// Replaces the file's text, all or nothing.
    fn write(&mut self, text: &str) -> Result<(), StorageError>;
}

/// The calendar file in a directory of the filesystem.
#[derive(Debug, Clone)]
pub struct DirStorage {
    dir: PathBuf,
}

impl DirStorage {
    /// Storage in `dir`, which must already exist.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        DirStorage { dir: dir.into() }
    }

    fn check_dir(&self) -> Result<(), StorageError> {
        match fs::metadata(&self.dir) {
            Ok(meta) if meta.is_dir() => Ok(()),
            _ => Err(StorageError::NoDataDir(format!(
                "the calendar has no data directory at {}: grant one to this component",
                self.dir.display()
            ))),
        }
    }
}

impl Storage for DirStorage {
    fn read(&self) -> Result<Option<String>, StorageError> {
        self.check_dir()?;
        let file = match File::open(self.dir.join(FILE_NAME)) {
            Ok(file) => file,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error("open", &e)),
        };
        let mut text = String::new();
        file.take(MAX_FILE_BYTES + 1).read_to_string(&mut text).map_err(|e| io_error("read", &e))?;
        if text.len() as u64 > MAX_FILE_BYTES {
            return Err(StorageError::Io(format!("the calendar file is larger than {MAX_FILE_BYTES} bytes")));
        }
        Ok(Some(text))
    }

    fn write(&mut self, text: &str) -> Result<(), StorageError> {
        self.check_dir()?;
        let (temp, file) = self.temp_file().map_err(|e| {
            if is_read_only(&e) { StorageError::ReadOnly } else { io_error("create a temporary copy of", &e) }
        })?;
        let written = (|| {
            let mut file = file;
            file.write_all(text.as_bytes())?;
            file.sync_all()
        })();
        let renamed = written.and_then(|()| fs::rename(&temp, self.dir.join(FILE_NAME)));
        renamed.map_err(|e| {
            // Best effort: a failed write must not leave the temporary file behind.
            let _ = fs::remove_file(&temp);
            if is_read_only(&e) { StorageError::ReadOnly } else { io_error("write", &e) }
        })
    }
}

impl DirStorage {
    /// A temporary file no other instance is writing: created exclusively under a
    /// random name, trying the next names when one exists. Random, not the clock: a
    /// component without the clock grant reads a clock frozen at zero, so every
    /// instance would start from the same name.
    fn temp_file(&self) -> io::Result<(PathBuf, File)> {
        use std::hash::{BuildHasher, RandomState};
        let seed = RandomState::new().hash_one(FILE_NAME);
        let mut last = io::Error::from(ErrorKind::AlreadyExists);
        for attempt in 0..TEMP_ATTEMPTS {
            let path = self.dir.join(format!("{FILE_NAME}.{:x}.tmp", seed.wrapping_add(attempt)));
            match File::create_new(&path) {
                Ok(file) => return Ok((path, file)),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }
}

/// Whether an error means "you may not write here" (WASI reports a write
/// under a read-only preopen as not permitted).
fn is_read_only(e: &io::Error) -> bool {
    matches!(e.kind(), ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem)
}

fn io_error(what: &str, e: &io::Error) -> StorageError {
    StorageError::Io(format!("cannot {what} the calendar file: {e}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::{DirStorage, Storage, StorageError};

    fn temp_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("calendar-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_missing_file_is_an_empty_calendar_and_a_write_replaces_it() {
        let dir = temp_dir("roundtrip");
        let mut storage = DirStorage::new(&dir);
        assert_eq!(storage.read(), Ok(None));
        storage.write("{\"events\":[]}").unwrap();
        storage.write("{\"next_id\":2}").unwrap();
        assert_eq!(storage.read(), Ok(Some("{\"next_id\":2}".into())));
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["events.json"], "the temporary file was left behind");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn concurrent_writers_never_share_a_temporary_file() {
        let dir = temp_dir("concurrent");
        let writers: Vec<_> = (0..8)
            .map(|i| {
                let dir = dir.clone();
                std::thread::spawn(move || {
                    let mut storage = DirStorage::new(&dir);
                    let text = format!("{{\"writer\":{i},\"pad\":\"{}\"}}", "x".repeat(64 * 1024));
                    for _ in 0..10 {
                        storage.write(&text).unwrap();
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        let text = DirStorage::new(&dir).read().unwrap().unwrap();
        let parsed: serde_json::Value = serde_json::from_str(&text).expect("always one whole calendar");
        assert!(parsed["writer"].is_u64());
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["events.json"], "no temporary file was left behind");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_missing_data_directory_is_reported_not_treated_as_empty() {
        let storage = DirStorage::new("/nonexistent/calendar-data");
        let err = storage.read().unwrap_err();
        assert!(matches!(&err, StorageError::NoDataDir(why) if why.contains("/nonexistent/calendar-data")), "{err:?}");
    }

    #[test]
    fn an_oversized_file_is_refused() {
        let dir = temp_dir("oversized");
        std::fs::write(dir.join("events.json"), vec![b' '; super::MAX_FILE_BYTES as usize + 1]).unwrap();
        let err = DirStorage::new(&dir).read().unwrap_err();
        assert!(matches!(&err, StorageError::Io(why) if why.contains("larger than")), "{err:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
