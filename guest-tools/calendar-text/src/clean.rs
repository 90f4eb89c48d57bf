//! Cleaning one untrusted string before a model or a terminal reads it, with
//! wasmgate's one screening (the `text-safety` crate): escape sequences,
//! control characters, invisible, bidi and tag characters are removed (U+202E
//! can make `budget_\u{202e}fdp.exe` display as `budget_exe.pdf`). [`line`]
//! also folds every run of whitespace into one space and bounds the length;
//! [`text`] keeps line breaks.

use text_safety::Piece;

/// `text` cleaned, on one line, at most `max_chars` characters; a longer
/// field ends with `… (+N more characters)`.
pub fn line(text: &str, max_chars: usize) -> String {
    let mut out = String::new();
    let mut kept = 0usize;
    let mut dropped = 0usize;
    let mut pending_space = false;
    for c in visible_chars(text) {
        if c.is_whitespace() {
            pending_space = !out.is_empty();
            continue;
        }
        if kept >= max_chars {
            dropped += 1 + usize::from(pending_space);
            pending_space = false;
            continue;
        }
        if pending_space {
            out.push(' ');
            kept += 1;
            pending_space = false;
        }
        out.push(c);
        kept += 1;
    }
    if dropped > 0 {
        out.push_str(&format!("… (+{dropped} more characters)"));
    }
    out
}

/// `text` cleaned, keeping line breaks (every kind becomes `\n`) and tabs.
pub fn text(text: &str) -> String {
    text_safety::clean(text)
}

/// The characters of `text` that a reader is given, every line break as `\n`
/// (for [`line`] to treat as whitespace).
fn visible_chars(text: &str) -> impl Iterator<Item = char> + '_ {
    text_safety::scan(text).flat_map(|piece| {
        let (kept, line_break) = match piece {
            Piece::Text(kept) => (kept, None),
            Piece::LineBreak => ("", Some('\n')),
            Piece::Removed(_) => ("", None),
        };
        kept.chars().chain(line_break)
    })
}

#[cfg(test)]
mod tests {
    use super::{line, text};

    #[test]
    fn escape_sequences_are_removed_whole() {
        assert_eq!(line("\u{1b}[2J\u{1b}[31mURGENT\u{1b}[0m review", 100), "URGENT review");
        assert_eq!(line("\u{1b}]0;evil title\u{7}ok", 100), "ok");
        assert_eq!(line("\u{9b}31mred", 100), "red");
        assert_eq!(line("end\u{1b}", 100), "end");
    }

    #[test]
    fn bidi_invisible_tag_and_control_characters_are_removed() {
        assert_eq!(line("budget_\u{202e}fdp.exe", 100), "budget_fdp.exe");
        assert_eq!(line("a\u{200b}b\u{feff}c\u{2066}d\u{e0068}\u{e0069}", 100), "abcd");
        assert_eq!(line("bell\u{7} and\u{0} null\u{90}", 100), "bell and null");
        assert_eq!(line("naïve café 日本 🎉", 100), "naïve café 日本 🎉");
    }

    #[test]
    fn a_line_folds_whitespace_and_line_breaks_into_single_spaces() {
        assert_eq!(line("  Room 4\n\n\tbring\r\nnotes  ", 100), "Room 4 bring notes");
        assert_eq!(line("a\u{2028}b", 100), "a b");
    }

    #[test]
    fn fillers_that_render_as_nothing_are_invisible_too() {
        assert_eq!(line("a\u{3164}b\u{115f}c\u{34f}d\u{1d173}e", 100), "abcde");
    }

    #[test]
    fn a_long_field_is_cut_and_says_how_much_was_left_out() {
        assert_eq!(line("abcdefghij", 4), "abcd… (+6 more characters)");
        assert_eq!(line("ab cd", 2), "ab… (+3 more characters)");
        assert_eq!(line("abcd", 4), "abcd");
        assert_eq!(line(&"x".repeat(50_000), 10).len(), 10 + "… (+49990 more characters)".len());
    }

    #[test]
    fn the_shared_table_holds_for_text_and_for_a_line() {
        for case in text_safety::cases::CASES {
            assert_eq!(text(case.input), case.clean, "{}", case.name);
            let folded = case.clean.split_whitespace().collect::<Vec<_>>().join(" ");
            assert_eq!(line(case.input, 1000), folded, "{}", case.name);
        }
    }

    #[test]
    fn text_keeps_its_line_breaks() {
        assert_eq!(text("one\r\ntwo\rthree\n\u{1b}[1mfour\u{202e}"), "one\ntwo\nthree\nfour");
    }
}
