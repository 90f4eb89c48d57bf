//! [`scan`]: untrusted text as [`Piece`]s: runs of text kept as they are, line breaks,
//! and what is removed.
//!
//! Removed:
//! - escape sequences, whole ([`escape_end`](crate::escape_end): 7-bit and 8-bit CSI,
//!   OSC, DCS, SOS, PM, APC, with their payloads);
//! - control characters: C0 except line feed and tab, DEL, C1;
//! - invisible characters ([`is_invisible`]), with two exceptions that a reader does
//!   see: a zero-width joiner between two emoji (family and profession emoji, ❤️‍🔥),
//!   and one text or emoji presentation selector (VS15, VS16) right after a visible
//!   character (⭐️, 1️⃣, ↩︎).
//!
//! Line breaks (`\n`, `\r\n`, a lone `\r`, NEL, LINE SEPARATOR, PARAGRAPH SEPARATOR)
//! are reported as [`Piece::LineBreak`], so every user writes them the same way and a
//! carriage return cannot overwrite a line on a terminal.
//!
//! Runs of printable ASCII, the common case, are found eight bytes at a time.

use crate::escape::escape_end;
use crate::invisible::is_invisible;

/// One step of [`scan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Text kept as it is: a slice of the input, never empty.
    Text(&'a str),
    /// One line break, of whichever kind.
    LineBreak,
    /// Something removed.
    Removed(Removed),
}

/// What a removed piece was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removed {
    /// An escape sequence, whole.
    Escape,
    /// A control character.
    Control,
    /// An invisible, format, bidi or tag character.
    Invisible,
}

/// The pieces of `text`.
#[must_use]
pub fn scan(text: &str) -> Scanner<'_> {
    Scanner { text, pos: 0, last: None, before: None }
}

/// The iterator of [`scan`].
#[derive(Debug, Clone)]
pub struct Scanner<'a> {
    text: &'a str,
    /// The next byte to look at (always a character boundary).
    pos: usize,
    /// The last character kept, and the one before it (for the emoji exceptions).
    last: Option<char>,
    before: Option<char>,
}

impl<'a> Iterator for Scanner<'a> {
    type Item = Piece<'a>;

    fn next(&mut self) -> Option<Piece<'a>> {
        let text = self.text;
        let bytes = text.as_bytes();
        let start = self.pos;
        if start >= bytes.len() {
            return None;
        }
        let mut i = start;
        loop {
            i = skip_plain(bytes, i);
            let Some(&b) = bytes.get(i) else { break };
            if b == b'\t' {
                i += 1;
                continue;
            }
            if b < 0x80 {
                if i > start {
                    break;
                }
                return Some(self.ascii_control(b, i));
            }
            // `i` is a character boundary: every byte before it was ASCII or part of a
            // whole character.
            let Some(c) = text.get(i..).and_then(|rest| rest.chars().next()) else { break };
            let len = c.len_utf8();
            let verdict = self.judge(c, start, i, len);
            if verdict == Verdict::Keep {
                i += len;
                continue;
            }
            if i > start {
                break;
            }
            return Some(self.drop(verdict, i, len));
        }
        self.pos = i;
        Some(self.kept(start, i))
    }
}

/// What becomes of one character that is not printable ASCII.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Keep,
    LineBreak,
    Escape,
    Control,
    Invisible,
}

