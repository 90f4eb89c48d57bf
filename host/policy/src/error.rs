//! [`PolicyError`]: every way a policy file can be wrong, located by line, column and key, with a
//! fix. The messages are for the person who wrote the file, so they quote the file and the docs.

use std::ops::Range;
use std::path::PathBuf;
use thiserror::Error;

/// The largest policy file we read. A real one is a few kilobytes; this bounds a hostile one.
pub const MAX_POLICY_BYTES: usize = 1 << 20;

/// Why a policy file could not be used.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The file could not be read.
    #[error("cannot read {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The file is larger than [`MAX_POLICY_BYTES`].
    #[error("policy file {origin} is {len} bytes, over the {MAX_POLICY_BYTES}-byte limit; split it or trim it")]
    TooLarge {
        /// The file (or the name given to [`crate::Policy::from_toml`]).
        origin: String,
        /// Its size.
        len: usize,
    },
    /// The file parsed badly or says something invalid.
    #[error("{origin}:{line}:{column}: `{key}`: {problem}\n  fix: {fix}")]
    Invalid {
        /// The file (or the name given to [`crate::Policy::from_toml`]).
        origin: String,
        /// 1-based line of the offending key or value.
        line: usize,
        /// 1-based column (in characters).
        column: usize,
        /// Dotted path of the key, e.g. `providers.calendar.tools.calendar_query.verdict`.
        key: String,
        /// What is wrong.
        problem: String,
        /// What to do about it.
        fix: String,
    },
}

/// The source text and its name, to turn byte spans into located errors. Public so the
/// gateway's own configuration file reports its mistakes the same way.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The whole file.
    pub text: &'a str,
    /// Its name in messages (usually the path).
    pub origin: &'a str,
}

impl Source<'_> {
    /// An [`PolicyError::Invalid`] at `span` of the text.
    pub fn error(
        &self,
        span: Range<usize>,
        key: &str,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) -> PolicyError {
        let (line, column) = self.line_column(span.start);
        PolicyError::Invalid {
            origin: self.origin.to_owned(),
            line,
            column,
            key: key.to_owned(),
            problem: problem.into(),
            fix: fix.into(),
        }
    }

    /// The 1-based line and column of byte `offset`.
    pub fn line_column(&self, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, column)
    }

    /// Turns a toml/serde error into a located one, with a suggestion where serde names the
    /// expected words (unknown keys and unknown values).
    pub fn toml_error(&self, err: &toml::de::Error) -> PolicyError {
        let span = err.span().unwrap_or(0..0);
        let message = err.message().trim().to_owned();
        let at = self.text.get(span.clone()).unwrap_or("").trim_matches(|c| c == '"' || c == '\'');
        let key = self.key_path(span.start, at);
        let (problem, fix) = explain(&message, at);
        self.error(span, &key, problem, fix)
    }

    /// The dotted key at `offset`: the nearest `[table]` header above it, plus the key on that
    /// line. A heuristic (inline tables are attributed to their header), but right for the usual
    /// layout, and only used in messages.
    fn key_path(&self, offset: usize, at: &str) -> String {
        let (line, _) = self.line_column(offset);
        let lines: Vec<&str> = self.text.lines().collect();
        let this = lines.get(line.saturating_sub(1)).copied().unwrap_or("").trim();
        let header = lines[..line.saturating_sub(1).min(lines.len())]
            .iter()
            .rev()
            .map(|l| l.trim())
            .find(|l| l.starts_with('['))
            .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim().to_owned());
        if this.starts_with('[') {
            return this.trim_matches(|c| c == '[' || c == ']').trim().to_owned();
        }
        let key = this.split('=').next().unwrap_or(at).trim();
        let key = if key.is_empty() { at } else { key };
        match header {
            Some(h) if !h.is_empty() => format!("{h}.{key}"),
            _ => key.to_owned(),
        }
    }
}

fn explain(message: &str, at: &str) -> (String, String) {
    let expected = backticked_after(message, "expected");
    if let Some(rest) = message.strip_prefix("unknown field") {
        let name = backticked(rest).into_iter().next().unwrap_or_else(|| at.to_owned());
        let fix = match suggest(&name, &expected) {
            Some(s) => format!("did you mean `{s}`? (allowed here: {})", list(&expected)),
            None if expected.is_empty() => "remove it; no keys are allowed here".to_owned(),
            None => format!("remove it, or use one of: {} (see docs/POLICY.md)", list(&expected)),
        };
        return (format!("unknown key `{name}`"), fix);
    }
    if let Some(rest) = message.strip_prefix("unknown variant") {
        let name = backticked(rest).into_iter().next().unwrap_or_else(|| at.to_owned());
        let fix = match suggest(&name, &expected) {
            Some(s) => format!("did you mean \"{s}\"? (allowed: {})", list(&expected)),
            None => format!("use one of: {}", list(&expected)),
        };
        return (format!("unknown value \"{name}\""), fix);
    }
    if let Some(rest) = message.strip_prefix("missing field") {
        let name = backticked(rest).into_iter().next().unwrap_or_default();
        return (format!("required key `{name}` is missing"), format!("add `{name} = ...` (see docs/POLICY.md)"));
    }
    if message.starts_with("invalid type") || message.starts_with("invalid value") {
        let problem = message
            .replace("expected u64", "expected a whole number of at least 0")
            .replace("expected u16", "expected a whole number from 0 to 65535");
        return (problem, "give a value of the type named above (see docs/POLICY.md)".to_owned());
    }
    (message.to_owned(), "fix the TOML syntax at this position".to_owned())
}

fn backticked(s: &str) -> Vec<String> {
    s.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

fn backticked_after(message: &str, word: &str) -> Vec<String> {
    message.split_once(word).map(|(_, rest)| backticked(rest)).unwrap_or_default()
}

fn list(words: &[String]) -> String {
    words.iter().map(|w| format!("`{w}`")).collect::<Vec<_>>().join(", ")
}

/// The closest allowed word, if it is close enough to be a typo.
pub(crate) fn suggest(name: &str, allowed: &[String]) -> Option<String> {
    let name_lc = name.to_ascii_lowercase();
    allowed
        .iter()
        .map(|a| (edit_distance(&name_lc, a), a))
        .filter(|(d, a)| *d <= (a.len() / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, a)| a.clone())
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1).min(row[j] + 1).min(diag + usize::from(ca != *cb));
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_get_the_nearest_allowed_word() {
        let allowed: Vec<String> = ["verdict", "constraints", "note"].map(String::from).into();
        assert_eq!(suggest("verdit", &allowed).as_deref(), Some("verdict"));
        assert_eq!(suggest("Verdict", &allowed).as_deref(), Some("verdict"));
        assert_eq!(suggest("something", &allowed), None);
    }

    #[test]
    fn offsets_become_one_based_lines_and_columns() {
        let src = Source { text: "a = 1\nbb = 2\n", origin: "p.toml" };
        assert_eq!(src.line_column(0), (1, 1));
        assert_eq!(src.line_column(6), (2, 1));
        assert_eq!(src.line_column(8), (2, 3));
        assert_eq!(src.line_column(999), (3, 1));
    }
}
