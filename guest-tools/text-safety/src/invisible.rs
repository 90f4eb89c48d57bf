//! The characters wasmgate treats as invisible.
//!
//! Zero-width and format characters, bidi controls, tag characters, variation selectors
//! and fillers that render as nothing: a reader cannot see them, so a hostile provider
//! can use them to hide instructions from the user who reviews a result, to make a
//! name look like another, or to make text display in an order other than the one a
//! model reads.

/// Whether `c` is invisible or reorders text.
#[inline]
#[must_use]
pub const fn is_invisible(c: char) -> bool {
    matches!(c as u32,
        // Soft hyphen, combining grapheme joiner, Arabic letter mark.
        0x00AD | 0x034F | 0x061C
        // Hangul choseong and jungseong fillers, Khmer inherent vowels.
        | 0x115F | 0x1160 | 0x17B4 | 0x17B5
        // Mongolian free variation selectors and vowel separator.
        | 0x180B..=0x180F
        // Zero-width space and joiners, left-to-right and right-to-left marks.
        | 0x200B..=0x200F
        // Bidi embeddings and overrides (LRE, RLE, PDF, LRO, RLO).
        | 0x202A..=0x202E
        // Word joiner, invisible operators, bidi isolates, deprecated format controls.
        | 0x2060..=0x206F
        // Hangul filler, byte order mark, halfwidth Hangul filler.
        | 0x3164 | 0xFEFF | 0xFFA0
        // Variation selectors 1 to 16: sixteen invisible symbols are a hex digit each, a
        // covert channel as good as the supplement's. (The host's sanitizer keeps one VS15
        // or VS16 right after a visible character, where it chooses its presentation.)
        | 0xFE00..=0xFE0F
        // Unassigned default-ignorables, then the interlinear annotation controls.
        | 0xFFF0..=0xFFFB
        // Shorthand format controls, musical symbol format controls.
        | 0x1BCA0..=0x1BCA3 | 0x1D173..=0x1D17A
        // Tag characters (invisible ASCII look-alikes used to smuggle instructions), the
        // variation selectors supplement, another covert channel, and the unassigned
        // default-ignorable code points around them, which render as nothing too.
        | 0xE0000..=0xE0FFF)
}

#[cfg(test)]
mod tests {
    use super::is_invisible;

    #[test]
    fn every_range_is_covered_at_both_ends_and_its_neighbours_are_not() {
        let ranges = [
            (0x00AD, 0x00AD),
            (0x034F, 0x034F),
            (0x061C, 0x061C),
            (0x115F, 0x1160),
            (0x17B4, 0x17B5),
            (0x180B, 0x180F),
            (0x200B, 0x200F),
            (0x202A, 0x202E),
            (0x2060, 0x206F),
            (0x3164, 0x3164),
            (0xFE00, 0xFE0F),
            (0xFEFF, 0xFEFF),
            (0xFFA0, 0xFFA0),
            (0xFFF0, 0xFFFB),
            (0x1BCA0, 0x1BCA3),
            (0x1D173, 0x1D17A),
            (0xE0000, 0xE0FFF),
        ];
        // Unassigned default-ignorables inside the last range, which its ends do not show.
        for c in [0xE0080, 0xE01F0] {
            assert!(is_invisible(char::from_u32(c).unwrap_or('x')), "U+{c:04X}");
        }
        for (first, last) in ranges {
            for c in [first, last] {
                assert!(is_invisible(char::from_u32(c).unwrap_or('x')), "U+{c:04X}");
            }
            for c in [first - 1, last + 1] {
                assert!(!is_invisible(char::from_u32(c).unwrap_or('x')), "U+{c:04X} is visible");
            }
        }
        for visible in ['a', ' ', '\n', 'é', '中', '😀', '\u{2028}'] {
            assert!(!is_invisible(visible), "{visible:?}");
        }
    }
}
