//! Argument constraints: a field of the call's arguments, named by a JSON pointer, must equal a
//! value or match a pattern. A constraint that fails turns the call into a deny with a reason.
//!
//! Patterns are whole-value matches (`^(?:pattern)$` is what runs), because a policy that says
//! `pattern = "primary"` means "is primary", not "contains primary somewhere". Their compiled size
//! is bounded, so a policy file cannot make the host build an enormous automaton.

use regex::{Regex, RegexBuilder};
use serde_json::{Map, Number, Value};

/// The longest pattern accepted, in bytes.
pub const MAX_PATTERN_LEN: usize = 1024;
/// The compiled-size bound passed to `RegexBuilder::size_limit`.
pub const MAX_PATTERN_SIZE: usize = 256 * 1024;

/// One constraint on one argument.
#[derive(Debug, Clone)]
pub struct Constraint {
    /// RFC 6901 JSON pointer into the arguments object, e.g. `/calendar_id`.
    pub pointer: String,
    /// What the value must be.
    pub rule: Rule,
}

/// What an argument must be.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Rule {
    /// Equal to this JSON value (numbers compare by value: `1` equals `1.0`).
    Equals(Value),
    /// A string that matches the whole pattern.
    Pattern {
        /// The pattern as written in the policy file.
        source: String,
        /// The anchored, compiled pattern.
        regex: Regex,
    },
}

/// A pattern that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// Longer than a pattern may be.
    #[error("the pattern is {len} bytes, over the {MAX_PATTERN_LEN}-byte limit")]
    TooLong {
        /// Its length.
        len: usize,
    },
    /// It compiles to more than a pattern may.
    #[error("the pattern compiles to more than {MAX_PATTERN_SIZE} bytes")]
    TooBig,
    /// It is not a valid pattern (the regex crate's message, on one line).
    #[error("invalid pattern: {0}")]
    Invalid(String),
}

/// Why a call's arguments do not satisfy a constraint: safe to show the model, it names
/// the pointer and the policy's value, never echoes the argument.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    /// The argument is missing.
    #[error("argument `{pointer}` is required by policy but missing")]
    Missing {
        /// Where.
        pointer: String,
    },
    /// The argument is not the caller's fact.
    #[error("argument `{pointer}` must equal the caller's {fact}")]
    NotTheCallers {
        /// Where.
        pointer: String,
        /// The fact.
        fact: String,
    },
    /// The caller has no such fact.
    #[error("argument `{pointer}` must equal the caller's {fact}, and the caller has none")]
    CallerLacks {
        /// Where.
        pointer: String,
        /// The fact.
        fact: String,
    },
    /// The argument is not the value the policy pins.
    #[error("argument `{pointer}` must equal {expected}")]
    NotEqual {
        /// Where.
        pointer: String,
        /// The policy's value, shortened.
        expected: String,
    },
    /// The argument does not match the policy's pattern.
    #[error("argument `{pointer}` must be a string matching the policy pattern {pattern:?}")]
    NoMatch {
        /// Where.
        pointer: String,
        /// The pattern as written.
        pattern: String,
    },
}

impl Constraint {
    /// Compiles a pattern constraint.
    ///
    /// # Errors
    ///
    /// A [`PatternError`]: why the pattern cannot be used.
    pub fn pattern(pointer: &str, pattern: &str) -> Result<Self, PatternError> {
        if pattern.len() > MAX_PATTERN_LEN {
            return Err(PatternError::TooLong { len: pattern.len() });
        }
        let compile = |source: &str| {
            RegexBuilder::new(source)
                .size_limit(MAX_PATTERN_SIZE)
                .dfa_size_limit(MAX_PATTERN_SIZE)
                .nest_limit(64)
                .build()
                .map_err(|e| match e {
                    regex::Error::CompiledTooBig(_) => PatternError::TooBig,
                    other => PatternError::Invalid(one_line(&other.to_string())),
                })
        };
        // On its own first: `a)|(.*` is invalid, but wrapped it would compile to
        // `^(?:a)|(.*)$`, whose second branch is anchored at neither end.
        compile(pattern)?;
        let regex = compile(&format!("^(?:{pattern})$"))?;
        Ok(Constraint { pointer: pointer.to_owned(), rule: Rule::Pattern { source: pattern.to_owned(), regex } })
    }

    /// An equality constraint.
    pub fn equals(pointer: &str, value: Value) -> Self {
        Constraint { pointer: pointer.to_owned(), rule: Rule::Equals(value) }
    }

    /// `Ok` when the arguments satisfy the constraint.
    ///
    /// # Errors
    ///
    /// The [`Violation`].
    pub fn check(&self, args: &Value) -> Result<(), Violation> {
        self.check_as(args, None)
    }

