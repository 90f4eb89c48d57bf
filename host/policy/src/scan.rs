//! The scanner that finds where values stand in a text, for [`values`](crate::values).
//!
//! What it finds is specified by seven patterns, tried in order at each place, leftmost
//! first (the test module holds them as regular expressions and checks the scanner
//! against them on generated texts):
//!
//! | kind | pattern |
//! |---|---|
//! | URL | `(?i:https?\|ftp)://[^\s<>"'`\\^{}\|]+` |
//! | email | `[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@` then a domain (below) without the last `\b` |
//! | IBAN | `\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b` |
//! | IP | a dotted quad of octets `25[0-5]\|2[0-4][0-9]\|1?[0-9]?[0-9]` between `\b`s, or `[0-9A-Fa-f]{0,4}:[0-9A-Fa-f]{0,4}:[0-9A-Fa-f:.]{0,36}[0-9A-Fa-f]` |
//! | number | `\+?\(?[0-9][0-9 ().-]{5,22}[0-9]` |
//! | path | `(?:~\|\b[A-Za-z]:)?[/\\][A-Za-z0-9_.-]+(?:[/\\][A-Za-z0-9_.-]+)+` |
//! | domain | `\b(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}\b` |
//!
//! (`\b` is an ASCII word boundary, `\s` any Unicode white space.) The patterns are
//! looked for within *candidate runs* only: runs of words (between ASCII white space)
//! that hold a digit, `@`, `/`, `\`, `:`, `~` or a dot between two characters, or are a
//! short upper-case group (of an IBAN), with the single spaces between them (a phone
//! number's groups). A value is one word, or groups of such words, so the scanner skips
//! the words of ordinary prose with one table lookup a byte, and tries the patterns only
//! inside the runs, by hand, each written as the pattern's own leftmost-first, greedy,
//! backtracking match. A pattern is tried only where its first byte can stand, with room
//! for its shortest match, in a run holding the bytes it cannot match without (an email
//! its `@` and a dot, a URL its `:` and `/`). A failed attempt that says
//! no later start before some place can succeed either lets the scanner skip the
//! attempts there, so a hostile text costs time linear in its length.

use std::ops::Range;

/// Which pattern a match is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Url,
    Email,
    Iban,
    Ip,
    Number,
    Path,
    Domain,
}

const SPACE: u16 = 1; // ASCII white space, as `u8::is_ascii_whitespace`
const DIGIT: u16 = 2;
const MARK: u16 = 4; // `@ / \ : ~`: a word holding one is a candidate
const UPPER: u16 = 8;
const LOWER: u16 = 16;
const HEX: u16 = 32;
const LOCAL: u16 = 64; // what an email's local part holds after its first character
const START: u16 = 128; // what a pattern can start with
// Bytes some pattern cannot match without: a run holding none is not tried for it.
const AT: u16 = 256;
const DOT: u16 = 512;
const COLON: u16 = 1024;
const SLASH: u16 = 2048; // `/` or `\`
// What ends a URL: ASCII white space, vertical tab, and each of < > " ' ` \ ^ { } |.
const URL_END: u16 = 4096;
const NON_ASCII: u16 = 8192;
const LABEL: u16 = 16384; // what a domain's label holds: a letter, a digit or `-`
const GROUPING: u16 = 32768; // what a number's digits are grouped with, and its digits

