//! The shared table: untrusted inputs and what every user of this crate must make of
//! them. The host's sanitizer, each formatter component and the formatter template run
//! it in their own tests, through their own code paths, so none of them can drift.

/// One row: `input`, and the text that must come out (line breaks as `\n`).
#[derive(Debug, Clone, Copy)]
pub struct Case {
    /// What the row shows.
    pub name: &'static str,
    /// The untrusted text.
    pub input: &'static str,
    /// What a reader is given.
    pub clean: &'static str,
}

const fn case(name: &'static str, input: &'static str, clean: &'static str) -> Case {
    Case { name, input, clean }
}

/// Every row.
pub const CASES: &[Case] = &[
    case("plain text", "Lunch at 12:00, room 4", "Lunch at 12:00, room 4"),
    case("other scripts and emoji", "naïve café 日本 🎉", "naïve café 日本 🎉"),
    case("tabs and line feeds", "a\tb\nc", "a\tb\nc"),
    case("carriage returns", "a\r\nb\rc\r", "a\nb\nc\n"),
    case("NEL, LS and PS are line breaks", "a\u{85}b\u{2028}c\u{2029}d", "a\nb\nc\nd"),
    case("C0 controls and DEL", "a\u{0}b\u{7}c\u{8}d\u{7f}e\u{1f}f", "abcdef"),
    case("C1 controls", "a\u{80}b\u{9c}c\u{91}d", "abcd"),
    case("7-bit CSI", "\u{1b}[2J\u{1b}[1;1H\u{1b}[31mred\u{1b}[0m", "red"),
    case("a CSI cut by a line break keeps it", "\u{1b}[12\nnext", "\nnext"),
    case("a CSI cut by another character keeps it", "a\u{1b}[1\u{e9}b", "a\u{e9}b"),
    case("8-bit CSI", "\u{9b}31mred\u{9b}0m", "red"),
    case("OSC ended by BEL", "\u{1b}]0;evil title\u{7}ok", "ok"),
    case("OSC ended by ESC backslash", "\u{1b}]8;;http://e.invalid\u{1b}\\link\u{1b}]8;;\u{1b}\\", "link"),
    case("8-bit OSC with its payload", "a\u{9d}0;hidden title\u{9c}b", "ab"),
    case("8-bit OSC ended by BEL", "a\u{9d}8;;http://e.invalid\u{7}b", "ab"),
    case("8-bit DCS with its payload", "a\u{90}q#0;2;0;0;0\u{9c}b", "ab"),
    case("7-bit DCS, SOS, PM and APC", "a\u{1b}Pdcs\u{1b}\\b\u{1b}Xsos\u{7}c\u{1b}^pm\u{7}d\u{1b}_apc\u{7}e", "abcde"),
    case("8-bit SOS, PM and APC", "a\u{98}sos\u{9c}b\u{9e}pm\u{9c}c\u{9f}apc\u{9c}d", "abcd"),
    case("an unterminated control string runs to the end", "ok\u{1b}]unterminated", "ok"),
    case("an unterminated 8-bit control string too", "ok\u{9d}unterminated\nline", "ok"),
    case("two-character ESC sequences", "\u{1b}creset \u{1b}7saved\u{1b}8 \u{1b}Mup", "reset saved up"),
    case("ESC with intermediates", "\u{1b}(Bascii \u{1b}#8x", "ascii x"),
    case("a lone ESC", "end\u{1b}", "end"),
    case("ESC before a line break removes only ESC", "a\u{1b}\nb", "a\nb"),
    case("ESC before a non-ASCII character removes only ESC", "a\u{1b}\u{e9}b", "a\u{e9}b"),
    case("zero-width characters", "pay\u{200b}pal\u{feff} a\u{200c}b\u{2060}c", "paypal abc"),
    case("bidi overrides and isolates", "budget_\u{202e}fdp.exe \u{2066}x\u{2069}", "budget_fdp.exe x"),
    case("tag characters smuggling ASCII", "ok\u{e0069}\u{e0067}\u{e006e}\u{e006f}\u{e0072}\u{e0065}", "ok"),
    case("the rest of the default-ignorable block", "x\u{e0080}\u{e01f0}\u{e0fff}y", "xy"),
    case(
        "fillers that render as nothing",
        "a\u{3164}b\u{ffa0}c\u{34f}d\u{17b4}e\u{1bca0}f\u{115f}g\u{1d173}h",
        "abcdefgh",
    ),
    case("soft hyphen", "soft\u{ad}hyphen", "softhyphen"),
    case("variation selectors spelling hex digits", "ok\u{fe06}\u{fe08}\u{fe06}\u{fe09}", "ok"),
    case("variation selectors supplement", "x\u{e0101}y", "xy"),
    case(
        "an emoji's presentation selector is kept",
        "\u{2764}\u{fe0f} \u{2b50}\u{fe0f} 1\u{fe0f}\u{20e3} \u{21a9}\u{fe0e}",
        "\u{2764}\u{fe0f} \u{2b50}\u{fe0f} 1\u{fe0f}\u{20e3} \u{21a9}\u{fe0e}",
    ),
    case("one selector after a visible character, no more", "\u{fe0f}a\u{fe0f}\u{fe0f} \u{fe0e}", "a\u{fe0f} "),
    case("no selector after a line break", "a\n\u{fe0f}b", "a\nb"),
    case(
        "a joiner inside an emoji sequence is kept",
        "\u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467} \u{2764}\u{fe0f}\u{200d}\u{1f525}",
        "\u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467} \u{2764}\u{fe0f}\u{200d}\u{1f525}",
    ),
    case("a joiner between letters is removed", "a\u{200d}b", "ab"),
    case("a joiner after an emoji but before a letter is removed", "\u{1f468}\u{200d}b", "\u{1f468}b"),
    case("removal never joins what it separated into a sequence", "\u{1b}\u{200b}[31m", "[31m"),
];

#[cfg(test)]
mod tests {
    use super::CASES;

    #[test]
    fn the_scanner_gives_every_row() {
        for case in CASES {
            assert_eq!(crate::clean(case.input), case.clean, "{}", case.name);
        }
    }

    #[test]
    fn cleaning_is_idempotent_on_every_row() {
        for case in CASES {
            assert_eq!(crate::clean(case.clean), case.clean, "{}", case.name);
        }
    }
}