    /// [`check`](Self::check) for a call made by `caller` (its facts: `subject` and its
    /// token's claims). An `equals` whose value is exactly `"{caller.NAME}"` compares
    /// with the caller's `NAME` (`subject`, or a claim such as `email`); without a
    /// caller, or a caller without that fact, it fails: a rule about the caller never
    /// holds for nobody.
    ///
    /// # Errors
    ///
    /// The [`Violation`].
    pub fn check_as(&self, args: &Value, caller: Option<&Map<String, Value>>) -> Result<(), Violation> {
        let pointer = || self.pointer.clone();
        let Some(actual) = args.pointer(&self.pointer) else {
            return Err(Violation::Missing { pointer: pointer() });
        };
        if let Rule::Equals(Value::String(template)) = &self.rule
            && let Some(name) = caller_fact(template)
        {
            return match caller.and_then(|facts| facts.get(name)) {
                Some(expected) if json_eq(actual, expected) => Ok(()),
                Some(_) => Err(Violation::NotTheCallers { pointer: pointer(), fact: name.to_owned() }),
                None => Err(Violation::CallerLacks { pointer: pointer(), fact: name.to_owned() }),
            };
        }
        match &self.rule {
            Rule::Equals(expected) if json_eq(actual, expected) => Ok(()),
            Rule::Equals(expected) => Err(Violation::NotEqual { pointer: pointer(), expected: short(expected) }),
            Rule::Pattern { regex, .. } if actual.as_str().is_some_and(|s| regex.is_match(s)) => Ok(()),
            Rule::Pattern { source, .. } => Err(Violation::NoMatch { pointer: pointer(), pattern: source.clone() }),
        }
    }
}

/// The fact a `"{caller.NAME}"` value names, if it is one.
fn caller_fact(value: &str) -> Option<&str> {
    let name = value.strip_prefix("{caller.")?.strip_suffix('}')?;
    let valid = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    valid.then_some(name)
}

/// Whether `pointer` is a syntactically valid RFC 6901 pointer (empty, or `/`-separated with only
/// `~0` and `~1` escapes).
pub fn is_valid_pointer(pointer: &str) -> bool {
    if pointer.is_empty() {
        return true;
    }
    pointer.starts_with('/')
        && pointer.split('/').skip(1).all(|token| {
            let mut chars = token.chars();
            while let Some(c) = chars.next() {
                if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
                    return false;
                }
            }
            true
        })
}

fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => number_eq(x, y),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Numeric equality without rounding: an integer equals a float only when the float is
/// whole and exactly that integer. Comparing both as `f64` would let `9007199254740992.0`
/// satisfy `equals = 9007199254740993` (both round to 2^53), and the upstream would get
/// another ID than the policy pinned.
fn number_eq(x: &Number, y: &Number) -> bool {
    let integer = |n: &Number| n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from));
    // Whole floats below 2^127 in magnitude convert to i128 exactly.
    let float_is = |f: f64, i: i128| f.is_finite() && f.fract() == 0.0 && f.abs() < 1.0e38 && f as i128 == i;
    match (integer(x), integer(y)) {
        (Some(a), Some(b)) => a == b,
        (Some(a), None) => y.as_f64().is_some_and(|f| float_is(f, a)),
        (None, Some(b)) => x.as_f64().is_some_and(|f| float_is(f, b)),
        (None, None) => x.as_f64() == y.as_f64(),
    }
}

