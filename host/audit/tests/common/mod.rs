//! What the full-disk tests share: a "full disk" made of this process's file size limit
//! (`RLIMIT_FSIZE`), which a write past fails as a write to a full disk does, part-way
//! included, and which can be raised again without root; and the log's records, read back.

use std::path::Path;

use serde_json::Value;

/// Sets this process's file size limit (its soft limit; the hard one is kept).
pub fn limit_file_size(bytes: Option<u64>) {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit write and read the struct passed, nothing else.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_FSIZE, &mut limit), 0);
        limit.rlim_cur = bytes.map_or(limit.rlim_max, |b| b.min(limit.rlim_max));
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
    }
}

/// The records of the log file at `path`, parsed.
pub fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}
