//! Removing what a reader cannot see from untrusted text: control characters (except `\n` and
//! `\t`), ANSI/VT escape sequences, zero-width and other invisible characters, Unicode tag
//! characters (which can smuggle a whole hidden ASCII message), and bidirectional overrides and
//! isolates (which make text display in a different order than a model reads it).
//!
//! `\r\n` and a lone `\r` become `\n`, so a carriage return cannot overwrite a line on a terminal.
//! A zero-width joiner between two emoji is kept (it is how family and profession emoji are
//! written, ❤️‍🔥 too), and so is one text or emoji presentation selector (VS15, VS16) right
//! after a visible character (⭐️, 1️⃣, ↩︎); everywhere else they are removed like the other
//! invisible characters, the other variation selectors always: sixteen invisible symbols
//! can spell out a hidden message.

/// Text after [`sanitize`], with counts of what was removed (the detector reports them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sanitized {
    /// The cleaned text.
    pub text: String,
    /// Invisible, zero-width, tag and bidi control characters removed.
    pub invisible: usize,
    /// Other control characters removed (C0 except `\n` `\t`, DEL, C1).
    pub controls: usize,
    /// ANSI/VT escape sequences removed (each counts once, however long).
    pub escapes: usize,
}

/// Whether `c` is invisible or reorders text: zero-width characters, format characters, tag
/// characters, bidi controls, fillers that render as nothing. The one list, shared with the
/// sandbox's log filter and the formatter components.
pub use invisible_chars::is_invisible;

fn is_control(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

fn is_emoji(c: Option<char>) -> bool {
    c.is_some_and(|c| matches!(c as u32, 0x2600..=0x27BF | 0x1F000..=0x1FAFF))
}

/// Whether the cleaned text ends with an emoji, perhaps with its presentation selector
/// (❤️ before the joiner of ❤️‍🔥).
fn joins_emoji(text: &str) -> bool {
    let mut last = text.chars().rev();
    match last.next() {
        Some('\u{fe0f}') => is_emoji(last.next()),
        c => is_emoji(c),
    }
}

/// Whether a presentation selector may follow `c`: a visible character that is not itself
/// a selector or a joiner.
fn presents(c: Option<char>) -> bool {
    c.is_some_and(|c| !c.is_whitespace() && !matches!(c, '\u{fe0e}' | '\u{fe0f}' | '\u{200d}'))
}

/// Cleans `text`; see the module docs for what goes.
pub fn sanitize(text: &str) -> Sanitized {
    let mut out = Sanitized { text: String::with_capacity(text.len()), ..Sanitized::default() };
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\u{1b}' | '\u{9b}' | '\u{9d}' | '\u{90}' => {
                i = skip_escape(&chars, i);
                out.escapes += 1;
                continue;
            }
            '\r' => {
                out.text.push('\n');
                if chars.get(i + 1) == Some(&'\n') {
                    i += 1;
                }
            }
            '\u{200d}' if joins_emoji(&out.text) && is_emoji(chars.get(i + 1).copied()) => out.text.push(c),
            // Text or emoji presentation of the character just before (❤️ ⭐️ 1️⃣ ↩︎): one
            // selector after a visible character, so at most one hidden choice per
            // character a reader sees.
            '\u{fe0e}' | '\u{fe0f}' if presents(out.text.chars().last()) => out.text.push(c),
            c if is_invisible(c) => out.invisible += 1,
            c if is_control(c) => out.controls += 1,
            c => out.text.push(c),
        }
        i += 1;
    }
    out
}

/// The index just past the escape sequence that starts at `start`: CSI (`ESC [` or U+009B, up to
/// a final byte in `@`..`~`), OSC/DCS/APC/PM/SOS (up to BEL or `ESC \` or U+009C), or a two
/// character `ESC x`. An unterminated sequence runs to the end of the text.
fn skip_escape(chars: &[char], start: usize) -> usize {
    let (kind, mut i) = match (chars[start], chars.get(start + 1)) {
        ('\u{9b}', _) => ('[', start + 1),
        ('\u{9d}', _) => (']', start + 1),
        ('\u{90}', _) => ('P', start + 1),
        ('\u{1b}', Some(&k)) => (k, start + 2),
        _ => return start + 1,
    };
    match kind {
        '[' => {
            while i < chars.len() {
                let c = chars[i];
                i += 1;
                if ('@'..='~').contains(&c) {
                    break;
                }
                if !(' '..='?').contains(&c) {
                    // Not a CSI parameter or intermediate: the sequence was malformed; stop before it.
                    return i - 1;
                }
            }
            i
        }
        ']' | 'P' | '_' | '^' | 'X' => {
            while i < chars.len() {
                match chars[i] {
                    '\u{7}' | '\u{9c}' => return i + 1,
                    '\u{1b}' if chars.get(i + 1) == Some(&'\\') => return i + 2,
                    _ => i += 1,
                }
            }
            i
        }
        _ => i.min(chars.len()),
    }
}

