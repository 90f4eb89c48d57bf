//! Reading a file that may be anything: at most one byte past a limit is read, whatever
//! the path names (a pipe or a device has no length until read, and may have no end).

use std::io::{self, Read};

/// At most `max` bytes from `reader`, or `None` when it holds more.
pub fn read_capped(reader: impl Read, max: u64) -> io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    reader.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= max).then_some(bytes))
}

/// `read_capped` as text, failing as `read_to_string` does on bytes that are not UTF-8.
pub fn read_capped_text(reader: impl Read, max: u64) -> io::Result<Option<String>> {
    match read_capped(reader, max)? {
        Some(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "stream did not contain valid UTF-8")),
        None => Ok(None),
    }
}
