//! Any bytes, in any chunking, through both newline framers of the gateway: the
//! client's `LineReader` (a stdio server's stdout, `wasmgate-client`) and the server
//! face's `next_line` (a downstream client's stdin, `wasmgate-server`). Each must
//! return exactly the lines of a reference split of the input, whatever sizes
//! the reads come in:
//!
//! * no frame is ever longer than the cap, or contains a `\n`;
//! * every complete line comes back exactly once, in order: as a frame (one
//!   trailing `\r` stripped) or as over-long with its length (and, in the client,
//!   its first `OVERSIZED_PREFIX_BYTES` bytes); blank lines are skipped;
//! * the client reports an unterminated last line as a partial of its length at
//!   end of stream; the server face still reads it as a line.
//!
//! Input layout: byte 0 picks the cap, bytes 1-2 seed the chunk sizes (1 to 17
//! bytes, sometimes a large read, sometimes a `Pending` first), the rest is the
//! stream. Everything is in memory and polled with a no-op waker.

#![no_main]

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncBufRead, AsyncRead, ReadBuf};
use wasmgate_client::fuzzing::{Line as ClientLine, LineReader, OVERSIZED_PREFIX_BYTES};
use wasmgate_server::fuzzing::{Line as ServerLine, next_line};

/// Caps worth trying: tiny ones (most lines are over), ones around the oversized
/// prefix, the default, and no cap at all.
const CAPS: [usize; 16] = [
    0,
    1,
    2,
    3,
    5,
    8,
    16,
    64,
    OVERSIZED_PREFIX_BYTES - 1,
    OVERSIZED_PREFIX_BYTES,
    OVERSIZED_PREFIX_BYTES + 1,
    2 * OVERSIZED_PREFIX_BYTES,
    4 * 1024 * 1024,
    usize::MAX - 1,
    usize::MAX,
    7,
];

fuzz_target!(|data: &[u8]| {
    let [pick, seed_hi, seed_lo, stream @ ..] = data else { return };
    let max = CAPS[usize::from(*pick) % CAPS.len()];
    let seed = u16::from_be_bytes([*seed_hi, *seed_lo]);

    let lines = split(stream);
    check_client(stream, &lines, max, seed);
    check_server(stream, &lines, max, seed);
});

/// The reference split: every `\n`-terminated line, and the unterminated tail.
struct Split<'a> {
    complete: Vec<&'a [u8]>,
    tail: &'a [u8],
}

fn split(stream: &[u8]) -> Split<'_> {
    let mut complete: Vec<&[u8]> = stream.split(|&b| b == b'\n').collect();
    let tail = complete.pop().unwrap_or_default();
    Split { complete, tail }
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Whether a line is over `max`: past `max + 1` bytes before its `\r` is looked at
/// (its length then counts the `\r`), or past `max` after it is stripped.
fn over(raw: &[u8], max: usize) -> Option<usize> {
    if raw.len() > max.saturating_add(1) {
        return Some(raw.len());
    }
    let line = strip_cr(raw);
    (line.len() > max).then_some(line.len())
}

fn check_client(stream: &[u8], lines: &Split<'_>, max: usize, seed: u16) {
    let mut expected = Vec::new();
    for raw in &lines.complete {
        if let Some(len) = over(raw, max) {
            let prefix = raw[..raw.len().min(OVERSIZED_PREFIX_BYTES)].to_vec();
            expected.push(ClientLine::Oversized { prefix, len });
        } else if !strip_cr(raw).is_empty() {
            expected.push(ClientLine::Frame(strip_cr(raw).to_vec()));
        }
    }
    let partial = (!lines.tail.is_empty()).then_some(lines.tail.len());
    expected.push(ClientLine::Eof { partial });

    let mut reader = LineReader::new(Chunked::new(stream, seed), max);
    let mut got = Vec::new();
    loop {
        let line = block_on(reader.next_line()).expect("an in-memory read cannot fail");
        match &line {
            ClientLine::Frame(frame) => {
                assert!(!frame.is_empty(), "an empty frame was returned");
                assert!(frame.len() <= max, "a frame of {} bytes passed a cap of {max}", frame.len());
                assert!(!frame.contains(&b'\n'), "a frame contains a newline");
            }
            ClientLine::Oversized { prefix, len } => {
                assert!(*len > max, "a line of {len} bytes was reported over a cap of {max}");
                assert!(prefix.len() <= OVERSIZED_PREFIX_BYTES, "the prefix kept {} bytes", prefix.len());
            }
            ClientLine::Eof { .. } => {}
        }
        let eof = matches!(line, ClientLine::Eof { .. });
        got.push(line);
        if eof || got.len() > expected.len() {
            break;
        }
    }
    assert_eq!(got, expected, "client framing of {} bytes, cap {max}", stream.len());
    // The reader is reset at end of stream: reading on finds nothing more.
    let again = block_on(reader.next_line()).expect("an in-memory read cannot fail");
    assert_eq!(again, ClientLine::Eof { partial: None }, "a second end of stream");
}

