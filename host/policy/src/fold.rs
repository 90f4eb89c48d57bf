//! Cheap confusable folding for the detector: characters that look like ASCII letters are mapped to
//! them, so `ｉｇｎｏｒｅ` (fullwidth), `𝐢𝐠𝐧𝐨𝐫𝐞` (mathematical bold), `ⓘⓖⓝⓞⓡⓔ` (circled) and
//! `іgnоrе` (with Cyrillic і, о, е) all read as `ignore`. This is a small table, not Unicode's
//! full confusables list: it covers the substitutions that cost an attacker nothing to type.
//!
//! Folding is only for matching. The text the model receives is never folded.

/// Folds one character to the ASCII character it imitates, if it is a known look-alike.
pub fn fold_char(c: char) -> char {
    let u = c as u32;
    let ascii = match u {
        // Fullwidth ASCII and the ideographic space.
        0xFF01..=0xFF5E => u - 0xFF01 + 0x21,
        0x3000 => 0x20,
        // Mathematical alphanumerics: 13 alphabets of 52 letters (A-Z a-z), then digits.
        0x1D400..=0x1D6A3 => {
            let i = (u - 0x1D400) % 52;
            if i < 26 { 0x41 + i } else { 0x61 + i - 26 }
        }
        0x1D7CE..=0x1D7FF => 0x30 + (u - 0x1D7CE) % 10,
        // Circled and parenthesized letters.
        0x24B6..=0x24CF => 0x41 + u - 0x24B6,
        0x24D0..=0x24E9 => 0x61 + u - 0x24D0,
        0x249C..=0x24B5 => 0x61 + u - 0x249C,
        _ => return table(c).unwrap_or(c),
    };
    char::from_u32(ascii).unwrap_or(c)
}

/// Cyrillic and Greek letters that render like Latin ones in common fonts.
fn table(c: char) -> Option<char> {
    Some(match c {
        'а' | 'α' => 'a',
        'в' | 'β' => 'b',
        'с' | 'ϲ' => 'c',
        'ԁ' => 'd',
        'е' | 'ε' => 'e',
        'һ' => 'h',
        'і' | 'ι' | 'ı' => 'i',
        'ј' => 'j',
        'к' | 'κ' => 'k',
        'м' => 'm',
        'п' | 'η' => 'n',
        'о' | 'ο' | 'σ' => 'o',
        'р' | 'ρ' => 'p',
        'ѕ' => 's',
        'т' | 'τ' => 't',
        'υ' => 'u',
        'ѵ' | 'ν' => 'v',
        'ԝ' | 'ω' => 'w',
        'х' | 'χ' => 'x',
        'у' | 'γ' => 'y',
        'А' | 'Α' => 'A',
        'В' | 'Β' => 'B',
        'С' => 'C',
        'Е' | 'Ε' => 'E',
        'Н' | 'Η' => 'H',
        'І' | 'Ι' => 'I',
        'Ј' => 'J',
        'К' | 'Κ' => 'K',
        'М' | 'Μ' => 'M',
        'Ν' => 'N',
        'О' | 'Ο' => 'O',
        'Р' | 'Ρ' => 'P',
        'Ѕ' => 'S',
        'Т' | 'Τ' => 'T',
        'Х' | 'Χ' => 'X',
        'У' | 'Υ' => 'Y',
        'Ζ' => 'Z',
        _ => return None,
    })
}

/// `text` folded and lowercased, with every run of spaces and tabs made one space (newlines are
/// kept, because some rules look at line starts).
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_space = false;
    let space = |out: &mut String, in_space: &mut bool| {
        if !*in_space {
            out.push(' ');
        }
        *in_space = true;
    };
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        // An ASCII character folds to itself and has one lower case: no decoding, no
        // lookup (the white space of `char::is_whitespace` in ASCII is 9 to 13 and 32).
        if b.is_ascii() {
            match b {
                b'\n' => {
                    out.push('\n');
                    in_space = false;
                }
                b'\t' | 0x0b | 0x0c | b'\r' | b' ' => space(&mut out, &mut in_space),
                _ => {
                    out.push(char::from(b.to_ascii_lowercase()));
                    in_space = false;
                }
            }
            i += 1;
            continue;
        }
        let Some(c) = text.get(i..).and_then(|rest| rest.chars().next()) else { break };
        i += c.len_utf8();
        let c = fold_char(c);
        if c == '\n' {
            out.push('\n');
            in_space = false;
        } else if c.is_whitespace() {
            space(&mut out, &mut in_space);
        } else {
            out.extend(c.to_lowercase());
            in_space = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fullwidth_math_circled_and_cyrillic_lookalikes_fold_to_ascii() {
        assert_eq!(normalize("ＩＧＮＯＲＥ"), "ignore");
        assert_eq!(normalize("𝐈𝐠𝐧𝐨𝐫𝐞 𝟏"), "ignore 1");
        assert_eq!(normalize("𝒊𝒈𝒏𝒐𝒓𝒆"), "ignore");
        assert_eq!(normalize("ⓘⓖⓝⓞⓡⓔ"), "ignore");
        assert_eq!(normalize("іgnоrе"), "ignore");
    }

    #[test]
    fn whitespace_runs_collapse_but_newlines_stay() {
        assert_eq!(normalize("a \t\u{a0} b\n  c"), "a b\n c");
    }

    /// What `normalize` does, a character at a time: what it is checked against.
    fn normalize_specified(text: &str) -> String {
        let mut out = String::new();
        let mut in_space = false;
        for c in text.chars().map(fold_char) {
            if c == '\n' {
                out.push('\n');
                in_space = false;
            } else if c.is_whitespace() {
                if !in_space {
                    out.push(' ');
                }
                in_space = true;
            } else {
                out.extend(c.to_lowercase());
                in_space = false;
            }
        }
        out
    }

    #[test]
    fn a_text_is_normalized_as_a_character_at_a_time() {
        let pieces = [
            "a", "Z", "0", " ", "  ", "\t", "\n", "\r", "\u{b}", "\u{c}", "\u{0}", "\u{7f}", "\u{85}", "\u{a0}",
            "\u{3000}", "\u{2003}", "Ｉ", "𝐈", "ⓘ", "і", "Σ", "İ", "ẞ", "é", "日", "!", "-", "ſ", "K",
        ];
        for text in crate::generated::texts(20_000, 24, &pieces) {
            assert_eq!(normalize(&text), normalize_specified(&text), "{text:?}");
        }
        // Every ASCII byte, alone and between others.
        for b in 0..=127u8 {
            let text = format!("A{}b{}  {}", char::from(b), char::from(b), char::from(b));
            assert_eq!(normalize(&text), normalize_specified(&text), "{b}");
        }
    }

    #[test]
    fn other_scripts_are_left_alone() {
        assert_eq!(normalize("日本語 Ελλάδα"), "日本語 eλλάδa");
    }
}