/// The classes of each byte.
static CLASS: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        let mut class = 0;
        if b.is_ascii_whitespace() {
            class |= SPACE;
        }
        if b.is_ascii_digit() {
            class |= DIGIT | HEX | LOCAL | START;
        }
        if matches!(b, b'@' | b'/' | b'\\' | b':' | b'~') {
            class |= MARK;
        }
        if b.is_ascii_uppercase() {
            class |= UPPER | LOCAL | START;
        }
        if b.is_ascii_lowercase() {
            class |= LOWER | LOCAL | START;
        }
        if b.is_ascii_hexdigit() {
            class |= HEX;
        }
        if matches!(b, b'.' | b'_' | b'%' | b'+' | b'-') {
            class |= LOCAL;
        }
        if matches!(b, b':' | b'+' | b'(' | b'~' | b'/' | b'\\') {
            class |= START;
        }
        if b.is_ascii_whitespace()
            || matches!(b, 0x0b | b'<' | b'>' | b'"' | b'\'' | b'`' | b'\\' | b'^' | b'{' | b'}' | b'|')
        {
            class |= URL_END;
        }
        if !b.is_ascii() {
            class |= NON_ASCII;
        }
        if b.is_ascii_alphanumeric() || b == b'-' {
            class |= LABEL;
        }
        if matches!(b, b'0'..=b'9' | b' ' | b'(' | b')' | b'.' | b'-') {
            class |= GROUPING;
        }
        match b {
            b'@' => class |= AT,
            b'.' => class |= DOT,
            b':' => class |= COLON,
            b'/' | b'\\' => class |= SLASH,
            _ => {}
        }
        table[i] = class;
        i += 1;
    }
    table
};

fn class(b: u8) -> u16 {
    CLASS[usize::from(b)]
}

/// Calls `each` with every match in `text`'s candidate runs, in order, until it returns
/// `false`.
pub(crate) fn matches(text: &str, mut each: impl FnMut(Kind, Range<usize>) -> bool) {
    // No pattern matches fewer than three bytes (`::1`).
    runs(text.as_bytes(), |run, classes| {
        run.len() < 3 || Run::new(text, run.end, classes).matches(run.start, &mut each)
    });
}

/// Calls `each` with every candidate run of `bytes` and the classes of its bytes, until
/// it returns `false`.
fn runs(bytes: &[u8], mut each: impl FnMut(Range<usize>, u16) -> bool) {
    // The run under way: where it starts (`None`: there is none), where its last word
    // ends, and the classes of its bytes.
    let (mut run, mut end, mut held) = (None, 0, 0);
    let mut at = 0;
    while let Some(&b) = bytes.get(at) {
        let class_of_first = class(b);
        if class_of_first & SPACE != 0 {
            // A run goes on across spaces only (not a tab, not a line break).
            if b != b' '
                && let Some(start) = run.take()
                && !each(start..end, held)
            {
                return;
            }
            at += 1;
            continue;
        }
        let start = at;
        let mut classes = class_of_first;
        at += 1;
        // Four bytes at a time while none of them is white space, then one at a time.
        while let Some(&[a, b, c, d]) = bytes.get(at..at + 4) {
            let four = [class(a), class(b), class(c), class(d)];
            if (four[0] | four[1] | four[2] | four[3]) & SPACE != 0 {
                break;
            }
            classes |= four[0] | four[1] | four[2] | four[3];
            at += 4;
        }
        while let Some(&b) = bytes.get(at) {
            let c = class(b);
            if c & SPACE != 0 {
                break;
            }
            classes |= c;
            at += 1;
        }
        let word = bytes.get(start..at).unwrap_or_default();
        // A dot between two characters, the one after it a letter or digit.
        let dotted =
            || classes & DOT != 0 && word.windows(2).skip(1).any(|w| w[0] == b'.' && w[1].is_ascii_alphanumeric());
        let group = || word.len() <= 4 && word.iter().all(|b| class(*b) & (UPPER | DIGIT) != 0);
        if classes & (DIGIT | MARK) != 0 || dotted() || group() {
            if run.is_none() {
                run = Some(start);
                held = 0;
            }
            held |= classes;
            end = at;
        } else if let Some(start) = run.take()
            && !each(start..end, held)
        {
            return;
        }
    }
    if let Some(start) = run {
        each(start..end, held);
    }
}

