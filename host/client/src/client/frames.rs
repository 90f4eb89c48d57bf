//! Attributing a rejected frame to the request it answered.
//!
//! When a response is too large or not valid JSON it cannot be parsed, yet the request
//! it answered should fail now rather than wait for its timeout. [`leading_id`] reads
//! just enough of the frame's first bytes: a JSON object whose top-level `"id"` (an
//! integer or an escape-free string) comes, complete, before the cut, together with a
//! top-level `"result"` or `"error"` key (so a server's own request, whose ids live in
//! another space, is never mistaken for an answer). Anything else yields `None` and the
//! frame is only logged. Mis-attribution can only fail a request early, which the server
//! could do anyway by answering it with an error.

use wasmgate_protocol::Id;

/// The id of the response that `prefix` starts, if it can be read with certainty.
#[must_use]
pub(crate) fn leading_id(prefix: &[u8]) -> Option<Id> {
    let mut scan = Scanner { bytes: prefix, at: 0 };
    scan.ws();
    scan.eat(b'{')?;
    let (mut id, mut is_response) = (None, false);
    loop {
        scan.ws();
        let key = scan.plain_string()?;
        scan.ws();
        scan.eat(b':')?;
        scan.ws();
        match key {
            b"id" => id = Some(scan.id()?),
            b"result" | b"error" => {
                is_response = true;
                if id.is_some() {
                    break;
                }
                scan.skip_value()?;
            }
            _ => scan.skip_value()?,
        }
        if is_response && id.is_some() {
            break;
        }
        scan.ws();
        match scan.next()? {
            b',' => {}
            _ => return None,
        }
    }
    id
}

struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.at += 1;
        Some(byte)
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.next()? == byte).then_some(())
    }

    /// A string without escapes, returned raw.
    fn plain_string(&mut self) -> Option<&'a [u8]> {
        let bytes = self.bytes;
        self.eat(b'"')?;
        let start = self.at;
        loop {
            match self.next()? {
                b'"' => return bytes.get(start..self.at - 1),
                b'\\' => return None,
                _ => {}
            }
        }
    }

    /// An id value followed by `,` or `}` (so a number was not cut short).
    fn id(&mut self) -> Option<Id> {
        let id = if self.peek()? == b'"' {
            Id::String(std::str::from_utf8(self.plain_string()?).ok()?.to_owned())
        } else {
            let start = self.at;
            while matches!(self.peek(), Some(b'-' | b'0'..=b'9')) {
                self.at += 1;
            }
            Id::Int(std::str::from_utf8(self.bytes.get(start..self.at)?).ok()?.parse().ok()?)
        };
        let mut after = Scanner { bytes: self.bytes, at: self.at };
        after.ws();
        matches!(after.peek()?, b',' | b'}').then_some(id)
    }

    /// Skips one value; `None` if the prefix ends inside it.
    fn skip_value(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match self.next()? {
                b'"' => loop {
                    match self.next()? {
                        b'"' => break,
                        b'\\' => {
                            self.next()?;
                        }
                        _ => {}
                    }
                },
                b'{' | b'[' => depth += 1,
                b'}' | b']' => depth = depth.checked_sub(1)?,
                _ => {}
            }
            if depth == 0 && matches!(self.peek()?, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n') {
                return Some(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_before_result_is_found_even_when_the_result_is_cut() {
        assert_eq!(leading_id(br#"{"jsonrpc":"2.0","id":42,"result":{"content":[{"text":"xxxx"#), Some(Id::Int(42)));
        assert_eq!(leading_id(br#"{ "id" : "a-1" , "error" : {"#), Some(Id::String("a-1".into())));
    }

    #[test]
    fn id_after_the_result_is_found_when_the_result_is_complete() {
        assert_eq!(leading_id(br#"{"result":{"a":"}"},"jsonrpc":"2.0","id":7}"#), Some(Id::Int(7)));
        assert_eq!(leading_id(br#"{"result":{"content":[{"text":"cut"#), None);
    }

    #[test]
    fn requests_cut_numbers_and_escaped_keys_are_not_attributed() {
        assert_eq!(leading_id(br#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#), None);
        assert_eq!(leading_id(br#"{"jsonrpc":"2.0","id":12"#), None);
        assert_eq!(leading_id(br#"{"\u0069d":1,"result":{}}"#), None);
        assert_eq!(leading_id(b"not json"), None);
    }
}
