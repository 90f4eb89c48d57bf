//! `*` globs for formatter selection: `calendar_*` matches every tool whose name starts with
//! `calendar_`. `*` matches any run of characters (also none); every other character is literal.

/// A compiled glob. Matching is O(pattern x name) in the worst case and never recurses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    pattern: String,
}

impl Glob {
    /// A glob from its text. Every string is a valid glob.
    pub fn new(pattern: &str) -> Self {
        Glob { pattern: pattern.to_owned() }
    }

    /// The glob as written.
    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    /// Whether `name` matches the whole glob.
    pub fn matches(&self, name: &str) -> bool {
        let p: Vec<char> = self.pattern.chars().collect();
        let n: Vec<char> = name.chars().collect();
        // The classic two-pointer match: remember the last `*` and retry from one character later.
        let (mut pi, mut ni) = (0, 0);
        let mut star: Option<(usize, usize)> = None;
        while ni < n.len() {
            if pi < p.len() && p[pi] == '*' {
                star = Some((pi, ni));
                pi += 1;
            } else if pi < p.len() && p[pi] == n[ni] {
                pi += 1;
                ni += 1;
            } else if let Some((sp, sn)) = star {
                pi = sp + 1;
                ni = sn + 1;
                star = Some((sp, sn + 1));
            } else {
                return false;
            }
        }
        p[pi..].iter().all(|&c| c == '*')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_matches_any_run_including_none() {
        let g = Glob::new("calendar_*");
        assert!(g.matches("calendar_"));
        assert!(g.matches("calendar_query"));
        assert!(!g.matches("calendar"));
        assert!(!g.matches("xcalendar_query"));
        assert!(Glob::new("*").matches(""));
        assert!(Glob::new("a*b*c").matches("aXXbYYc"));
        assert!(!Glob::new("a*b*c").matches("aXXbYY"));
        assert!(Glob::new("*_list").matches("events_list"));
    }

    #[test]
    fn a_glob_without_star_is_an_exact_match() {
        assert!(Glob::new("get.v2").matches("get.v2"));
        assert!(!Glob::new("get.v2").matches("getXv2"));
    }

    #[test]
    fn a_pathological_glob_finishes() {
        let g = Glob::new(&"*a".repeat(200));
        assert!(!g.matches(&"a".repeat(199)));
    }
}