fn check_server(stream: &[u8], lines: &Split<'_>, max: usize, seed: u16) {
    let mut expected = Vec::new();
    let tail = (!lines.tail.is_empty()).then_some(lines.tail);
    for raw in lines.complete.iter().copied().chain(tail) {
        if let Some(len) = over(raw, max) {
            expected.push(ServerLine::Oversized { len });
        } else if !strip_cr(raw).iter().all(u8::is_ascii_whitespace) {
            expected.push(ServerLine::Message(strip_cr(raw).to_vec()));
        }
    }

    let mut reader = Chunked::new(stream, seed);
    let mut got = Vec::new();
    while let Some(line) = block_on(next_line(&mut reader, max)).expect("an in-memory read cannot fail") {
        match &line {
            ServerLine::Message(message) => {
                assert!(message.len() <= max, "a message of {} bytes passed a cap of {max}", message.len());
                assert!(!message.contains(&b'\n'), "a message contains a newline");
                assert!(!message.iter().all(u8::is_ascii_whitespace), "a blank line was returned");
            }
            ServerLine::Oversized { len } => assert!(*len > max, "a line of {len} bytes reported over {max}"),
        }
        got.push(line);
        if got.len() > expected.len() {
            break;
        }
    }
    assert_eq!(got, expected, "server framing of {} bytes, cap {max}", stream.len());
}

/// Polls a future that never really waits: every `Pending` comes from [`Chunked`],
/// which is ready on the next poll.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..1_000_000 {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
    panic!("a framer kept returning Pending on a reader that is always ready on the next poll");
}

/// An in-memory `AsyncBufRead` whose `fill_buf` hands out the stream in chunks of
/// pseudo-random size, and sometimes answers `Pending` (waking at once) first.
struct Chunked<'a> {
    data: &'a [u8],
    pos: usize,
    /// End of the chunk `fill_buf` currently exposes.
    end: usize,
    rng: u32,
    pending: bool,
}

impl<'a> Chunked<'a> {
    fn new(data: &'a [u8], seed: u16) -> Self {
        Self { data, pos: 0, end: 0, rng: u32::from(seed) | 0x1_0000, pending: false }
    }

    fn next(&mut self) -> u32 {
        // xorshift32: any nonzero state.
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 17;
        self.rng ^= self.rng << 5;
        self.rng
    }
}

impl AsyncRead for Chunked<'_> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let chunk = match self.as_mut().poll_fill_buf(cx) {
            Poll::Ready(Ok(chunk)) => chunk,
            other => return other.map_ok(|_| ()),
        };
        let n = chunk.len().min(buf.remaining());
        buf.put_slice(&chunk[..n]);
        self.consume(n);
        Poll::Ready(Ok(()))
    }
}

impl AsyncBufRead for Chunked<'_> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let this = self.get_mut();
        if this.pos == this.end && this.pos < this.data.len() {
            let roll = this.next();
            if roll.is_multiple_of(8) && !this.pending {
                this.pending = true;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            this.pending = false;
            let size = if roll % 16 == 1 { 1 + (roll >> 8) as usize % 8192 } else { 1 + (roll >> 8) as usize % 17 };
            this.end = this.pos.saturating_add(size).min(this.data.len());
        }
        Poll::Ready(Ok(&this.data[this.pos..this.end]))
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let this = self.get_mut();
        assert!(this.pos + amt <= this.end, "consumed {amt} bytes past the chunk handed out");
        this.pos += amt;
    }
}