/// `text` with invisible and control characters (except `\n`) shown as `\u{…}` escapes, for
/// showing a human exactly what a provider sent (review diffs, error messages).
pub fn escape_for_display(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_invisible(c) || (c.is_control() && c != '\n') {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newlines_and_tabs_survive_and_other_controls_go() {
        let s = sanitize("a\tb\nc\u{0}d\u{7}e\u{7f}f\u{85}g");
        assert_eq!(s.text, "a\tb\ncdefg");
        assert_eq!(s.controls, 4);
    }

    #[test]
    fn carriage_returns_become_newlines() {
        assert_eq!(sanitize("a\r\nb\rc").text, "a\nb\nc");
    }

    #[test]
    fn ansi_escape_sequences_are_removed_whole() {
        let s = sanitize(
            "\u{1b}[31mred\u{1b}[0m \u{1b}]0;title\u{7}x \u{1b}]8;;http://e\u{1b}\\link\u{1b}]8;;\u{1b}\\ \u{9b}2Jy \u{1b}Mz",
        );
        assert_eq!(s.text, "red x link y z");
        assert_eq!(s.escapes, 7);
    }

    #[test]
    fn an_unterminated_escape_cannot_swallow_more_than_its_own_sequence_kind() {
        assert_eq!(sanitize("a\u{1b}[12;").text, "a");
        assert_eq!(sanitize("a\u{1b}[1\u{e9}b").text, "a\u{e9}b");
        assert_eq!(sanitize("a\u{1b}").text, "a");
    }

    #[test]
    fn zero_width_bidi_and_tag_characters_are_removed_and_counted() {
        let hidden: String = "ignore".chars().map(|c| char::from_u32(0xE0000 + c as u32).unwrap_or('?')).collect();
        let s = sanitize(&format!("pay\u{200b}pal \u{202e}txt.exe\u{202c} \u{2066}x\u{2069} \u{feff}{hidden}"));
        assert_eq!(s.text, "paypal txt.exe x ");
        assert_eq!(s.invisible, 6 + 6);
    }

    #[test]
    fn variation_selectors_go_but_an_emojis_presentation_stays() {
        // One hex digit per selector: "hi" hidden after a visible word.
        let hidden = "ok\u{fe06}\u{fe08}\u{fe06}\u{fe09}";
        let s = sanitize(hidden);
        assert_eq!((s.text.as_str(), s.invisible), ("ok", 4));
        for kept in [
            "\u{2764}\u{fe0f} and \u{263a}\u{fe0e}",
            "\u{2b50}\u{fe0f} \u{25b6}\u{fe0f} 1\u{fe0f}\u{20e3} \u{21a9}\u{fe0e}",
        ] {
            let s = sanitize(kept);
            assert_eq!((s.text.as_str(), s.invisible), (kept, 0), "{kept:?}");
        }
        // One after a visible character; none at the start, after a space or a second.
        let s = sanitize("\u{fe0f}a\u{fe0f}\u{fe0f} \u{fe0e}");
        assert_eq!((s.text.as_str(), s.invisible), ("a\u{fe0f} ", 3));
        // Unassigned default-ignorables render as nothing too.
        assert_eq!(sanitize("x\u{e0080}\u{e01f0}\u{fff0}y").text, "xy");
    }

    #[test]
    fn a_zero_width_joiner_inside_an_emoji_sequence_is_kept() {
        for sequence in ["\u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467}", "\u{2764}\u{fe0f}\u{200d}\u{1f525}"] {
            let s = sanitize(sequence);
            assert_eq!((s.text.as_str(), s.invisible), (sequence, 0), "{sequence:?}");
        }
        assert_eq!(sanitize("a\u{200d}b").text, "ab");
    }

    #[test]
    fn display_escaping_shows_what_sanitizing_would_hide() {
        assert_eq!(escape_for_display("a\u{200b}b\u{1b}[1m\nc"), "a\\u{200b}b\\u{1b}[1m\nc");
    }
}