impl<'a> Scanner<'a> {
    /// Kept text from `start` to `end`; remembers its last two characters.
    fn kept(&mut self, start: usize, end: usize) -> Piece<'a> {
        let run = self.text.get(start..end).unwrap_or_default();
        let mut back = run.chars().rev();
        let last = back.next();
        self.before = back.next().or(self.last);
        self.last = last;
        Piece::Text(run)
    }

    fn line_break(&mut self, next: usize) -> Piece<'a> {
        self.pos = next;
        self.last = Some('\n');
        self.before = None;
        Piece::LineBreak
    }

    fn removed(&mut self, next: usize, what: Removed) -> Piece<'a> {
        self.pos = next;
        Piece::Removed(what)
    }

    /// An ASCII byte that is neither printable nor a tab, at `i`.
    fn ascii_control(&mut self, b: u8, i: usize) -> Piece<'a> {
        match b {
            b'\n' => self.line_break(i + 1),
            b'\r' if self.text.as_bytes().get(i + 1) == Some(&b'\n') => self.line_break(i + 2),
            b'\r' => self.line_break(i + 1),
            0x1b => self.removed(escape_end(self.text, i).unwrap_or(i + 1), Removed::Escape),
            _ => self.removed(i + 1, Removed::Control),
        }
    }

    /// The piece for a character of `len` bytes at `i` that is not kept.
    fn drop(&mut self, verdict: Verdict, i: usize, len: usize) -> Piece<'a> {
        match verdict {
            Verdict::LineBreak => self.line_break(i + len),
            Verdict::Escape => self.removed(escape_end(self.text, i).unwrap_or(i + len), Removed::Escape),
            Verdict::Control => self.removed(i + len, Removed::Control),
            Verdict::Invisible | Verdict::Keep => self.removed(i + len, Removed::Invisible),
        }
    }

    /// The two characters kept just before `i`, when the current run started at `start`.
    fn kept_before(&self, start: usize, i: usize) -> (Option<char>, Option<char>) {
        let mut run = self.text.get(start..i).unwrap_or_default().chars().rev();
        match (run.next(), run.next()) {
            (Some(last), Some(before)) => (Some(last), Some(before)),
            (Some(last), None) => (Some(last), self.last),
            _ => (self.last, self.before),
        }
    }

    /// What becomes of `c` (not ASCII), `len` bytes at `i`, in a run that started at `start`.
    fn judge(&self, c: char, start: usize, i: usize, len: usize) -> Verdict {
        match c {
            '\u{85}' | '\u{2028}' | '\u{2029}' => Verdict::LineBreak,
            '\u{80}'..='\u{9f}' if escape_end(self.text, i).is_some() => Verdict::Escape,
            '\u{80}'..='\u{9f}' => Verdict::Control,
            '\u{200d}' => {
                let (last, before) = self.kept_before(start, i);
                let next = self.text.get(i + len..).and_then(|rest| rest.chars().next());
                let after_emoji = is_emoji(last) || (last == Some('\u{fe0f}') && is_emoji(before));
                if after_emoji && is_emoji(next) { Verdict::Keep } else { Verdict::Invisible }
            }
            '\u{fe0e}' | '\u{fe0f}' => {
                let (last, _) = self.kept_before(start, i);
                if presents(last) { Verdict::Keep } else { Verdict::Invisible }
            }
            c if is_invisible(c) => Verdict::Invisible,
            _ => Verdict::Keep,
        }
    }
}

/// Emoji, roughly: the blocks a zero-width joiner joins.
fn is_emoji(c: Option<char>) -> bool {
    c.is_some_and(|c| matches!(c as u32, 0x2600..=0x27BF | 0x1F000..=0x1FAFF))
}

/// Whether a presentation selector may follow `c`: a visible character that is not
/// itself a selector or a joiner.
fn presents(c: Option<char>) -> bool {
    c.is_some_and(|c| !c.is_whitespace() && !matches!(c, '\u{fe0e}' | '\u{fe0f}' | '\u{200d}'))
}

/// Whether all eight bytes of `word` are printable ASCII (`0x20..=0x7e`), tested on
/// all lanes at once: "has a byte below 0x20" and "has a byte above 0x7e".
const fn all_printable(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    let above_tilde = (word.wrapping_add(ONES) | word) & HIGH;
    below_space | above_tilde == 0
}

/// The index of the first byte from `i` on that is not printable ASCII.
fn skip_plain(bytes: &[u8], mut i: usize) -> usize {
    while let Some(word) = bytes.get(i..i + 8).and_then(|chunk| <[u8; 8]>::try_from(chunk).ok()) {
        if !all_printable(u64::from_le_bytes(word)) {
            break;
        }
        i += 8;
    }
    // Fewer than eight bytes left: if the last eight (which cover them) are plain, so
    // is the rest, without a pass per byte.
    if bytes.len().saturating_sub(i) < 8
        && let Some(last) = bytes.last_chunk::<8>()
        && all_printable(u64::from_le_bytes(*last))
    {
        return bytes.len();
    }
    while bytes.get(i).is_some_and(|b| (0x20..0x7f).contains(b)) {
        i += 1;
    }
    i
}

