//! Cleaning untrusted text before a model reads it.
//!
//! A tool result can carry characters that a terminal or a model treats as
//! something other than text: ANSI escape sequences that rewrite the screen,
//! control characters, and invisible or bidi-override characters that hide
//! words from a human reviewer while the model still reads them (Unicode tag
//! characters can smuggle a whole ASCII sentence). All of them are removed;
//! line breaks and tabs are kept, `\r\n` and Unicode line separators become `\n`.

use alloc::string::String;

/// Appends `text` to `out`. Up to 16 bytes are copied with fixed-size moves
/// instead of `memcpy`: in the sandbox a `memcpy` is the `memory.copy`
/// instruction, which wasmtime runs as a call into the host, and the
/// renderer appends many short pieces (keys, `: `, indentation, words).
#[inline]
pub(crate) fn append(out: &mut String, text: &str) {
    let src = text.as_bytes();
    let n = src.len();
    if n > 16 {
        out.push_str(text);
        return;
    }
    // SAFETY: at most `n` bytes past the end are set, all copied from `text`,
    // which is UTF-8, so `out` stays UTF-8; the 16 bytes after the end are
    // reserved first, and every write stays within them.
    unsafe {
        let bytes = out.as_mut_vec();
        bytes.reserve(16);
        let len = bytes.len();
        let dst = bytes.as_mut_ptr().add(len);
        let from = src.as_ptr();
        if n >= 8 {
            dst.cast::<u64>().write_unaligned(from.cast::<u64>().read_unaligned());
            dst.add(n - 8).cast::<u64>().write_unaligned(from.add(n - 8).cast::<u64>().read_unaligned());
        } else if n >= 4 {
            dst.cast::<u32>().write_unaligned(from.cast::<u32>().read_unaligned());
            dst.add(n - 4).cast::<u32>().write_unaligned(from.add(n - 4).cast::<u32>().read_unaligned());
        } else if n > 0 {
            *dst = *from;
            *dst.add(n / 2) = *from.add(n / 2);
            *dst.add(n - 1) = *from.add(n - 1);
        }
        bytes.set_len(len + n);
    }
}

/// Appends the cleaned form of `text` to `out`.
pub fn push_clean(out: &mut String, text: &str) {
    push_clean_indented(out, text, "");
}

/// Appends the cleaned form of `text` to `out`, with `indent` after every
/// line break (`\n`, `\r\n`, `\r`, NEL, LS, PS all become `\n`).
///
/// Runs of plain printable ASCII, the common case, are found eight bytes at
/// a time and copied in bulk: in the sandbox every loop iteration also pays
/// for a deadline check, so fewer iterations matter twice.
pub fn push_clean_indented(out: &mut String, text: &str, indent: &str) {
    let bytes = text.as_bytes();
    if short_and_printable(bytes) {
        // Most keys and values: no loop at all.
        append(out, text);
        return;
    }
    let mut start = 0; // first byte not yet copied
    let mut i = 0;
    loop {
        while let Some(word) = bytes.get(i..i + 8).and_then(|chunk| <[u8; 8]>::try_from(chunk).ok()) {
            if !all_printable_ascii(u64::from_le_bytes(word)) {
                break;
            }
            i += 8;
        }
        // Fewer than eight bytes left: if the last eight (which cover them) are
        // plain, so is the rest, without a pass per byte.
        if bytes.len() - i < 8
            && let Some(last) = bytes.last_chunk::<8>()
            && all_printable_ascii(u64::from_le_bytes(*last))
        {
            i = bytes.len();
        }
        let Some(&b) = bytes.get(i) else {
            break;
        };
        if (0x20..0x7f).contains(&b) || b == b'\t' {
            i += 1;
            continue;
        }
        append(out, &text[start..i]);
        if b == b'\n' {
            line_break(out, indent);
            i += 1;
        } else if b == 0x1b {
            i = skip_escape(bytes, i);
        } else if b < 0x80 {
            // Other C0 controls and DEL. A lone `\r` ends a line; `\r\n` is one break.
            if b == b'\r' && bytes.get(i + 1) != Some(&b'\n') {
                line_break(out, indent);
            }
            i += 1;
        } else {
            // `i` is on a char boundary: every byte before it was ASCII or a whole char.
            let Some(c) = text[i..].chars().next() else {
                break;
            };
            let len = c.len_utf8();
            if c == '\u{9b}' {
                // The 8-bit CSI introducer: drop the whole sequence, as for ESC [.
                i = skip_csi_params(bytes, i + len);
            } else {
                match classify(c) {
                    Keep::Yes => out.push(c),
                    Keep::LineBreak => line_break(out, indent),
                    Keep::No => {}
                }
                i += len;
            }
        }
        start = i;
    }
    append(out, &text[start..]);
}

