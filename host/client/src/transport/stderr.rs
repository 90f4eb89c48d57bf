//! A stdio server's stderr, drained into `tracing` with bounds.
//!
//! stderr is the server's log channel (the MCP stdio transport says so), and it is
//! untrusted: a server can write megabytes of it, one endless line, or terminal escape
//! sequences. So it is always drained (a full pipe would block the server), but only a
//! bounded amount reaches the log: lines are cut at `line_bytes`, control characters
//! are escaped, at most `lines_per_second` lines are logged per second and at most
//! `total_bytes` over the process's life. Whatever is over a budget is counted and
//! dropped, and the drop is logged once per budget.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::AsyncRead;
use tokio::sync::watch;
use tokio::time::Instant;

use super::lines::{Line, LineReader};

/// The budgets of [`drain`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct StderrBudget {
    pub(crate) line_bytes: usize,
    pub(crate) lines_per_second: u32,
    pub(crate) total_bytes: usize,
}

/// How many of a server's last stderr lines [`StderrTail`] keeps.
const TAIL_LINES: usize = 8;
/// The most characters of one line it keeps.
const TAIL_LINE_CHARS: usize = 300;

/// The last lines a stdio server wrote to stderr, escaped and cut, whatever the logging
/// budget let through: for saying why a server that failed to start did. A handle: the
/// drain fills it, clones read it.
#[derive(Debug, Clone)]
pub struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    ended: watch::Sender<bool>,
}

impl Default for StderrTail {
    fn default() -> Self {
        Self { lines: Arc::default(), ended: watch::Sender::new(false) }
    }
}

impl StderrTail {
    fn push(&self, line: &str) {
        if line.trim().is_empty() {
            return;
        }
        let line = text_safety::truncated(line.trim_end(), TAIL_LINE_CHARS);
        let mut lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.len() == TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The last lines (at most eight, oldest first), once stderr has closed or `wait`
    /// has passed, whichever is first: a server that just exited may have lines still in
    /// the pipe.
    pub async fn lines(&self, wait: Duration) -> Vec<String> {
        let mut ended = self.ended.subscribe();
        let _ = tokio::time::timeout(wait, ended.wait_for(|ended| *ended)).await;
        self.lines.lock().unwrap_or_else(PoisonError::into_inner).iter().cloned().collect()
    }
}

/// Reads `stderr` to its end, logging within `budget`; every line also goes to `tail`.
pub(crate) async fn drain(server: String, stderr: impl AsyncRead + Unpin, budget: StderrBudget, tail: StderrTail) {
    drain_lines(&server, stderr, budget, &tail).await;
    tail.ended.send_replace(true);
}

async fn drain_lines(server: &str, stderr: impl AsyncRead + Unpin, budget: StderrBudget, tail: &StderrTail) {
    let mut lines = LineReader::new(tokio::io::BufReader::new(stderr), budget.line_bytes);
    let mut logged_bytes = 0usize;
    let mut window = (Instant::now(), 0u32);
    let mut dropped = 0u64;
    loop {
        let (text, len) = match lines.next_line().await {
            Ok(Line::Frame(line)) => (line, None),
            Ok(Line::Oversized { mut prefix, len }) => {
                prefix.truncate(budget.line_bytes);
                (prefix, Some(len))
            }
            Ok(Line::Eof { .. }) | Err(_) => break,
        };
        let mut line = escape(&text);
        if len.is_some() {
            line.push_str(text_safety::CUT_MARK);
        }
        tail.push(&line);
        let now = Instant::now();
        if now.duration_since(window.0) >= Duration::from_secs(1) {
            window = (now, 0);
        }
        if logged_bytes >= budget.total_bytes || window.1 >= budget.lines_per_second {
            if dropped == 0 {
                tracing::warn!(server = %server, "server stderr is over its logging budget; dropping lines");
            }
            dropped += 1;
            continue;
        }
        window.1 += 1;
        logged_bytes += text.len();
        match len {
            None => tracing::info!(target: "wasmgate::server_stderr", server = %server, "{line}"),
            Some(len) => {
                tracing::info!(target: "wasmgate::server_stderr", server = %server, "{line} (a line of {len} bytes)");
            }
        }
    }
    if dropped > 0 {
        tracing::warn!(server = %server, dropped, "server stderr closed; lines dropped over budget");
    }
}

/// Lossy UTF-8 made log-safe by `text_safety::escape_for_log`, so a server can neither
/// forge log lines, nor drive the operator's terminal, nor disguise what it wrote.
pub(crate) fn escape(bytes: &[u8]) -> String {
    text_safety::escape_for_log(&String::from_utf8_lossy(bytes))
}

/// The integration tests' log capture, shared rather than written again.
#[cfg(test)]
#[path = "../../tests/logs/mod.rs"]
mod logs;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn stderr_is_drained_to_the_end_but_logged_only_within_budget() {
        let captured = logs::Captured::default();
        let _guard = tracing::subscriber::set_default(captured.subscriber());
        let mut input = Vec::new();
        for n in 0..10_000 {
            input.extend_from_slice(format!("line {n:05}\n").as_bytes());
        }
        input.extend_from_slice(&[b'y'; 100_000]);
        input.push(b'\n');
        let budget = StderrBudget { line_bytes: 32, lines_per_second: 1_000_000, total_bytes: 100 };
        let tail = StderrTail::default();
        drain("srv".into(), &input[..], budget, tail.clone()).await;
        let log = captured.text();
        let logged = log.lines().filter(|l| l.contains("line 0")).count();
        assert_eq!(logged, 10, "100 bytes of 10-byte lines: {log}");
        assert!(log.contains("over its logging budget") && log.contains("dropped=9991"), "{log}");

        // The tail keeps the last lines whatever the budget dropped, each cut.
        let last = tail.lines(Duration::ZERO).await;
        assert_eq!(last.len(), 8);
        assert_eq!(last[0], "line 09993");
        assert_eq!(last[6], "line 09999");
        assert_eq!(last[7], format!("{}{}", "y".repeat(32), text_safety::CUT_MARK), "cut at the line limit");
    }

    #[tokio::test]
    async fn the_tail_keeps_eight_lines_escaped_and_cut_and_skips_blank_ones() {
        // A subscriber of its own, as the test above has: a callsite first seen with none
        // would be cached as uninteresting for that test too.
        let captured = logs::Captured::default();
        let _guard = tracing::subscriber::set_default(captured.subscriber());
        let tail = StderrTail::default();
        let long = format!("{}\n", "z".repeat(1000));
        let input = format!("a\n\n   \nb\x1b[31m\n{long}c\nd\ne\nf\ng\nh\n");
        let budget = StderrBudget { line_bytes: 4096, lines_per_second: 1_000, total_bytes: 1 << 20 };
        drain("srv".into(), input.as_bytes(), budget, tail.clone()).await;
        let last = tail.lines(std::time::Duration::from_secs(5)).await;
        assert_eq!(last.len(), 8, "{last:?}");
        assert_eq!(last[0], "b\\u{1b}[31m", "escaped");
        assert_eq!(last[1], format!("{}{}", "z".repeat(300), text_safety::CUT_MARK), "cut");
        assert_eq!(last[7], "h", "a, the oldest of nine, is gone");
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(escape(b"a\x1b[31mred\tb\xe2\x80\xae"), "a\\u{1b}[31mred\\u{9}b\\u{202e}");
        assert_eq!(escape(b"\xffok"), "\u{fffd}ok");
    }
}