fn short(v: &Value) -> String {
    text_safety::truncated(&v.to_string(), 80)
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn equals_passes_on_the_value_and_fails_with_a_reason_otherwise() {
        let c = Constraint::equals("/calendar", json!("work"));
        assert_eq!(c.check(&json!({"calendar": "work"})), Ok(()));
        let err = c.check(&json!({"calendar": "home"})).unwrap_err().to_string();
        assert_eq!(err, "argument `/calendar` must equal \"work\"");
        assert!(!err.contains("home"), "the argument is not echoed");
    }

    #[test]
    fn numbers_are_equal_only_when_exactly_equal() {
        let big = Constraint::equals("/id", json!(9_007_199_254_740_993_u64));
        assert_eq!(big.check(&json!({"id": 9_007_199_254_740_993_u64})), Ok(()));
        // 2^53 as a float: equal to 2^53 + 1 once both are rounded to f64, but not exactly.
        let rounded: Value = serde_json::from_str(r#"{"id": 9007199254740992.0}"#).unwrap();
        assert!(big.check(&rounded).is_err());
        assert!(big.check(&json!({"id": 9_007_199_254_740_992_u64})).is_err());
        // A whole float is the integer it spells, either way round; a fraction is not.
        let two = Constraint::equals("/n", json!(2));
        assert_eq!(two.check(&json!({"n": 2.0})), Ok(()));
        assert!(two.check(&json!({"n": 2.5})).is_err());
        assert_eq!(Constraint::equals("/n", json!(2.0)).check(&json!({"n": 2})), Ok(()));
        let max = Constraint::equals("/n", json!(u64::MAX));
        assert_eq!(max.check(&json!({"n": u64::MAX})), Ok(()));
        assert!(max.check(&json!({"n": -1})).is_err());
        assert!(max.check(&json!({"n": 1.8446744073709552e19})).is_err());
        assert_eq!(Constraint::equals("/n", json!(0.5)).check(&json!({"n": 0.5})), Ok(()));
        assert_eq!(
            Constraint::equals("/n", json!([1, {"a": 9_007_199_254_740_993_u64}]))
                .check(&json!({"n": [1.0, {"a": 9_007_199_254_740_993_u64}]})),
            Ok(())
        );
    }

    #[test]
    fn a_missing_argument_fails_the_constraint() {
        let c = Constraint::equals("/a/b", json!(1));
        assert!(c.check(&json!({"a": {}})).unwrap_err().to_string().contains("missing"));
        assert!(c.check(&json!("not an object")).is_err());
    }

    #[test]
    fn numbers_compare_by_value() {
        assert!(Constraint::equals("/n", json!(1)).check(&json!({"n": 1.0})).is_ok());
        assert!(Constraint::equals("/n", json!(1)).check(&json!({"n": 2})).is_err());
    }

    #[test]
    fn patterns_match_the_whole_string_only() {
        let c = Constraint::pattern("/id", "primary|team-[a-z]+").unwrap();
        assert!(c.check(&json!({"id": "primary"})).is_ok());
        assert!(c.check(&json!({"id": "team-ops"})).is_ok());
        assert!(c.check(&json!({"id": "notprimary"})).is_err());
        assert!(c.check(&json!({"id": "primary\nx"})).is_err());
        assert!(c.check(&json!({"id": 5})).unwrap_err().to_string().contains("must be a string"));
    }

    #[test]
    fn a_pattern_that_would_break_out_of_its_anchors_is_invalid() {
        for pattern in ["a)|(.*", "work)|(?:.*", "x)(y"] {
            let err = Constraint::pattern("/c", pattern).unwrap_err().to_string();
            assert!(err.starts_with("invalid pattern"), "{pattern}: {err}");
        }
    }

    #[test]
    fn patterns_that_compile_too_big_are_rejected() {
        let err = Constraint::pattern("/x", "(a{100}){100}").unwrap_err().to_string();
        assert!(err.contains("compiles to more than"), "{err}");
    }

    #[test]
    fn patterns_that_are_too_long_or_invalid_are_rejected() {
        assert!(Constraint::pattern("/x", &"a".repeat(MAX_PATTERN_LEN + 1)).unwrap_err().to_string().contains("limit"));
        assert!(Constraint::pattern("/x", "(").unwrap_err().to_string().starts_with("invalid pattern"));
        assert!(Constraint::pattern("/x", &"(".repeat(100)).is_err());
    }

    #[test]
    fn pointers_must_follow_rfc_6901() {
        for ok in ["", "/", "/a", "/a/0", "/a~1b", "/~0"] {
            assert!(is_valid_pointer(ok), "{ok}");
        }
        for bad in ["a", "/a~", "/a~2", "a/b"] {
            assert!(!is_valid_pointer(bad), "{bad}");
        }
    }
}

#[cfg(test)]
mod caller_tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::{Map, Value, json};

    use super::Constraint;

    fn facts(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn an_equals_naming_a_caller_fact_compares_with_the_callers_and_fails_for_nobody() {
        let own = Constraint::equals("/user", json!("{caller.email}"));
        let alice = facts(json!({"subject": "u1", "email": "alice@example.com"}));
        assert_eq!(own.check_as(&json!({"user": "alice@example.com"}), Some(&alice)), Ok(()));
        assert_eq!(
            own.check_as(&json!({"user": "bob@example.com"}), Some(&alice)).unwrap_err().to_string(),
            "argument `/user` must equal the caller's email"
        );
        let nameless = facts(json!({"subject": "u2"}));
        assert!(
            own.check_as(&json!({"user": "x"}), Some(&nameless))
                .unwrap_err()
                .to_string()
                .ends_with("the caller has none")
        );
        assert!(own.check(&json!({"user": "{caller.email}"})).is_err(), "the literal text is no way around it");
        let by_subject = Constraint::equals("/owner", json!("{caller.subject}"));
        assert_eq!(by_subject.check_as(&json!({"owner": "u1"}), Some(&alice)), Ok(()));
        let literal = Constraint::equals("/x", json!("{caller.}"));
        assert_eq!(literal.check(&json!({"x": "{caller.}"})), Ok(()), "not a fact's name: compared as written");
    }
}
