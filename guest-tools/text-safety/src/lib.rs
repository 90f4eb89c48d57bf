//! wasmgate's one text screening, shared by the host and by every formatter component.
//!
//! Text from an untrusted provider can carry what a reader does not see but a model
//! or a terminal acts on: escape sequences that rewrite a screen or hide a payload,
//! control characters, invisible and bidi characters that hide words from the person
//! who reviews a result or make text display in another order than a model reads it.
//! This crate says, once, what is removed and where a line breaks:
//!
//! - [`is_invisible`]: the invisible, format, bidi and tag characters (the whole
//!   default-ignorable set);
//! - [`escape_end`]: the one escape-sequence scanner (7-bit and 8-bit CSI, OSC, DCS,
//!   SOS, PM, APC, removed with their payloads);
//! - [`scan`]: text as [`Piece`]s (runs kept as they are, line breaks, removals), for
//!   users that write the text their own way (indented, folded onto one line);
//! - [`clean`]: the cleaned text, line breaks as `\n`;
//! - [`escape_for_display`]: the text with what cleaning would remove shown as
//!   `\u{…}` escapes, for a person who must see exactly what a provider sent;
//! - [`escape_for_log`]: the same on one line (line breaks escaped too), the one form
//!   in which untrusted text goes into a log line; [`escape_for_log_cut`] cuts it;
//! - [`truncate`] and [`truncated`]: text cut to a number of characters, the cut marked
//!   with [`CUT_MARK`];
//! - [`cases`]: the table every user runs in its own tests.
//!
//! `no_std` (with `alloc`) and without dependencies: formatter components built for
//! `wasm32-wasip2` use it as they are, and import nothing for it.
#![no_std]

extern crate alloc;

pub mod cases;
mod escape;
mod invisible;
mod scan;

use alloc::string::String;
use core::fmt::Write as _;

pub use escape::escape_end;
pub use invisible::is_invisible;
pub use scan::{Piece, Removed, Scanner, is_plain, scan};

/// `text` cleaned: what [`scan`] removes is gone, every line break is `\n`.
#[must_use]
pub fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for piece in scan(text) {
        match piece {
            Piece::Text(kept) => out.push_str(kept),
            Piece::LineBreak => out.push('\n'),
            Piece::Removed(_) => {}
        }
    }
    out
}

/// `text` with invisible and control characters (except `\n`) shown as `\u{…}`
/// escapes, for showing a person exactly what a provider sent (review, error messages).
#[must_use]
pub fn escape_for_display(text: &str) -> String {
    escape(text, true, usize::MAX)
}

/// `text` as it may go into a log line: every control character (line breaks
/// included), invisible, bidi and line-separator character shown as a `\u{…}` escape, so
/// untrusted text can neither rewrite a terminal, nor disguise itself, nor forge a line.
#[must_use]
pub fn escape_for_log(text: &str) -> String {
    escape(text, false, usize::MAX)
}

/// [`escape_for_log`]'s form of `text` cut to at most `max_chars` characters (an escape
/// is kept whole or not at all), with [`CUT_MARK`] after them when anything was cut.
/// Only what is kept is escaped, so a long text costs no more than its excerpt.
#[must_use]
pub fn escape_for_log_cut(text: &str, max_chars: usize) -> String {
    escape(text, false, max_chars)
}