/// The patterns tried in one candidate run: nothing is read at or past its end.
struct Run<'a> {
    text: &'a str,
    /// The text's bytes up to the run's end: its length is the run's end, and every read
    /// of a byte is one bounds check.
    bytes: &'a [u8],
    /// The classes of its bytes.
    classes: u16,
}

impl<'a> Run<'a> {
    fn new(text: &'a str, end: usize, classes: u16) -> Self {
        let bytes = text.as_bytes();
        Self { text, bytes: bytes.get(..end).unwrap_or(bytes), classes }
    }

    /// Whether the run holds a byte of each of `classes`, and `len` bytes from `p`: what
    /// a pattern needs to start at `p`.
    fn room(&self, p: usize, classes: u16, len: usize) -> bool {
        self.classes & classes == classes && self.bytes.len() - p >= len
    }

    /// The byte at `i`, or 0 (in no class) past the run.
    fn at(&self, i: usize) -> u8 {
        #[cfg(test)]
        tests::STEPS.with(|steps| steps.set(steps.get() + 1));
        self.bytes.get(i).copied().unwrap_or(0)
    }

    fn word(&self, i: usize) -> bool {
        let b = self.at(i);
        b.is_ascii_alphanumeric() || b == b'_'
    }

    /// An ASCII word boundary at `i` (the byte before a run is white space).
    fn boundary(&self, i: usize) -> bool {
        (i > 0 && self.word(i - 1)) != self.word(i)
    }

    fn alnum(&self, i: usize) -> bool {
        class(self.at(i)) & (DIGIT | UPPER | LOWER) != 0
    }

    fn digit(&self, i: usize) -> bool {
        self.at(i).is_ascii_digit()
    }

    fn hex(&self, i: usize) -> bool {
        class(self.at(i)) & HEX != 0
    }

    fn matches(&self, start: usize, each: &mut impl FnMut(Kind, Range<usize>) -> bool) -> bool {
        let mut p = start;
        // No email starts before `email_from`, no domain before `domain_from`.
        let (mut email_from, mut domain_from) = (0, 0);
        while let Some(&b) = self.bytes.get(p) {
            if class(b) & START == 0 {
                p += 1;
                continue;
            }
            let c = class(b);
            let alnum = c & (DIGIT | UPPER | LOWER) != 0;
            // Each pattern is tried only where its first byte can stand.
            // (`ftp://x`, `a@b.cc`, `AB12 CDEF GHIJ`, `1.2.3.4`, `::1`, `1234567`,
            // `/a/b` and `a.bc` are the shortest of each.)
            let mut found = if matches!(b, b'h' | b'H' | b'f' | b'F') && self.room(p, COLON | SLASH, 7) {
                self.url(p).map(|end| (Kind::Url, end))
            } else {
                None
            };
            if found.is_none() && alnum && p >= email_from && self.room(p, AT | DOT, 6) {
                match self.email(p) {
                    Ok(end) => found = Some((Kind::Email, end)),
                    Err(from) => email_from = from,
                }
            }
            if found.is_none() && c & UPPER != 0 && self.room(p, DIGIT, 12) {
                found = self.iban(p).map(|end| (Kind::Iban, end));
            }
            if found.is_none()
                && (c & DIGIT != 0 && self.room(p, DOT, 7) || (c & HEX != 0 || b == b':') && self.room(p, COLON, 3))
            {
                found = self.ip(p).map(|end| (Kind::Ip, end));
            }
            if found.is_none() && (c & DIGIT != 0 || b == b'+' || b == b'(') && self.room(p, DIGIT, 7) {
                found = self.number(p).map(|end| (Kind::Number, end));
            }
            if found.is_none()
                && (matches!(b, b'~' | b'/' | b'\\') || c & (UPPER | LOWER) != 0 && self.at(p + 1) == b':')
                && self.room(p, SLASH, 4)
            {
                found = self.path(p).map(|end| (Kind::Path, end));
            }
            if found.is_none() && alnum && p >= domain_from && self.room(p, DOT, 4) && self.boundary(p) {
                match self.domain(p, true) {
                    Ok(end) => found = Some((Kind::Domain, end)),
                    Err(from) => domain_from = from,
                }
            }
            match found {
                Some((kind, end)) => {
                    if !each(kind, p..end) {
                        return false;
                    }
                    p = end;
                }
                None => p += 1,
            }
        }
        true
    }

