//! The one escape-sequence scanner: where a terminal control sequence that starts at a
//! given byte ends, so it can be removed whole, payload and all.
//!
//! A sequence starts with ESC (U+001B) or with one of the 8-bit C1 introducers, which
//! terminals honour just the same (in UTF-8 they are two bytes, `C2 xx`):
//!
//! | kind | 7-bit | 8-bit | ends at |
//! |---|---|---|---|
//! | CSI | `ESC [` | U+009B | the final byte (`@`..`~`), after parameter and intermediate bytes (` `..`?`) |
//! | OSC, DCS, SOS, PM, APC | `ESC ]`, `ESC P`, `ESC X`, `ESC ^`, `ESC _` | U+009D, U+0090, U+0098, U+009E, U+009F | BEL, ST (`ESC \` or U+009C), or the end of the text |
//! | other | `ESC` intermediates (` `..`/`) then a final (`0`..`~`) | | the final byte |
//!
//! A malformed sequence ends just before the first byte that cannot belong to it, so
//! that byte is judged on its own: a CSI cut by a line break keeps the line break.
//! An ESC followed by something that cannot start a sequence is removed alone.

/// What starts at a byte of a text, as far as escape sequences go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A control sequence: parameters, intermediates, one final byte.
    Csi,
    /// A control string (OSC, DCS, SOS, PM, APC): a payload up to the string terminator.
    String,
    /// ESC, intermediates, one final byte.
    Other,
}

/// The 8-bit C1 code point `c`, if it introduces a sequence: its kind.
const fn c1_introducer(c: u8) -> Option<Kind> {
    match c {
        0x9B => Some(Kind::Csi),
        0x90 | 0x98 | 0x9D | 0x9E | 0x9F => Some(Kind::String),
        _ => None,
    }
}

/// The byte index just past the escape sequence that starts at `start` in `text`, or
/// `None` when no sequence starts there (the byte is not ESC and not an 8-bit
/// introducer). The index is always a character boundary of `text`.
#[must_use]
pub fn escape_end(text: &str, start: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let (kind, body) = match (bytes.get(start), bytes.get(start + 1)) {
        (Some(0x1b), Some(b'[')) => (Kind::Csi, start + 2),
        (Some(0x1b), Some(b']' | b'P' | b'X' | b'^' | b'_')) => (Kind::String, start + 2),
        (Some(0x1b), _) => (Kind::Other, start + 1),
        (Some(0xc2), Some(&second)) => (c1_introducer(second)?, start + 2),
        _ => return None,
    };
    Some(match kind {
        Kind::Csi => csi_end(bytes, body),
        Kind::String => string_end(bytes, body),
        Kind::Other => other_end(bytes, body),
    })
}

/// Past a CSI's parameter and intermediate bytes and its final byte, from `i`.
fn csi_end(bytes: &[u8], mut i: usize) -> usize {
    while let Some(&b) = bytes.get(i) {
        match b {
            0x40..=0x7e => return i + 1,
            0x20..=0x3f => i += 1,
            // Cannot belong to the sequence: it ends before this byte.
            _ => return i,
        }
    }
    i
}

/// Past a control string's terminator (BEL, `ESC \`, U+009C), or the end of the text.
fn string_end(bytes: &[u8], mut i: usize) -> usize {
    while let Some(&b) = bytes.get(i) {
        match (b, bytes.get(i + 1)) {
            (0x07, _) => return i + 1,
            (0x1b, Some(b'\\')) | (0xc2, Some(0x9c)) => return i + 2,
            _ => i += 1,
        }
    }
    i
}

/// Past an ESC sequence's intermediates (` `..`/`) and final byte (`0`..`~`), from the
/// byte after ESC. Only the ESC when nothing of a sequence follows it.
fn other_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start;
    while let Some(&b) = bytes.get(i) {
        match b {
            0x20..=0x2f => i += 1,
            0x30..=0x7e => return i + 1,
            _ => return i,
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::escape_end;

    fn removed(text: &str) -> &str {
        let end = escape_end(text, 0).unwrap_or(0);
        &text[..end]
    }

    #[test]
    fn each_kind_ends_where_its_terminal_would_end_it() {
        for (text, sequence) in [
            ("\u{1b}[31mred", "\u{1b}[31m"),
            ("\u{1b}[?25lx", "\u{1b}[?25l"),
            ("\u{9b}2Jx", "\u{9b}2J"),
            ("\u{1b}]0;title\u{7}x", "\u{1b}]0;title\u{7}"),
            ("\u{1b}]8;;http://e\u{1b}\\x", "\u{1b}]8;;http://e\u{1b}\\"),
            ("\u{9d}0;title\u{9c}x", "\u{9d}0;title\u{9c}"),
            ("\u{90}q payload\u{1b}\\x", "\u{90}q payload\u{1b}\\"),
            ("\u{98}sos\u{7}x", "\u{98}sos\u{7}"),
            ("\u{9e}pm\u{9c}x", "\u{9e}pm\u{9c}"),
            ("\u{9f}apc\u{9c}x", "\u{9f}apc\u{9c}"),
            ("\u{1b}Pdcs\u{1b}\\x", "\u{1b}Pdcs\u{1b}\\"),
            ("\u{1b}Xsos\u{7}x", "\u{1b}Xsos\u{7}"),
            ("\u{1b}^pm\u{7}x", "\u{1b}^pm\u{7}"),
            ("\u{1b}_apc\u{7}x", "\u{1b}_apc\u{7}"),
            ("\u{1b}(Bx", "\u{1b}(B"),
            ("\u{1b}cx", "\u{1b}c"),
            ("\u{1b}Mx", "\u{1b}M"),
            ("\u{1b}\\x", "\u{1b}\\"),
        ] {
            assert_eq!(removed(text), sequence, "{text:?}");
        }
    }

    #[test]
    fn a_malformed_or_unterminated_sequence_ends_where_it_stops_being_one() {
        assert_eq!(removed("\u{1b}[12\nx"), "\u{1b}[12");
        assert_eq!(removed("\u{1b}[1\u{e9}"), "\u{1b}[1");
        assert_eq!(removed("\u{1b}]no end"), "\u{1b}]no end");
        assert_eq!(removed("\u{1b}"), "\u{1b}");
        assert_eq!(removed("\u{1b}\u{e9}"), "\u{1b}");
        assert_eq!(removed("\u{1b}\nx"), "\u{1b}");
        assert_eq!(removed("\u{1b}(\u{e9}"), "\u{1b}(");
    }

    #[test]
    fn only_escape_and_the_c1_introducers_start_a_sequence() {
        for text in ["a", "\u{85}", "\u{9c}", "\u{80}", "\u{e9}", ""] {
            assert_eq!(escape_end(text, 0), None, "{text:?}");
        }
    }

    #[test]
    fn the_end_is_a_character_boundary_whatever_the_payload() {
        for text in ["\u{1b}]日本\u{7}", "\u{9d}😀\u{9c}", "\u{1b}]é", "\u{1b}[1😀"] {
            let end = escape_end(text, 0).unwrap_or(0);
            assert!(text.is_char_boundary(end), "{text:?} {end}");
        }
    }
}
