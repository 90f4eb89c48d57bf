//! Cleaning untrusted text before a model reads it, with wasmgate's one
//! screening (the `text-safety` crate): escape sequences, control characters,
//! invisible, bidi and tag characters are removed; tabs are kept and every
//! line break becomes `\n`, followed here by the current indentation.

use alloc::string::String;

use text_safety::Piece;

/// Appends `text` to `out`. Up to 16 bytes are copied with fixed-size moves
/// instead of `memcpy`: in the sandbox a `memcpy` is the `memory.copy`
/// instruction, which wasmtime runs as a call into the host, and the
/// renderer appends many short pieces (keys, `: `, indentation, words).
#[inline]
#[allow(unsafe_code)] // fixed-size copies into reserved capacity; see the SAFETY comment
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
pub fn push_clean_indented(out: &mut String, text: &str, indent: &str) {
    if text.len() <= 16 && text_safety::is_plain(text.as_bytes()) {
        // Most keys and values: no scan at all.
        append(out, text);
        return;
    }
    for piece in text_safety::scan(text) {
        match piece {
            Piece::Text(kept) => append(out, kept),
            Piece::LineBreak => {
                out.push('\n');
                append(out, indent);
            }
            Piece::Removed(_) => {}
        }
    }
}

/// Returns `text` cleaned.
pub fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_clean(&mut out, text);
    out
}

#[cfg(test)]
mod tests {
    use super::{append, clean, push_clean_indented};

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
    fn the_shared_table_holds_for_plain_and_indented_text() {
        for case in text_safety::cases::CASES {
            assert_eq!(clean(case.input), case.clean, "{}", case.name);
            let mut indented = String::new();
            push_clean_indented(&mut indented, case.input, "  ");
            assert_eq!(indented, case.clean.replace('\n', "\n  "), "{}", case.name);
        }
    }

    #[test]
    fn a_control_or_bidi_character_anywhere_in_a_string_of_any_length_is_removed() {
        for len in 1..=40 {
            for at in 0..len {
                for odd in ["\u{7}", "\u{202e}"] {
                    let mut text = "x".repeat(len);
                    text.replace_range(at..=at, odd);
                    assert_eq!(clean(&text), "x".repeat(len - 1), "{len} {at} {odd:?}");
                }
            }
        }
    }
}
