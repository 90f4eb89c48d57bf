//! Cleaning one untrusted string before a model or a terminal reads it.
//!
//! Removed: ANSI/VT escape sequences (whole), C0 and C1 control characters,
//! zero-width and other invisible characters, bidi embeddings, overrides and
//! isolates (U+202E can make `budget_\u{202e}fdp.exe` display as
//! `budget_exe.pdf`), and Unicode tag characters (which can spell a hidden
//! ASCII message). [`line`] also folds every run of whitespace into one space
//! and bounds the length; [`text`] keeps line breaks.

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

/// `text` cleaned, keeping line breaks (`\r\n` and `\r` become `\n`) and tabs.
pub fn text(text: &str) -> String {
    let normalized = text.replace("\r\n", "\n").replace('\r', "\n");
    visible_chars(&normalized).filter(|c| !c.is_control() || matches!(c, '\n' | '\t')).collect()
}

/// The characters of `text` without escape sequences and without invisible,
/// bidi, tag and control characters (line breaks and tabs excepted, for the
/// callers to treat as whitespace).
fn visible_chars(text: &str) -> impl Iterator<Item = char> + '_ {
    let mut chars = text.chars().peekable();
    std::iter::from_fn(move || {
        loop {
            let c = chars.next()?;
            match c {
                '\u{1b}' => skip_escape(&mut chars),
                '\u{9b}' => skip_csi(&mut chars),
                '\n' | '\t' => return Some(c),
                '\u{85}' | '\u{2028}' | '\u{2029}' => return Some('\n'),
                c if c.is_control() || invisible_chars::is_invisible(c) => {}
                c => return Some(c),
            }
        }
    })
}

type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

/// Skips the rest of an escape sequence whose ESC was just read.
fn skip_escape(chars: &mut Chars<'_>) {
    match chars.peek() {
        Some('[') => {
            chars.next();
            skip_csi(chars);
        }
        // OSC, DCS, SOS, PM, APC: a string ended by BEL or ESC \ (or the end).
        Some(']' | 'P' | 'X' | '^' | '_') => {
            while let Some(c) = chars.next() {
                if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                    break;
                }
            }
        }
        Some(c) if c.is_ascii() && !c.is_ascii_control() => {
            chars.next();
        }
        _ => {}
    }
}

/// Skips CSI parameters, intermediates and the final byte.
fn skip_csi(chars: &mut Chars<'_>) {
    while let Some(&c) = chars.peek() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            chars.next();
            return;
        }
        if !('\u{20}'..='\u{3f}').contains(&c) {
            return;
        }
        chars.next();
    }
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
    fn text_keeps_its_line_breaks() {
        assert_eq!(text("one\r\ntwo\rthree\n\u{1b}[1mfour\u{202e}"), "one\ntwo\nthree\nfour");
    }
}