    fn url(&self, p: usize) -> Option<usize> {
        let is =
            |scheme: &[u8]| self.bytes.get(p..p + scheme.len()).is_some_and(|head| head.eq_ignore_ascii_case(scheme));
        let mut q = if is(b"https://") {
            p + 8
        } else if is(b"http://") {
            p + 7
        } else if is(b"ftp://") {
            p + 6
        } else {
            return None;
        };
        let start = q;
        while let Some(&b) = self.bytes.get(q) {
            let c = class(b);
            if c & (URL_END | NON_ASCII) == 0 {
                q += 1;
            } else if c & URL_END != 0 {
                break;
            } else {
                let c = self.text.get(q..).and_then(|rest| rest.chars().next())?;
                if c.is_whitespace() {
                    break;
                }
                q += c.len_utf8();
            }
        }
        (q > start).then_some(q)
    }

    /// An email at `p`, or the place before which none starts.
    fn email(&self, p: usize) -> Result<usize, usize> {
        if !self.alnum(p) {
            return Err(0);
        }
        let mut q = p + 1;
        while q - p <= 64 && class(self.at(q)) & LOCAL != 0 {
            q += 1;
        }
        if q - p > 64 {
            return Err(0);
        }
        // Every later start in the local part reaches the same `@`, or the same non-`@`.
        if self.at(q) != b'@' {
            return Err(q);
        }
        self.domain(q + 1, false).map_err(|_| q)
    }

    /// A domain at `s`: labels and a top-level name, with a word boundary after it when
    /// `bounded` (a domain on its own); or the place before which none starts, when the
    /// labels from `s` lead nowhere (a later start inside them has the same labels after
    /// it, and fewer choices).
    fn domain(&self, s: usize, bounded: bool) -> Result<usize, usize> {
        let top = |t: usize| {
            let mut len = 0;
            while len <= 24 && self.at(t + len).is_ascii_alphabetic() {
                len += 1;
            }
            if bounded {
                ((2..=24).contains(&len) && !self.word(t + len)).then_some(t + len)
            } else {
                (len >= 2).then_some(t + len.min(24))
            }
        };
        // The most labels the pattern can take first, then fewer: the last that works.
        let (mut fewer, mut labels, mut at) = (None, 0, s);
        while self.alnum(at) {
            let mut r = at + 1;
            while r - at < 64 && class(self.at(r)) & LABEL != 0 {
                r += 1;
            }
            if r - at > 63 || self.at(r) != b'.' || !self.alnum(r - 1) {
                break;
            }
            if labels >= 1 {
                fewer = top(at).or(fewer);
            }
            labels += 1;
            at = r + 1;
        }
        if labels >= 1
            && let Some(end) = top(at)
        {
            return Ok(end);
        }
        fewer.ok_or(at)
    }

    fn iban(&self, p: usize) -> Option<usize> {
        let upper = |i: usize| self.at(i).is_ascii_uppercase();
        if !upper(p) || !upper(p + 1) || !self.digit(p + 2) || !self.digit(p + 3) || !self.boundary(p) {
            return None;
        }
        self.iban_groups(p + 4, 0)
    }

