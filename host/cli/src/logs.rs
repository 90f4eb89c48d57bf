//! The log on stderr: one line per event, whatever the event carries.
//!
//! * `text` (the default): tracing's usual line, coloured only when stderr is a
//!   terminal, so a log file or a pipe gets no escape codes;
//! * `json`: one JSON object per line (`timestamp`, `level`, `fields`, `target`, the
//!   span), for a log collector.
//!
//! A field's text may hold line breaks (a server's stderr, an error's chain). Written as
//! they are, one event would read as several, and a line of a hostile server's stderr
//! could pass for an event of the gateway's: [`OneLine`] writes each break inside an
//! event as `\n` (and `\r` as `\r`), so only the end of an event ends a line.

use std::io::{self, IsTerminal as _, Write};

use clap::ValueEnum;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer, Registry};

/// How log lines look.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogFormat {
    /// One line of text per event.
    Text,
    /// One JSON object per line.
    Json,
}

/// A layer of the process's subscriber.
pub(crate) type BoxedLayer = Box<dyn Layer<Registry> + Send + Sync>;

/// Sends the log to stderr in `format`, at the level `WASMGATE_LOG` sets (`warn` by
/// default), beside `traces` (the spans exporter of `[serve.traces]`), if any. Each
/// layer filters for itself, so the log's level says nothing about what is traced.
pub(crate) fn init(format: LogFormat, traces: Option<BoxedLayer>) {
    let filter = EnvFilter::try_from_env("WASMGATE_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
    let log = tracing_subscriber::fmt::layer().with_writer(Stderr);
    let log = match format {
        LogFormat::Text => log.with_ansi(io::stderr().is_terminal()).with_filter(filter).boxed(),
        LogFormat::Json => log.json().with_filter(filter).boxed(),
    };
    let layers: Vec<BoxedLayer> = std::iter::once(log).chain(traces).collect();
    tracing_subscriber::registry().with(layers).init();
}

/// Makes a [`OneLine`] writer over stderr for each event.
struct Stderr;

impl<'a> MakeWriter<'a> for Stderr {
    type Writer = OneLine<io::Stderr>;

    fn make_writer(&'a self) -> Self::Writer {
        OneLine(io::stderr())
    }
}

/// Writes what it is given as one line: every line break but a final one is escaped.
/// The formatter hands over each event whole, in one write.
pub(crate) struct OneLine<W>(pub(crate) W);

impl<W: Write> Write for OneLine<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let (body, end) = match buf.strip_suffix(b"\n") {
            Some(body) => (body, &b"\n"[..]),
            None => (buf, &b""[..]),
        };
        if !body.iter().any(|&b| b == b'\n' || b == b'\r') {
            self.0.write_all(buf)?;
            return Ok(buf.len());
        }
        let mut line = Vec::with_capacity(buf.len() + 16);
        for &b in body {
            match b {
                b'\n' => line.extend_from_slice(b"\\n"),
                b'\r' => line.extend_from_slice(b"\\r"),
                other => line.push(other),
            }
        }
        line.extend_from_slice(end);
        self.0.write_all(&line)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn one_line(text: &str) -> String {
        let mut out = OneLine(Vec::new());
        out.write_all(text.as_bytes()).unwrap();
        String::from_utf8(out.0).unwrap()
    }

    #[test]
    fn breaks_inside_an_event_are_escaped_and_its_end_is_kept() {
        assert_eq!(one_line("WARN a: b\n"), "WARN a: b\n");
        assert_eq!(
            one_line("WARN provider failed: stderr=line 1\nINFO forged event\r\n\n"),
            "WARN provider failed: stderr=line 1\\nINFO forged event\\r\\n\n"
        );
        assert_eq!(one_line("no end\nhere"), "no end\\nhere");
    }
}
