//! Removing what a reader cannot see from untrusted text, with wasmgate's one screening
//! (the `text-safety` crate, which the formatter components use too): escape sequences
//! (whole, 7-bit and 8-bit), control characters (except `\n` and `\t`), zero-width and
//! other invisible characters, Unicode tag characters (which can smuggle a whole hidden
//! ASCII message), and bidirectional overrides and isolates (which make text display in a
//! different order than a model reads it). Every line break (`\r\n`, a lone `\r`, NEL,
//! LS, PS) becomes `\n`, so a carriage return cannot overwrite a line on a terminal.
//!
//! A zero-width joiner between two emoji is kept (it is how family and profession emoji
//! are written, ❤️‍🔥 too), and so is one text or emoji presentation selector (VS15, VS16)
//! right after a visible character (⭐️, 1️⃣, ↩︎); everywhere else they are removed like
//! the other invisible characters, the other variation selectors always: sixteen
//! invisible symbols can spell out a hidden message.

use text_safety::{Piece, Removed};

/// Text after [`sanitize`], with counts of what was removed (the detector reports them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sanitized {
    /// The cleaned text.
    pub text: String,
    /// Invisible, zero-width, tag and bidi control characters removed.
    pub invisible: usize,
    /// Other control characters removed (C0 except `\n` `\t`, DEL, C1).
    pub controls: usize,
    /// Escape sequences removed (each counts once, however long).
    pub escapes: usize,
}

/// Cleans `text`; see the module docs for what goes.
#[must_use]
pub fn sanitize(text: &str) -> Sanitized {
    let mut out = Sanitized { text: String::with_capacity(text.len()), ..Sanitized::default() };
    for piece in text_safety::scan(text) {
        match piece {
            Piece::Text(kept) => out.text.push_str(kept),
            Piece::LineBreak => out.text.push('\n'),
            Piece::Removed(Removed::Escape) => out.escapes += 1,
            Piece::Removed(Removed::Control) => out.controls += 1,
            Piece::Removed(Removed::Invisible) => out.invisible += 1,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_table_holds() {
        for case in text_safety::cases::CASES {
            assert_eq!(sanitize(case.input).text, case.clean, "{}", case.name);
        }
    }

    #[test]
    fn what_was_removed_is_counted_by_kind() {
        let s = sanitize("a\tb\nc\u{0}d\u{7}e\u{7f}f\u{91}g");
        assert_eq!((s.text.as_str(), s.controls), ("a\tb\ncdefg", 4));
        let s = sanitize(
            "\u{1b}[31mred\u{1b}[0m \u{1b}]0;title\u{7}x \u{1b}]8;;http://e\u{1b}\\link\u{1b}]8;;\u{1b}\\ \u{9b}2Jy \u{1b}Mz",
        );
        assert_eq!((s.text.as_str(), s.escapes), ("red x link y z", 7));
        let hidden: String = "ignore".chars().map(|c| char::from_u32(0xE0000 + c as u32).unwrap_or('?')).collect();
        let s = sanitize(&format!("pay\u{200b}pal \u{202e}txt.exe\u{202c} \u{2066}x\u{2069} \u{feff}{hidden}"));
        assert_eq!((s.text.as_str(), s.invisible), ("paypal txt.exe x ", 6 + 6));
        let s = sanitize("\u{fe0f}a\u{fe0f}\u{fe0f} \u{fe0e}");
        assert_eq!((s.text.as_str(), s.invisible), ("a\u{fe0f} ", 3));
    }
}
