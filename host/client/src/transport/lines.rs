//! Newline framing with a bounded buffer.
//!
//! `AsyncBufReadExt::read_line` grows its buffer until it finds a newline, so a server
//! that writes one endless line would make the gateway allocate without limit. This
//! reader copies at most `max` bytes of a line; past that it keeps only a short prefix
//! (so the client can attribute the frame to a request), counts and discards the rest up
//! to the next newline, and reports the line as [`Line::Oversized`]. The connection then
//! carries on with the next line: one bad message is not a framing failure.
//!
//! A trailing `\r` is stripped (CRLF-writing servers exist) and empty lines are skipped.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

use super::OVERSIZED_PREFIX_BYTES;

/// One line read from the stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A complete line of at most `max` bytes, without its line ending.
    Frame(Vec<u8>),
    /// A line longer than `max`: its first bytes and its full length.
    Oversized { prefix: Vec<u8>, len: usize },
    /// End of stream. `partial` is the length of an unterminated last line, if any: the
    /// writer stopped mid-message, which the caller reports as a framing failure.
    Eof { partial: Option<usize> },
}

/// Reads newline-delimited frames of at most `max` bytes from `inner`.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    max: usize,
    buf: Vec<u8>,
    /// Length of the current line, counting discarded bytes.
    len: usize,
    /// The current line went over `max`; its bytes past the prefix are being dropped.
    discarding: bool,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    pub fn new(inner: R, max: usize) -> Self {
        Self { inner, max, buf: Vec::new(), len: 0, discarding: false }
    }

    /// The next line. Cancel-safe between lines only; callers read it in one task.
    pub async fn next_line(&mut self) -> std::io::Result<Line> {
        loop {
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                let partial = (self.len > 0).then_some(self.len);
                self.reset();
                return Ok(Line::Eof { partial });
            }
            let (chunk, found_newline) = match available.iter().position(|&b| b == b'\n') {
                Some(at) => (&available[..at], true),
                None => (available, false),
            };
            let consumed = chunk.len() + usize::from(found_newline);
            self.len += chunk.len();
            if self.discarding {
                // Keep filling the prefix (contiguous: nothing was dropped before it).
                let keep = OVERSIZED_PREFIX_BYTES.saturating_sub(self.buf.len()).min(chunk.len());
                self.buf.extend_from_slice(&chunk[..keep]);
            } else {
                // One byte of slack for a `\r` that the line ending will strip; saturating, so
                // a cap of `usize::MAX` does not wrap to a room of 0.
                let room = self.max.saturating_add(1).saturating_sub(self.buf.len());
                if chunk.len() <= room {
                    self.buf.extend_from_slice(chunk);
                } else {
                    self.buf.truncate(OVERSIZED_PREFIX_BYTES);
                    let keep = OVERSIZED_PREFIX_BYTES.saturating_sub(self.buf.len()).min(chunk.len());
                    self.buf.extend_from_slice(&chunk[..keep]);
                    self.discarding = true;
                }
            }
            self.inner.consume(consumed);
            if !found_newline {
                continue;
            }
            if let Some(line) = self.finish_line() {
                return Ok(line);
            }
        }
    }

    /// Ends the current line; `None` for an empty line, which is skipped.
    fn finish_line(&mut self) -> Option<Line> {
        let mut line = std::mem::take(&mut self.buf);
        let mut len = self.len;
        let discarding = self.discarding;
        self.reset();
        if !discarding && line.last() == Some(&b'\r') {
            line.pop();
            len -= 1;
        }
        if discarding || len > self.max {
            line.truncate(OVERSIZED_PREFIX_BYTES);
            return Some(Line::Oversized { prefix: line, len });
        }
        (!line.is_empty()).then_some(Line::Frame(line))
    }

    fn reset(&mut self) {
        self.buf = Vec::new();
        self.len = 0;
        self.discarding = false;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<Line> {
        // A tiny buffer makes every line span several fill_buf calls.
        let reader = tokio::io::BufReader::with_capacity(3, input);
        let mut lines = LineReader::new(reader, max);
        let mut out = Vec::new();
        loop {
            let line = lines.next_line().await.unwrap();
            let eof = matches!(line, Line::Eof { .. });
            out.push(line);
            if eof {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn lines_are_split_on_newlines_and_crlf_is_accepted() {
        let got = lines(b"{\"a\":1}\r\n\n{\"b\":2}\n", 16).await;
        assert_eq!(
            got,
            vec![Line::Frame(b"{\"a\":1}".to_vec()), Line::Frame(b"{\"b\":2}".to_vec()), Line::Eof { partial: None }]
        );
    }

    #[tokio::test]
    async fn a_line_over_the_cap_is_reported_with_its_length_and_the_next_line_survives() {
        let mut input = vec![b'x'; 10_000];
        input.extend_from_slice(b"\nok\n");
        let got = lines(&input, 8).await;
        match &got[0] {
            Line::Oversized { prefix, len } => {
                assert_eq!(*len, 10_000);
                assert_eq!(prefix.len(), OVERSIZED_PREFIX_BYTES);
            }
            other => panic!("expected oversized, got {other:?}"),
        }
        assert_eq!(got[1], Line::Frame(b"ok".to_vec()));
    }

    #[tokio::test]
    async fn a_line_of_exactly_the_cap_is_a_frame() {
        assert_eq!(lines(b"12345678\r\n", 8).await[0], Line::Frame(b"12345678".to_vec()));
        assert!(matches!(lines(b"123456789\n", 8).await[0], Line::Oversized { len: 9, .. }));
    }

    /// The `stdio_framing` fuzz target's input `0e 00 00 0a` (cap `usize::MAX`, one empty
    /// line): `max + 1` must not overflow, which would panic with overflow checks and,
    /// without them, leave a room of 0 that makes every line oversized.
    #[tokio::test]
    async fn a_reader_without_a_cap_returns_every_line() {
        assert_eq!(lines(b"\n", usize::MAX).await, vec![Line::Eof { partial: None }]);
        let got = lines(b"{\"a\":1}\r\n{}\nta", usize::MAX).await;
        assert_eq!(
            got,
            vec![Line::Frame(b"{\"a\":1}".to_vec()), Line::Frame(b"{}".to_vec()), Line::Eof { partial: Some(2) }]
        );
    }

    #[tokio::test]
    async fn an_unterminated_last_line_is_reported_as_partial() {
        assert_eq!(lines(b"{\"a\":", 64).await, vec![Line::Eof { partial: Some(5) }]);
    }
}