fn escape(text: &str, keep_newlines: bool, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars));
    let mut kept = 0usize;
    for c in text.chars() {
        let kept_newline = keep_newlines && c == '\n';
        let escaped = is_invisible(c) || (c.is_control() && !kept_newline) || matches!(c, '\u{2028}' | '\u{2029}');
        // An escape is `\u{` + up to six hex digits + `}`.
        let width = if escaped { 4 + hex_digits(c as u32) } else { 1 };
        if kept + width > max_chars {
            out.push_str(CUT_MARK);
            break;
        }
        kept += width;
        if escaped {
            // Writing to a String cannot fail.
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

fn hex_digits(n: u32) -> usize {
    (32 - (n | 1).leading_zeros()).div_ceil(4) as usize
}

/// What marks the place where [`truncate`] cut a text.
pub const CUT_MARK: &str = "…[cut]";

/// Keeps at most `max_chars` characters of `text`, and [`CUT_MARK`] after them when
/// anything was cut (the marker is not counted).
pub fn truncate(text: &mut String, max_chars: usize) {
    if let Some((at, _)) = text.char_indices().nth(max_chars) {
        text.truncate(at);
        text.push_str(CUT_MARK);
    }
}

/// `text` with at most `max_chars` of its characters, as [`truncate`] cuts it.
#[must_use]
pub fn truncated(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((at, _)) => {
            let mut cut = String::with_capacity(at + CUT_MARK.len());
            cut.push_str(&text[..at]);
            cut.push_str(CUT_MARK);
            cut
        }
        None => String::from(text),
    }
}

#[cfg(test)]
mod tests {
    use super::{CUT_MARK, escape_for_display, escape_for_log, escape_for_log_cut, truncate, truncated};
    use alloc::string::String;

    #[test]
    fn display_escaping_shows_what_cleaning_would_hide() {
        assert_eq!(escape_for_display("a\u{200b}b\u{1b}[1m\nc"), "a\\u{200b}b\\u{1b}[1m\nc");
        assert_eq!(escape_for_display("x\u{e0069}\u{2028}\u{9d}"), "x\\u{e0069}\\u{2028}\\u{9d}");
    }

    #[test]
    fn log_escaping_keeps_everything_on_one_visible_line() {
        assert_eq!(escape_for_log("a\u{200b}b\u{1b}[1m\nc\r\td"), "a\\u{200b}b\\u{1b}[1m\\u{a}c\\u{d}\\u{9}d");
        assert_eq!(escape_for_log("\u{202e}gnp.exe\u{2029}"), "\\u{202e}gnp.exe\\u{2029}");
        assert_eq!(escape_for_log("plain text, é and 日本"), "plain text, é and 日本");
    }

    #[test]
    fn a_cut_log_excerpt_keeps_whole_escapes_and_marks_the_cut() {
        assert_eq!(escape_for_log_cut("a\u{200b}b", 100), escape_for_log("a\u{200b}b"));
        assert_eq!(escape_for_log_cut("a\u{200b}b", 10), "a\\u{200b}b");
        assert_eq!(escape_for_log_cut("a\u{200b}b", 9), alloc::format!("a\\u{{200b}}{CUT_MARK}"));
        // The escape of U+200B is 8 characters: it does not fit after `a` in 8.
        assert_eq!(escape_for_log_cut("a\u{200b}b", 8), alloc::format!("a{CUT_MARK}"));
        assert_eq!(escape_for_log_cut("a\nb", 4), alloc::format!("a{CUT_MARK}"));
        assert_eq!(escape_for_log_cut("a\nb", 7), "a\\u{a}b");
        assert_eq!(escape_for_log_cut("\u{e0069}x", 10), "\\u{e0069}x");
        assert_eq!(escape_for_log_cut("日本語", 2), alloc::format!("日本{CUT_MARK}"));
        assert_eq!(escape_for_log_cut("", 0), "");
        let long = "\u{1b}".repeat(100_000);
        let cut = escape_for_log_cut(&long, 50);
        assert!(cut.chars().count() <= 50 + CUT_MARK.chars().count() && cut.ends_with(CUT_MARK), "{cut}");
    }

    #[test]
    fn truncation_counts_characters_and_marks_the_cut() {
        assert_eq!(truncated("héllo", 5), "héllo");
        assert_eq!(truncated("héllo", 2), alloc::format!("hé{CUT_MARK}"));
        assert_eq!(truncated("日本語", 0), CUT_MARK);
        let mut text = String::from("abcdef");
        truncate(&mut text, 3);
        assert_eq!(text, alloc::format!("abc{CUT_MARK}"));
        let mut short = String::from("ab");
        truncate(&mut short, 3);
        assert_eq!(short, "ab");
    }
}