/// Whether every byte of `bytes` is printable ASCII: nothing to remove, no line to
/// break. Strings of up to 16 bytes, most keys and values, take a few loads and no loop.
#[must_use]
pub fn is_plain(bytes: &[u8]) -> bool {
    let n = bytes.len();
    if n > 16 {
        return skip_plain(bytes, 0) == n;
    }
    if let (Some(first), Some(last)) = (bytes.first_chunk::<8>(), bytes.last_chunk::<8>()) {
        return all_printable(u64::from_le_bytes(*first)) && all_printable(u64::from_le_bytes(*last));
    }
    // Fewer than eight bytes: gather them into one word padded with spaces.
    let word = if let (Some(first), Some(last)) = (bytes.first_chunk::<4>(), bytes.last_chunk::<4>()) {
        u64::from(u32::from_le_bytes(*first)) | u64::from(u32::from_le_bytes(*last)) << 32
    } else if let (Some(&a), Some(&b), Some(&c)) = (bytes.first(), bytes.get(n / 2), bytes.last()) {
        0x2020_2020_2000_0000 | u64::from(a) | u64::from(b) << 8 | u64::from(c) << 16
    } else {
        return true;
    };
    all_printable(word)
}

#[cfg(test)]
mod tests {
    extern crate std;

    use std::vec;
    use std::vec::Vec;

    use super::{Piece, Removed, is_plain, scan};

    #[test]
    fn the_plain_check_sees_every_byte_of_every_length() {
        let naive = |bytes: &[u8]| bytes.iter().all(|b| (0x20..0x7f).contains(b));
        for len in 0..=40 {
            let plain = vec![b'a'; len];
            assert_eq!(is_plain(&plain), naive(&plain), "{len}");
            for at in 0..len {
                for odd in [0x00, 0x09, 0x0a, 0x1b, 0x1f, 0x7f, 0x80, 0xc3, 0xff] {
                    let mut bytes = plain.clone();
                    bytes[at] = odd;
                    assert_eq!(is_plain(&bytes), naive(&bytes), "{len} {at} {odd:#x}");
                }
            }
        }
    }

    #[test]
    fn a_character_to_remove_anywhere_in_a_run_of_any_length_is_found() {
        for len in 1..=40 {
            for at in 0..len {
                for odd in ["\u{7}", "\u{202e}", "\u{85}", "\u{9c}"] {
                    let mut text = "x".repeat(len);
                    text.replace_range(at..=at, odd);
                    let kept: usize = scan(&text).map(|p| if let Piece::Text(t) = p { t.len() } else { 0 }).sum();
                    assert_eq!(kept, len - 1, "{len} {at} {odd:?}");
                }
            }
        }
    }

    #[test]
    fn every_ascii_byte_at_every_position_is_judged_like_one_at_a_time() {
        for b in 0u8..0x80 {
            if b == 0x1b {
                continue; // ESC starts a sequence that takes the next byte with it
            }
            for pos in 0..20 {
                let mut bytes = vec![b'a'; 20];
                bytes[pos] = b;
                let text = std::string::String::from_utf8(bytes).unwrap_or_default();
                let expected: std::string::String = text
                    .chars()
                    .filter(|c| (' '..='~').contains(c) || matches!(c, '\n' | '\t' | '\r'))
                    .map(|c| if c == '\r' { '\n' } else { c })
                    .collect();
                assert_eq!(crate::clean(&text), expected, "byte {b:#x} at {pos}");
            }
        }
    }

    #[test]
    fn pieces_name_what_was_removed_and_runs_are_whole() {
        let pieces: Vec<Piece<'_>> = scan("ab\u{1b}[1mc\u{7}d\u{200b}e\r\nf\tg").collect();
        assert_eq!(
            pieces,
            [
                Piece::Text("ab"),
                Piece::Removed(Removed::Escape),
                Piece::Text("c"),
                Piece::Removed(Removed::Control),
                Piece::Text("d"),
                Piece::Removed(Removed::Invisible),
                Piece::Text("e"),
                Piece::LineBreak,
                Piece::Text("f\tg"),
            ]
        );
    }
}
