//! Newline-delimited framing with a bound: a line longer than the limit is skipped
//! without being buffered whole, so a client cannot make the server allocate without end.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// One frame read from the stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A complete line, without its `\n` (or `\r\n`).
    Message(Vec<u8>),
    /// A line longer than the limit, discarded; `len` is its length.
    Oversized { len: usize },
}

/// Reads the next line that is not blank; `None` at end of stream. A last line
/// without a newline still counts.
pub async fn next_line<R: AsyncBufRead + Unpin>(reader: &mut R, max: usize) -> std::io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut len = 0usize;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if len == 0 { None } else { frame(line, len, max) });
        }
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(end) => (&available[..end], true),
            None => (available, false),
        };
        len += chunk.len();
        // One byte over the limit is kept: it may be the `\r` of a `\r\n`.
        if len <= max.saturating_add(1) {
            line.extend_from_slice(chunk);
        }
        let used = chunk.len() + usize::from(done);
        reader.consume(used);
        if done {
            if let Some(frame) = frame(std::mem::take(&mut line), len, max) {
                return Ok(Some(frame));
            }
            len = 0;
        }
    }
}

/// The frame of a finished line of `len` bytes; `None` for a blank one.
fn frame(mut line: Vec<u8>, mut len: usize, max: usize) -> Option<Line> {
    if len > max.saturating_add(1) {
        return Some(Line::Oversized { len });
    }
    if line.last() == Some(&b'\r') {
        line.pop();
        len -= 1;
    }
    if len > max {
        return Some(Line::Oversized { len });
    }
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    Some(Line::Message(line))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    async fn all(input: &[u8], max: usize) -> Vec<Line> {
        let mut reader = tokio::io::BufReader::with_capacity(4, input);
        let mut lines = Vec::new();
        while let Some(line) = next_line(&mut reader, max).await.unwrap() {
            lines.push(line);
        }
        lines
    }

    #[tokio::test]
    async fn lines_are_split_on_newlines_and_blank_lines_are_skipped() {
        let lines = all(b"{\"a\":1}\r\n\n  \n{}\nlast", 16).await;
        assert_eq!(
            lines,
            [Line::Message(b"{\"a\":1}".to_vec()), Line::Message(b"{}".to_vec()), Line::Message(b"last".to_vec())]
        );
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_reported_with_its_length_and_reading_goes_on() {
        let lines = all(b"0123456789\n12345678\r\nok\n", 8).await;
        assert_eq!(
            lines,
            [Line::Oversized { len: 10 }, Line::Message(b"12345678".to_vec()), Line::Message(b"ok".to_vec())]
        );
        assert_eq!(all(b"123456789\r\n", 8).await, [Line::Oversized { len: 10 }]);
    }
}
