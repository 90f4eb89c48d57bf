//! The output buffer: line-oriented, cleaned, and bounded.
//!
//! Every untrusted string goes through [`Out::clean`] (see
//! [`crate::sanitize`]); only the renderer's own punctuation goes through
//! [`Out::push`]. Once the budget is reached the buffer is cut on a character
//! boundary, marked truncated, and ignores everything after.

use alloc::string::String;
use core::fmt::{Display, Write as _};

use crate::sanitize::{append, push_clean, push_clean_indented};

/// The marker that ends truncated output.
pub const TRUNCATED: &str = "\n[... output truncated by the formatter]";

#[derive(Debug)]
pub(crate) struct Out {
    text: String,
    /// Where content must stop so that the truncation marker still fits.
    budget: usize,
    truncated: bool,
}

impl Out {
    pub fn new(max_bytes: usize) -> Self {
        Out { text: String::new(), budget: max_bytes.saturating_sub(TRUNCATED.len()), truncated: false }
    }

    pub fn full(&self) -> bool {
        self.truncated
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Where the text ends now, to [`Out::rewind`] to.
    pub fn mark(&self) -> (usize, bool) {
        (self.text.len(), self.truncated)
    }

    /// Drops everything written since `mark`.
    pub fn rewind(&mut self, (len, truncated): (usize, bool)) {
        self.text.truncate(len);
        self.truncated = truncated;
    }

    pub fn start_line(&mut self, indent: usize) {
        if self.text.is_empty() {
            self.push(spaces(indent));
        } else {
            self.push(break_and_spaces(indent));
        }
    }

    pub fn line(&mut self, indent: usize, text: &str) {
        self.start_line(indent);
        self.push(text);
    }

    /// A bracketed one-line placeholder built from untrusted parts.
    pub fn placeholder(&mut self, parts: &[&str]) {
        self.start_line(0);
        self.push("[");
        for part in parts {
            self.clean(part);
        }
        self.push("]");
    }

    /// Untrusted multi-line text on a line of its own, each line indented.
    pub fn text(&mut self, indent: usize, text: &str) {
        self.start_line(indent);
        self.continue_text(indent, text);
    }

    /// Untrusted text continuing the current line; later lines are indented.
    pub fn continue_text(&mut self, indent: usize, text: &str) {
        if self.truncated {
            return;
        }
        push_clean_indented(&mut self.text, text, spaces(indent));
        if self.text.len() > self.budget {
            self.cut();
        }
    }

    /// Appends cleaned untrusted text, within the budget.
    pub fn clean(&mut self, text: &str) {
        if self.truncated {
            return;
        }
        push_clean(&mut self.text, text);
        if self.text.len() > self.budget {
            self.cut();
        }
    }

    /// Appends trusted text, within the budget.
    pub fn push(&mut self, text: &str) {
        if self.truncated {
            return;
        }
        append(&mut self.text, text);
        if self.text.len() > self.budget {
            self.cut();
        }
    }

    /// Appends a number or other trusted value, within the budget.
    pub fn display(&mut self, value: impl Display) {
        if self.truncated {
            return;
        }
        let _ = write!(self.text, "{value}");
        if self.text.len() > self.budget {
            self.cut();
        }
    }

    /// Appends an integer without going through `core::fmt`, which is slow.
    pub fn integer(&mut self, mut value: u64) {
        let mut digits = [0u8; 20];
        let mut start = digits.len();
        loop {
            start -= 1;
            digits[start] = b'0' + (value % 10) as u8;
            value /= 10;
            if value == 0 {
                break;
            }
        }
        // Only ASCII digits were written.
        self.push(core::str::from_utf8(&digits[start..]).unwrap_or("?"));
    }

    /// Appends another buffer's rendering as the next line(s).
    pub fn append(&mut self, other: &Out) {
        if !other.text.is_empty() {
            if !self.text.is_empty() {
                self.push("\n");
            }
            self.push(&other.text);
        }
        self.truncated |= other.truncated;
    }

    /// Cuts the text back to the budget on a char boundary and marks it truncated.
    fn cut(&mut self) {
        let mut end = self.budget.min(self.text.len());
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        self.text.truncate(end);
        self.truncated = true;
    }

    pub fn finish(mut self) -> String {
        if self.truncated {
            self.text.push_str(TRUNCATED);
        }
        self.text
    }
}

/// A line break and indentation, as one slice of a constant, so starting a
/// line is one copy. Indentation deeper than the constant is capped: JSON
/// nesting is limited to 128 levels by the parser, and so is its indentation
/// well before that matters to a reader.
const BREAK_AND_SPACES: &str = concat!(
    "\n",
    "                                                                ",
    "                                                                ",
    "                                                                ",
    "                                                                ",
);

fn break_and_spaces(indent: usize) -> &'static str {
    &BREAK_AND_SPACES[..1 + indent.min(BREAK_AND_SPACES.len() - 1)]
}

fn spaces(indent: usize) -> &'static str {
    &break_and_spaces(indent)[1..]
}