    /// The groups of four after an IBAN's first four characters, `done` taken: as many as
    /// can be (two to seven), then a shorter one, then a word boundary.
    fn iban_groups(&self, pos: usize, done: usize) -> Option<usize> {
        let group = |i: usize| self.at(i).is_ascii_uppercase() || self.digit(i);
        // A space before a group is taken when there is one; without it, the group would
        // have to start with the space.
        let q = if self.at(pos) == b' ' { pos + 1 } else { pos };
        if done < 7
            && (q..q + 4).all(group)
            && let Some(end) = self.iban_groups(q + 4, done + 1)
        {
            return Some(end);
        }
        if done < 2 {
            return None;
        }
        let len = (0..4).take_while(|k| group(q + k)).count();
        (1..=len).rev().map(|len| q + len).find(|end| self.boundary(*end)).or(self.boundary(pos).then_some(pos))
    }

    fn ip(&self, p: usize) -> Option<usize> {
        // A dotted quad has three dots and seven bytes at least.
        if self.digit(p)
            && self.room(p, DOT, 7)
            && self.boundary(p)
            && let Some(end) = self.quad(p, 0)
        {
            return Some(end);
        }
        // `[0-9A-Fa-f]{0,4}:` twice: a longer run of hex digits has no `:` after four.
        let mut q = p;
        for _ in 0..2 {
            let s = q;
            while q - s <= 4 && self.hex(q) {
                q += 1;
            }
            if q - s > 4 || self.at(q) != b':' {
                return None;
            }
            q += 1;
        }
        let mut last = None;
        for i in q..q + 37 {
            if !self.hex(i) && !matches!(self.at(i), b':' | b'.') {
                break;
            }
            if self.hex(i) {
                last = Some(i + 1);
            }
        }
        last
    }

    /// An IPv4 address's octets from `pos`, `done` of four taken, each of the lengths its
    /// alternation tries in order.
    fn quad(&self, pos: usize, done: usize) -> Option<usize> {
        let d = |i: usize| self.digit(i);
        let (a, b) = (self.at(pos), self.at(pos + 1));
        let ends = [
            (a == b'2' && b == b'5' && matches!(self.at(pos + 2), b'0'..=b'5'), 3),
            (a == b'2' && matches!(b, b'0'..=b'4') && d(pos + 2), 3),
            (a == b'1' && d(pos + 1) && d(pos + 2), 3),
            (a == b'1' && d(pos + 1), 2),
            (d(pos) && d(pos + 1), 2),
            (d(pos), 1),
        ];
        ends.into_iter().filter(|(can, _)| *can).map(|(_, len)| pos + len).find_map(|end| {
            if done == 3 {
                self.boundary(end).then_some(end)
            } else if self.at(end) == b'.' {
                self.quad(end + 1, done + 1)
            } else {
                None
            }
        })
    }

    fn number(&self, p: usize) -> Option<usize> {
        let mut q = p;
        if self.at(q) == b'+' {
            q += 1;
        }
        if self.at(q) == b'(' {
            q += 1;
        }
        if !self.digit(q) {
            return None;
        }
        let grouping = |i: usize| class(self.at(i)) & GROUPING != 0;
        let run = (q + 1..q + 24).take_while(|i| grouping(*i)).count();
        // Five to 22 of them, then a digit: the most that end in one.
        (5..run.min(23)).rev().map(|k| q + 1 + k).find(|i| self.digit(*i)).map(|i| i + 1)
    }

