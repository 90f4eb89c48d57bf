//! A bounded Server-Sent Events parser, fed chunk by chunk.
//!
//! A Streamable HTTP server may answer a request with `text/event-stream`: request-scoped
//! notifications, then the response, each as one event's `data`. The parser follows the
//! WHATWG event-stream rules that matter here (lines end in `\n`, `\r\n` or `\r`, even
//! split across chunks; `data` lines are joined with `\n`; a blank line dispatches;
//! `:` lines are comments, the keep-alives servers send; `id` and `retry` are kept, for
//! the handshake era's resumption (a 2026-07-28 stream is not resumable and the caller
//! ignores them); events whose type is not `message` are
//! skipped, and so are events with empty data, such as the "priming" event a
//! 2025-11-25 server may open a stream with) and adds one rule of its own: no line and
//! no event may exceed the cap, so a hostile stream costs at most one event's worth of
//! memory. The same parser reads long-lived streams (the handshake era's GET stream, a
//! 2026-07-28 subscription), where the cap is what keeps a stream bounded.

use bytes::Bytes;

/// Longest event type kept; anything longer is certainly not `message`.
const MAX_EVENT_TYPE: usize = 64;

/// Longest event id kept; a longer one is ignored (and the stream is not resumed by it).
const MAX_EVENT_ID: usize = 256;

/// The stream broke the cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventTooLarge {
    pub(crate) limit: usize,
}

/// Incremental parser state.
#[derive(Debug)]
pub(crate) struct SseParser {
    max_event: usize,
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    event_type: Vec<u8>,
    /// The previous chunk ended in `\r`; a `\n` starting this one belongs to that ending.
    after_cr: bool,
    /// The last event id the stream set (what a resumption sends as `Last-Event-ID`).
    last_event_id: Option<String>,
    /// The reconnection time the stream asked for, in milliseconds.
    retry_ms: Option<u64>,
}

impl SseParser {
    pub(crate) fn new(max_event: usize) -> Self {
        Self {
            max_event,
            line: Vec::new(),
            data: Vec::new(),
            has_data: false,
            event_type: Vec::new(),
            after_cr: false,
            last_event_id: None,
            retry_ms: None,
        }
    }

    /// The last event id seen, if the stream set one.
    pub(crate) fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The reconnection time the stream asked for, if it did.
    pub(crate) fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// Feeds one chunk, appending the data of every completed `message` event to `events`.
    pub(crate) fn push(&mut self, chunk: &[u8], events: &mut Vec<Bytes>) -> Result<(), EventTooLarge> {
        for &byte in chunk {
            let after_cr = std::mem::replace(&mut self.after_cr, false);
            match byte {
                b'\n' if after_cr => {}
                b'\n' | b'\r' => {
                    self.after_cr = byte == b'\r';
                    let line = std::mem::take(&mut self.line);
                    self.line_done(&line, events)?;
                }
                _ => {
                    // "data:" plus the event's worth of bytes is the longest useful line.
                    if self.line.len() > self.max_event + 8 {
                        return Err(EventTooLarge { limit: self.max_event });
                    }
                    self.line.push(byte);
                }
            }
        }
        Ok(())
    }

    fn line_done(&mut self, line: &[u8], events: &mut Vec<Bytes>) -> Result<(), EventTooLarge> {
        if line.is_empty() {
            self.dispatch(events);
            return Ok(());
        }
        if line.first() == Some(&b':') {
            return Ok(());
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(at) => {
                let value = &line[at + 1..];
                (&line[..at], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                if self.data.len() + value.len() + 1 > self.max_event + 1 {
                    return Err(EventTooLarge { limit: self.max_event });
                }
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
                self.has_data = true;
            }
            b"event" => {
                self.event_type.clear();
                self.event_type.extend_from_slice(&value[..value.len().min(MAX_EVENT_TYPE)]);
            }
            // A NUL makes the field ignored (WHATWG); so does an id no header could carry.
            b"id" if value.len() <= MAX_EVENT_ID && !value.contains(&0) => {
                self.last_event_id = std::str::from_utf8(value)
                    .ok()
                    .filter(|v| v.bytes().all(|b| b == b' ' || b.is_ascii_graphic()))
                    .map(str::to_owned);
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry_ms = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, events: &mut Vec<Bytes>) {
        let mut data = std::mem::take(&mut self.data);
        let event_type = std::mem::take(&mut self.event_type);
        if !std::mem::replace(&mut self.has_data, false) {
            return;
        }
        data.pop();
        if data.is_empty() {
            return;
        }
        if event_type.is_empty() || event_type == b"message" {
            events.push(Bytes::from(data));
        } else {
            tracing::debug!(event = %String::from_utf8_lossy(&event_type), "skipping a non-message SSE event");
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parse(chunks: &[&[u8]], max: usize) -> Result<Vec<String>, EventTooLarge> {
        let mut parser = SseParser::new(max);
        let mut events = Vec::new();
        for chunk in chunks {
            parser.push(chunk, &mut events)?;
        }
        Ok(events.iter().map(|e| String::from_utf8(e.to_vec()).unwrap()).collect())
    }

    #[test]
    fn events_are_split_by_blank_lines_with_any_line_ending() {
        let got = parse(&[b"data: {\"a\":1}\n\ndata: {\"b\"", b":2}\r", b"\n\r\ndata:x\r\r"], 64).unwrap();
        assert_eq!(got, ["{\"a\":1}", "{\"b\":2}", "x"]);
    }

    #[test]
    fn multi_line_data_is_joined_and_comments_and_other_fields_are_ignored() {
        let got = parse(&[b": keep-alive\nid: 7\nretry: 10\ndata: a\ndata: b\n\n"], 64).unwrap();
        assert_eq!(got, ["a\nb"]);
    }

    #[test]
    fn events_of_another_type_and_an_unterminated_last_event_are_dropped() {
        let got = parse(&[b"event: ping\ndata: p\n\nevent: message\ndata: m\n\ndata: cut"], 64).unwrap();
        assert_eq!(got, ["m"]);
    }

    #[test]
    fn the_last_event_id_and_retry_are_kept_and_bad_ones_ignored() {
        let mut parser = SseParser::new(1024);
        let mut events = Vec::new();
        parser.push(b"id: e-1\nretry: 500\ndata:\n\n", &mut events).unwrap();
        assert_eq!((parser.last_event_id(), parser.retry_ms()), (Some("e-1"), Some(500)));
        parser.push(b"id: a\0b\nretry: 5x\nid: bad\x01\n\n", &mut events).unwrap();
        assert_eq!((parser.last_event_id(), parser.retry_ms()), (None, Some(500)));
        let long = format!("id: {}\n\n", "x".repeat(MAX_EVENT_ID + 1));
        parser.push(long.as_bytes(), &mut events).unwrap();
        assert_eq!(parser.last_event_id(), None);
        assert!(events.is_empty());
    }

    #[test]
    fn an_event_with_empty_data_is_not_dispatched() {
        let got = parse(&[b"id: 1\ndata:\n\ndata: \n\ndata: x\n\n"], 64).unwrap();
        assert_eq!(got, ["x"]);
    }

    #[test]
    fn an_event_over_the_cap_is_an_error_even_without_newlines() {
        assert_eq!(parse(&[b"data: 12345\ndata: 67890\n\n"], 8), Err(EventTooLarge { limit: 8 }));
        assert_eq!(parse(&[&[b'x'; 100]], 8), Err(EventTooLarge { limit: 8 }));
        assert_eq!(parse(&[b"data: 12345678\n\n"], 8).unwrap(), ["12345678"]);
    }
}
