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
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_invisible(c) || (c.is_control() && c != '\n') || matches!(c, '\u{2028}' | '\u{2029}') {
            // Writing to a String cannot fail.
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape_for_display;

    #[test]
    fn display_escaping_shows_what_cleaning_would_hide() {
        assert_eq!(escape_for_display("a\u{200b}b\u{1b}[1m\nc"), "a\\u{200b}b\\u{1b}[1m\nc");
        assert_eq!(escape_for_display("x\u{e0069}\u{2028}\u{9d}"), "x\\u{e0069}\\u{2028}\\u{9d}");
    }
}
