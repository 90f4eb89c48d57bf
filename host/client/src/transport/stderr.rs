//! A stdio server's stderr, drained into `tracing` with bounds.
//!
//! stderr is the server's log channel (the MCP stdio transport says so), and it is
//! untrusted: a server can write megabytes of it, one endless line, or terminal escape
//! sequences. So it is always drained (a full pipe would block the server), but only a
//! bounded amount reaches the log: lines are cut at `line_bytes`, control characters
//! are escaped, at most `lines_per_second` lines are logged per second and at most
//! `total_bytes` over the process's life. Whatever is over a budget is counted and
//! dropped, and the drop is logged once per budget.

use std::time::Duration;

use tokio::io::AsyncRead;
use tokio::time::Instant;

use super::lines::{Line, LineReader};

/// The budgets of [`drain`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct StderrBudget {
    pub(crate) line_bytes: usize,
    pub(crate) lines_per_second: u32,
    pub(crate) total_bytes: usize,
}

/// Reads `stderr` to its end, logging within `budget`.
pub(crate) async fn drain(server: String, stderr: impl AsyncRead + Unpin, budget: StderrBudget) {
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
        let line = escape(&text);
        match len {
            None => tracing::info!(target: "wasmgate::server_stderr", server = %server, "{line}"),
            Some(len) => {
                tracing::info!(target: "wasmgate::server_stderr", server = %server, "{line} [line of {len} bytes truncated]");
            }
        }
    }
    if dropped > 0 {
        tracing::warn!(server = %server, dropped, "server stderr closed; lines dropped over budget");
    }
}

/// Lossy UTF-8 with control characters escaped, so a server cannot forge log lines or
/// drive the operator's terminal.
pub(crate) fn escape(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
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
        drain("srv".into(), &input[..], budget).await;
        let log = captured.text();
        let logged = log.lines().filter(|l| l.contains("line 0")).count();
        assert_eq!(logged, 10, "100 bytes of 10-byte lines: {log}");
        assert!(log.contains("over its logging budget") && log.contains("dropped=9991"), "{log}");
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(escape(b"a\x1b[31mred\tb"), "a\\u{1b}[31mred\\tb");
        assert_eq!(escape(b"\xffok"), "\u{fffd}ok");
    }
}