    fn path(&self, p: usize) -> Option<usize> {
        let name = |i: usize| {
            let b = self.at(i);
            b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')
        };
        let separator = |i: usize| matches!(self.at(i), b'/' | b'\\');
        let mut q = p;
        if self.at(q) == b'~' {
            q += 1;
        } else if self.at(q + 1) == b':' && self.at(q).is_ascii_alphabetic() && self.boundary(q) {
            q += 2;
        }
        let mut parts = 0;
        while separator(q) && name(q + 1) {
            q += 1;
            while name(q) {
                q += 1;
            }
            parts += 1;
        }
        (parts >= 2).then_some(q)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The specification: what the scanner finds, as regular expressions.
    const PATTERNS: [&str; 7] = [
        r#"(?i:https?|ftp)://[^\s<>"'`\\^{}|]+"#,
        r"[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}",
        r"(?-u:\b)[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?(?-u:\b)",
        r"(?-u:\b)(?:25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])){3}(?-u:\b)|[0-9A-Fa-f]{0,4}:[0-9A-Fa-f]{0,4}:[0-9A-Fa-f:.]{0,36}[0-9A-Fa-f]",
        r"\+?\(?[0-9][0-9 ().-]{5,22}[0-9]",
        r"(?:~|(?-u:\b)[A-Za-z]:)?[/\\][A-Za-z0-9_.-]+(?:[/\\][A-Za-z0-9_.-]+)+",
        r"(?-u:\b)(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?-u:\b)",
    ];
    const KINDS: [Kind; 7] = [Kind::Url, Kind::Email, Kind::Iban, Kind::Ip, Kind::Number, Kind::Path, Kind::Domain];

    fn specification() -> regex_automata::meta::Regex {
        regex_automata::meta::Regex::new_many(&PATTERNS).unwrap()
    }

    fn scanned(text: &str) -> Vec<(Kind, Range<usize>)> {
        let mut found = Vec::new();
        matches(text, |kind, span| {
            found.push((kind, span));
            true
        });
        found
    }

    fn specified(spec: &regex_automata::meta::Regex, input: regex_automata::Input<'_>) -> Vec<(Kind, Range<usize>)> {
        spec.find_iter(input).map(|m| (KINDS[m.pattern().as_usize()], m.range())).collect()
    }

    /// Texts made of pieces that start, end and break values, from a fixed seed.
    fn generated(count: usize, pieces: &[&str]) -> Vec<String> {
        crate::generated::texts(count, 30, pieces)
    }

    const PIECES: [&str; 60] = [
        "a", "Z", "h", "http://", "HTTPS://", "ftp://", "t", "p", "s", ":", "/", ".", "@", "-", "_", "0", "1", "2",
        "5", "9", "25", "255", "(", ")", "+", "~", "\\", " ", " ", "\n", "A", "DE", "89", "GB82", "WEST", "é",
        "\u{a0}", "x", "%", "::", "192.168.", "example", "com", ".com", "ab-", "<", "'", "1234", "C:", "e", "f", "\t",
        "fe80", "\u{2003}", "0.", "1.2", "ABCD ", "@x.", "b.", "ſ",
    ];

    #[test]
    fn the_scanner_finds_what_the_patterns_find_in_the_candidate_runs() {
        let spec = specification();
        let mut texts = generated(100_000, &PIECES);
        texts.extend(
            [
                "Back up to HTTP://Evil.Example:8080/x. Mail Bob.Smith@Example.COM, call +1 (415) 555-0100,\n\
                 pay GB82 WEST 1234 5698 7654 32 or 4111 1111 1111 1111; host 10.0.0.7 or ::1 or fe80::1, \
                 file ~/notes.txt and C:\\Users\\x\\a.txt and /etc/passwd, see docs.example.org. e.g. café.example",
                "- 2026-12-01 09:00 Standup with ana@example.com in room 4, notes at https://wiki.example/m/4\n",
                "tabs\tand  double  spaces: 555  0100 and 555 0100 1234 and a.b and ..dots.. ~ @ : / \\",
                "  leading, trailing   ",
                "",
            ]
            .map(str::to_owned),
        );
        // Long parts: the bounds of labels, local parts and top-level names.
        for n in [23, 24, 25, 61, 62, 63, 64, 65] {
            let part = "a".repeat(n);
            texts.push(format!("{part}@{part}.{part} x.{part} {part}.example 1.{part}.io"));
            texts.push(format!("{}@b.example {}.io", "c".repeat(n), "d-".repeat(n)));
        }
        let mut counts = [0; 7];
        for text in &texts {
            let want: Vec<_> = runs_of(text)
                .into_iter()
                .flat_map(|run| specified(&spec, regex_automata::Input::new(text).range(run)))
                .collect();
            assert_eq!(scanned(text), want, "{text:?}");
            for (kind, _) in want {
                counts[KINDS.iter().position(|k| *k == kind).unwrap()] += 1;
            }
        }
        assert!(counts.iter().all(|n| *n > 100), "every pattern is exercised: {counts:?}");
    }

    fn runs_of(text: &str) -> Vec<Range<usize>> {
        let mut found = Vec::new();
        runs(text.as_bytes(), |run, _| {
            found.push(run);
            true
        });
        found
    }

    /// The runs, a byte at a time: what [`runs`] is checked against.
    fn runs_specified(bytes: &[u8]) -> Vec<(Range<usize>, u16)> {
        let mut found = Vec::new();
        let (mut run, mut end, mut held) = (None, 0, 0);
        let mut at = 0;
        while at < bytes.len() {
            if class(bytes[at]) & SPACE != 0 {
                if bytes[at] != b' '
                    && let Some(start) = run.take()
                {
                    found.push((start..end, held));
                }
                at += 1;
                continue;
            }
            let start = at;
            let mut classes = 0;
            while at < bytes.len() && class(bytes[at]) & SPACE == 0 {
                classes |= class(bytes[at]);
                at += 1;
            }
            let word = &bytes[start..at];
            let dotted = word.windows(2).skip(1).any(|w| w[0] == b'.' && w[1].is_ascii_alphanumeric());
            let group = word.len() <= 4 && word.iter().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
            if classes & (DIGIT | MARK) != 0 || dotted || group {
                if run.is_none() {
                    run = Some(start);
                    held = 0;
                }
                held |= classes;
                end = at;
            } else if let Some(start) = run.take() {
                found.push((start..end, held));
            }
        }
        if let Some(start) = run {
            found.push((start..end, held));
        }
        found
    }

    #[test]
    fn the_runs_are_those_a_byte_at_a_time_finds() {
        let pieces = [
            "a",
            "Z",
            "1",
            ".",
            "@",
            "/",
            ":",
            "~",
            "\\",
            "-",
            " ",
            " ",
            "\t",
            "\n",
            "\r",
            "\u{b}",
            "\u{c}",
            "\u{1}",
            "\u{1f}",
            "\u{0}",
            "!",
            "\u{7f}",
            "\u{80}",
            "\u{a0}",
            "\u{2003}",
            "é",
            "AB12",
            "word",
            "longerword",
            "https://x.example/a",
            "12345678901234567",
        ];
        let mut texts = generated(50_000, &pieces);
        texts.extend((0..=20).map(|n| format!("{}\u{1}{} 1", "a".repeat(n), "b".repeat(n))));
        for text in &texts {
            let mut found = Vec::new();
            runs(text.as_bytes(), |run, classes| {
                found.push((run, classes));
                true
            });
            assert_eq!(found, runs_specified(text.as_bytes()), "{text:?}");
        }
    }

    thread_local! {
        /// The bytes the scanner has looked at in runs, on this thread.
        pub(super) static STEPS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    #[test]
    fn a_hostile_run_costs_steps_linear_in_its_length() {
        // Each would take a quadratic number of steps if every start rescanned the run.
        for unit in ["1.", "a-1-", "a.", "a1", "1", "a.a@", "1.1@", "::", "/a", "a-a.", "AB12 "] {
            let mut most = 0;
            for len in [1_000, 100_000] {
                let text = unit.repeat(len / unit.len());
                STEPS.with(|steps| steps.set(0));
                matches(&text, |_, _| true);
                let per_byte = STEPS.with(std::cell::Cell::get) / text.len();
                most = most.max(per_byte);
                assert!(per_byte <= 200, "{unit:?}: {per_byte} steps a byte");
            }
            assert!(most > 0, "{unit:?} was scanned");
        }
    }
}
