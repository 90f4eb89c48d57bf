//! A bounded in-memory stderr for guests.
//!
//! wasmtime-wasi's `MemoryOutputPipe` traps the guest once it is full, which
//! would let a chatty but honest formatter fail a call. This pipe keeps the
//! first `capacity` bytes for the logs and quietly counts the rest.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;

use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

#[derive(Debug, Default)]
struct Captured {
    kept: Vec<u8>,
    dropped: usize,
}

/// Shared handle to one call's captured stderr.
#[derive(Debug, Clone)]
pub(crate) struct BoundedPipe {
    capacity: usize,
    inner: Arc<Mutex<Captured>>,
}

impl BoundedPipe {
    pub fn new(capacity: usize) -> Self {
        BoundedPipe { capacity, inner: Arc::default() }
    }

    fn append(&self, bytes: &[u8]) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let room = self.capacity.saturating_sub(inner.kept.len());
        let take = room.min(bytes.len());
        inner.kept.extend_from_slice(&bytes[..take]);
        inner.dropped += bytes.len() - take;
    }

    /// What the guest wrote, as lossy UTF-8 on one line made log-safe
    /// (`text_safety::escape_for_log_cut`, at most `capacity` characters), the cut
    /// marked with how much was dropped.
    pub fn contents(&self) -> String {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let mut text = text_safety::escape_for_log_cut(&String::from_utf8_lossy(&inner.kept), self.capacity);
        if inner.dropped > 0 {
            if !text.ends_with(text_safety::CUT_MARK) {
                text.push_str(text_safety::CUT_MARK);
            }
            text.push_str(&format!(" ({} more bytes dropped)", inner.dropped));
        }
        text
    }
}

impl IsTerminal for BoundedPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for BoundedPipe {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl OutputStream for BoundedPipe {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.append(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        // Always accept: the excess is counted, not stored.
        Ok(64 << 10)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for BoundedPipe {
    async fn ready(&mut self) {}
}

impl tokio::io::AsyncWrite for BoundedPipe {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.append(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_first_bytes_and_counts_the_rest() {
        let pipe = BoundedPipe::new(5);
        pipe.append(b"hello world");
        pipe.append(b"!");
        assert_eq!(pipe.contents(), format!("hello{} (7 more bytes dropped)", text_safety::CUT_MARK));
    }

    #[test]
    fn escapes_and_bidi_overrides_cannot_reach_a_terminal() {
        let pipe = BoundedPipe::new(100);
        pipe.append("panicked\n\x1b[2J\u{202e}evil\x07".as_bytes());
        assert_eq!(pipe.contents(), "panicked\\u{a}\\u{1b}[2J\\u{202e}evil\\u{7}");
    }

    #[test]
    fn every_invisible_character_is_shown_as_an_escape() {
        // The byte order mark, a Hangul filler, a tag character: the whole shared set,
        // not only the bidi controls.
        let pipe = BoundedPipe::new(100);
        pipe.append("a\u{feff}b\u{3164}c\u{e0041}d".as_bytes());
        assert_eq!(pipe.contents(), "a\\u{feff}b\\u{3164}c\\u{e0041}d");
    }

    #[test]
    fn escaping_cannot_grow_the_text_past_the_capacity() {
        let pipe = BoundedPipe::new(12);
        pipe.append(&[0x1b; 12]);
        let text = pipe.contents();
        assert_eq!(text, format!("\\u{{1b}}\\u{{1b}}{}", text_safety::CUT_MARK));
    }
}
