//! Rules about who is calling: [`CallerMatch`] (which callers a rule is for) and
//! [`CallerRule`] (the verdict it gives them).
//!
//! A caller is known by its facts: `subject` (the token's `sub`, or the local user's
//! name over stdio) and every claim of its token. A match names subjects, groups (the
//! `groups` claim) and claims; all it names must hold, and one that names nothing
//! matches everyone, including a call with no caller at all. A match that names
//! anything never matches a call with no caller: a rule for someone never holds for
//! nobody.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

use crate::verdict::Verdict;

/// The claim a match's `groups` look in.
pub const GROUPS_CLAIM: &str = "groups";

/// Which callers a rule is for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallerMatch {
    /// The caller's `subject` is one of these (none: any subject).
    pub subjects: Vec<String>,
    /// The caller's `groups` claim (a string, or an array of strings) holds one of these
    /// (none: any groups).
    pub groups: Vec<String>,
    /// Each claim equals its value, or is an array that holds it.
    pub claims: BTreeMap<String, Value>,
}

impl CallerMatch {
    /// Whether it names nothing, and so matches every caller.
    #[must_use]
    pub fn is_everyone(&self) -> bool {
        self.subjects.is_empty() && self.groups.is_empty() && self.claims.is_empty()
    }

    /// Whether the caller with `facts` (`subject` and its claims) is one it is for.
    #[must_use]
    pub fn matches(&self, facts: Option<&Map<String, Value>>) -> bool {
        if self.is_everyone() {
            return true;
        }
        let Some(facts) = facts else { return false };
        let subject_ok = self.subjects.is_empty()
            || facts.get("subject").and_then(Value::as_str).is_some_and(|s| self.subjects.iter().any(|x| x == s));
        let groups_ok = self.groups.is_empty()
            || self.groups.iter().any(|group| holds(facts.get(GROUPS_CLAIM), &Value::String(group.clone())));
        let claims_ok = self.claims.iter().all(|(name, value)| holds(facts.get(name), value));
        subject_ok && groups_ok && claims_ok
    }

    /// A short description for reasons and docs: `alice, group staff`.
    #[must_use]
    pub fn describe(&self) -> String {
        if self.is_everyone() {
            return "every caller".to_owned();
        }
        let mut parts: Vec<String> = self.subjects.iter().map(|s| format!("subject {s:?}")).collect();
        parts.extend(self.groups.iter().map(|g| format!("group {g:?}")));
        parts.extend(self.claims.iter().map(|(k, v)| format!("claim {k} = {v}")));
        parts.join(", ")
    }
}

/// Whether a claim's value `actual` is `expected`, or is an array holding it.
fn holds(actual: Option<&Value>, expected: &Value) -> bool {
    match actual {
        Some(Value::Array(items)) => items.iter().any(|item| item == expected),
        Some(value) => value == expected,
        None => false,
    }
}

/// A verdict for the callers a match is for.
#[derive(Debug, Clone, PartialEq)]
pub struct CallerRule {
    /// Who it is for.
    pub callers: CallerMatch,
    /// What they get.
    pub verdict: Verdict,
    /// The reviewer's note, for humans only.
    pub note: Option<String>,
}

/// The first rule of `rules` that is for the caller with `facts`.
pub(crate) fn first_for<'a>(rules: &'a [CallerRule], facts: Option<&Map<String, Value>>) -> Option<&'a CallerRule> {
    rules.iter().find(|rule| rule.callers.matches(facts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn facts(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_match_holds_only_when_all_it_names_holds() {
        let staff = CallerMatch { groups: vec!["staff".into()], ..CallerMatch::default() };
        assert!(staff.matches(Some(&facts(json!({"subject": "a", "groups": ["x", "staff"]})))));
        assert!(staff.matches(Some(&facts(json!({"subject": "a", "groups": "staff"})))));
        assert!(!staff.matches(Some(&facts(json!({"subject": "a", "groups": ["x"]})))));
        assert!(!staff.matches(Some(&facts(json!({"subject": "a"})))));
        assert!(!staff.matches(None), "a rule for someone never holds for nobody");

        let alice_eng = CallerMatch {
            subjects: vec!["alice".into()],
            claims: BTreeMap::from([("dept".to_owned(), json!("eng"))]),
            ..CallerMatch::default()
        };
        assert!(alice_eng.matches(Some(&facts(json!({"subject": "alice", "dept": "eng"})))));
        assert!(!alice_eng.matches(Some(&facts(json!({"subject": "alice", "dept": "ops"})))));
        assert!(!alice_eng.matches(Some(&facts(json!({"subject": "bob", "dept": "eng"})))));
        assert!(!alice_eng.matches(Some(&facts(json!({"subject": 7, "dept": "eng"})))), "a subject is a string");

        let everyone = CallerMatch::default();
        assert!(everyone.matches(None) && everyone.matches(Some(&Map::new())));
        assert_eq!(everyone.describe(), "every caller");
        assert_eq!(alice_eng.describe(), "subject \"alice\", claim dept = \"eng\"");
    }
}