fn line_break(out: &mut String, indent: &str) {
    out.push('\n');
    append(out, indent);
}

/// Whether `bytes` is at most 16 bytes long and all printable ASCII, decided
/// with a few overlapping fixed-size loads that together cover every byte.
fn short_and_printable(bytes: &[u8]) -> bool {
    let n = bytes.len();
    if n > 16 {
        return false;
    }
    if let (Some(first), Some(last)) = (bytes.first_chunk::<8>(), bytes.last_chunk::<8>()) {
        return all_printable_ascii(u64::from_le_bytes(*first)) && all_printable_ascii(u64::from_le_bytes(*last));
    }
    // Fewer than eight bytes: gather them into one word padded with spaces.
    let word = if let (Some(first), Some(last)) = (bytes.first_chunk::<4>(), bytes.last_chunk::<4>()) {
        u64::from(u32::from_le_bytes(*first)) | u64::from(u32::from_le_bytes(*last)) << 32
    } else if let (Some(&a), Some(&b), Some(&c)) = (bytes.first(), bytes.get(n / 2), bytes.last()) {
        0x2020_2020_2000_0000 | u64::from(a) | u64::from(b) << 8 | u64::from(c) << 16
    } else {
        return true;
    };
    all_printable_ascii(word)
}

/// Whether all eight bytes of `word` are in `0x20..=0x7e` (SWAR: "has a byte
/// below 0x20" and "has a byte above 0x7e" tested on all lanes at once).
fn all_printable_ascii(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    let above_tilde = (word.wrapping_add(ONES) | word) & HIGH;
    below_space | above_tilde == 0
}

/// Returns `text` cleaned.
pub fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_clean(&mut out, text);
    out
}

enum Keep {
    Yes,
    LineBreak,
    No,
}

fn classify(c: char) -> Keep {
    match c {
        '\u{2028}' | '\u{2029}' | '\u{85}' => Keep::LineBreak,
        // C1 controls.
        '\u{80}'..='\u{9f}' => Keep::No,
        // Zero-width, bidi, tag and filler characters: wasmgate's one list.
        c if invisible_chars::is_invisible(c) => Keep::No,
        _ => Keep::Yes,
    }
}

/// Skips an escape sequence starting at the ESC byte at `i`; returns the index after it.
fn skip_escape(bytes: &[u8], i: usize) -> usize {
    match bytes.get(i + 1) {
        // CSI: ESC [ parameters, intermediates, one final byte.
        Some(b'[') => skip_csi_params(bytes, i + 2),
        // OSC, DCS, SOS, PM, APC: a string ended by BEL or ESC \ (or the end of text).
        Some(b']' | b'P' | b'X' | b'^' | b'_') => {
            let mut j = i + 2;
            while j < bytes.len() {
                match bytes[j] {
                    0x07 => return j + 1,
                    0x1b if bytes.get(j + 1) == Some(&b'\\') => return j + 2,
                    _ => j += 1,
                }
            }
            j
        }
        // Two-byte sequences (ESC c, ESC 7, ...): drop ESC and the next ASCII byte.
        Some(b) if b.is_ascii() => i + 2,
        // A lone ESC, or ESC before a multi-byte char: drop only the ESC.
        _ => i + 1,
    }
}

/// Skips CSI parameter and intermediate bytes and the final byte, from `j`.
fn skip_csi_params(bytes: &[u8], mut j: usize) -> usize {
    while j < bytes.len() {
        let b = bytes[j];
        j += 1;
        if (0x40..=0x7e).contains(&b) {
            return j; // final byte
        }
        if !(0x20..=0x3f).contains(&b) {
            // Not part of a CSI sequence: stop before it so it is judged on its own.
            return j - 1;
        }
    }
    j
}

#[cfg(test)]
mod tests {
    use super::{append, clean, short_and_printable};

    #[test]
    fn the_short_path_sees_every_byte_of_every_length() {
        let naive = |bytes: &[u8]| bytes.len() <= 16 && bytes.iter().all(|b| (0x20..0x7f).contains(b));
        for len in 0..=20 {
            let plain = vec![b'a'; len];
            assert_eq!(short_and_printable(&plain), naive(&plain), "{len}");
            for at in 0..len {
                for odd in [0x00, 0x09, 0x0a, 0x1b, 0x1f, 0x7f, 0x80, 0xc3, 0xff] {
                    let mut bytes = plain.clone();
                    bytes[at] = odd;
                    assert_eq!(short_and_printable(&bytes), naive(&bytes), "{len} {at} {odd:#x}");
                }
            }
        }
    }

