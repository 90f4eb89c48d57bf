//! Newline-delimited JSON going out on stdio, batched: the lines queued when a write
//! starts leave in that one write. Each write to a pipe wakes the reader on the other
//! end, and a wake-up costs more than the bytes, so answers to pipelined requests (and
//! requests pipelined to a server) share one. Both ends of the gateway's stdio use it:
//! the upstream transport and the server's output.

use serde_json::Value;

/// A batch of lines for one write.
#[derive(Debug, Default)]
pub struct LineBatch {
    bytes: Vec<u8>,
}

impl LineBatch {
    /// Above this many bytes, no further queued line joins the batch.
    pub const MAX_BYTES: usize = 64 * 1024;

    /// An empty batch.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Empties the batch for the next write, giving back a buffer a large line grew.
    pub fn clear(&mut self) {
        if self.bytes.capacity() > 4 * Self::MAX_BYTES {
            self.bytes = Vec::new();
        }
        self.bytes.clear();
    }

    /// Whether another queued line may join.
    #[must_use]
    pub fn has_room(&self) -> bool {
        self.bytes.len() < Self::MAX_BYTES
    }

    /// Adds `line`, which already ends in a newline.
    pub fn push_line(&mut self, line: &[u8]) {
        self.bytes.extend_from_slice(line);
    }

    /// Adds `message` as one line.
    ///
    /// # Errors
    ///
    /// serde_json's, which serializing a `Value` into memory does not produce.
    pub fn push_message(&mut self, message: &Value) -> serde_json::Result<()> {
        serde_json::to_writer(&mut self.bytes, message)?;
        self.bytes.push(b'\n');
        Ok(())
    }

    /// The bytes to write.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::LineBatch;

    #[test]
    fn lines_join_until_the_batch_is_full_and_clearing_gives_back_a_grown_buffer() {
        let mut batch = LineBatch::new();
        batch.push_message(&json!({"a": 1})).unwrap();
        batch.push_line(b"{}\n");
        assert_eq!(batch.as_bytes(), b"{\"a\":1}\n{}\n");
        assert!(batch.has_room());
        batch.push_line(&vec![b' '; LineBatch::MAX_BYTES * 5]);
        assert!(!batch.has_room());
        batch.clear();
        assert!(batch.as_bytes().is_empty() && batch.has_room());
        assert!(batch.bytes.capacity() <= 4 * LineBatch::MAX_BYTES, "the grown buffer was kept");
    }
}