    #[test]
    fn a_control_or_bidi_character_anywhere_in_a_string_of_any_length_is_removed() {
        for len in 1..=40 {
            for at in 0..len {
                let mut text = "x".repeat(len);
                text.replace_range(at..=at, "\u{7}");
                let cleaned = clean(&text);
                assert_eq!(cleaned, "x".repeat(len - 1), "{len} {at}");
                let mut text = "x".repeat(len);
                text.replace_range(at..=at, "\u{202e}");
                assert_eq!(clean(&text), "x".repeat(len - 1), "{len} {at}");
            }
        }
    }

    #[test]
    fn append_matches_push_str_for_every_short_length_and_any_capacity() {
        let source = "abcdefghijklmnopqrstuvwxyzé€😀0123456789";
        let ends: Vec<usize> = (0..=source.len()).filter(|&i| source.is_char_boundary(i)).collect();
        for &start in &ends {
            for &end in ends.iter().filter(|&&e| e >= start) {
                let piece = &source[start..end];
                for before in ["", "x", "seven c", "exactly sixteen!"] {
                    let mut expected = String::from(before);
                    expected.push_str(piece);
                    let mut exact = String::with_capacity(before.len());
                    exact.push_str(before);
                    append(&mut exact, piece);
                    assert_eq!(exact, expected, "{before:?} + {piece:?}");
                    let mut roomy = String::with_capacity(64);
                    roomy.push_str(before);
                    append(&mut roomy, piece);
                    assert_eq!(roomy, expected);
                }
            }
        }
    }

    #[test]
    fn plain_text_and_line_structure_are_kept() {
        assert_eq!(clean("Lunch at 12:00\n\tRoom 4"), "Lunch at 12:00\n\tRoom 4");
        assert_eq!(clean("a\r\nb\rc"), "a\nb\nc");
        assert_eq!(clean("naïve café 日本 🎉"), "naïve café 日本 🎉");
    }

    #[test]
    fn ansi_sequences_are_removed_whole() {
        assert_eq!(clean("\x1b[31mred\x1b[0m"), "red");
        assert_eq!(clean("\x1b[2J\x1b[1;1Hclear"), "clear");
        assert_eq!(clean("\x1b]0;evil title\x07ok"), "ok");
        assert_eq!(clean("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"), "link");
        assert_eq!(clean("\u{9b}31mred"), "red");
        assert_eq!(clean("\x1bcreset"), "reset");
        assert_eq!(clean("end\x1b"), "end");
    }

    #[test]
    fn control_characters_are_removed() {
        assert_eq!(clean("a\x00b\x07c\x08d\x7fe"), "abcde");
        assert_eq!(clean("a\u{85}b"), "a\nb");
        assert_eq!(clean("a\u{90}b"), "ab");
    }

    #[test]
    fn invisible_and_bidi_characters_are_removed() {
        assert_eq!(clean("pay\u{202e}lid.exe"), "paylid.exe");
        assert_eq!(clean("a\u{200b}b\u{200d}c\u{feff}d\u{2066}e\u{2069}"), "abcde");
        assert_eq!(clean("soft\u{ad}hyphen"), "softhyphen");
        // "hi" spelled in Unicode tag characters is invisible; it must vanish.
        assert_eq!(clean("ok\u{e0068}\u{e0069}"), "ok");
        assert_eq!(clean("x\u{e0101}y"), "xy");
        // Fillers and joiners that render as nothing (the host's list, shared).
        assert_eq!(clean("a\u{3164}b\u{ffa0}c\u{34f}d\u{17b4}e\u{1bca0}f"), "abcdef");
    }

    #[test]
    fn the_word_at_a_time_path_agrees_with_the_byte_path() {
        // Every byte value at every position of a 20-byte run.
        for b in 0u8..=0x7f {
            for pos in 0..20 {
                let mut s = vec![b'a'; 20];
                s[pos] = b;
                let text = String::from_utf8(s).unwrap();
                let expected: String = text
                    .chars()
                    .filter(|c| (' '..='~').contains(c) || *c == '\n' || *c == '\t' || *c == '\r')
                    .map(|c| if c == '\r' { '\n' } else { c })
                    .collect();
                if b == 0x1b {
                    continue; // ESC starts a sequence that swallows the next byte
                }
                assert_eq!(clean(&text), expected, "byte {b:#x} at {pos}");
            }
        }
    }

    #[test]
    fn malformed_escapes_do_not_swallow_following_text() {
        assert_eq!(clean("\x1b[12\nnext"), "\nnext");
        assert_eq!(clean("\x1b]unterminated"), "");
    }
}
