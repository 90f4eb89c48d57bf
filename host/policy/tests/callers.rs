//! Policy by caller: caller rules of a tool and of a provider, and `[[budgets]]`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Map, Value, json};
use wasmgate_policy::{Each, Per, Policy, PolicyError, Verdict};

const TEAM: &str = r#"
[providers.calendar]
unlisted = "allow"

# Contractors get approval for everything; someone outside the staff gets nothing.
[[providers.calendar.callers]]
groups = ["contractors"]
verdict = "ask"
[[providers.calendar.callers]]
groups = ["staff"]
verdict = "allow"
[[providers.calendar.callers]]
verdict = "deny"

[providers.calendar.tools.delete_event]
verdict = "deny"
[[providers.calendar.tools.delete_event.callers]]
subjects = ["alice"]
verdict = "allow"
note = "alice runs the calendar"

[providers.calendar.tools.list_events]
verdict = "allow"
constraints = [{ pointer = "/owner", equals = "{caller.email}" }]

[[budgets]]
provider = "calendar"
tools = "delete_*"
rate = 3
per = "hour"
each = "tool"

[[budgets]]
claims = { tier = "free" }
rate = 100
per = "day"
burst = 10
"#;

fn caller(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

fn verdict(p: &Policy, tool: &str, args: &Value, who: Option<&Map<String, Value>>) -> Verdict {
    p.decide_as("calendar", tool, args, who).verdict
}

#[test]
fn a_tools_caller_rule_replaces_its_verdict_for_those_it_names_only() {
    let p = Policy::from_toml(TEAM, "policy.toml").unwrap();
    let alice = caller(json!({"subject": "alice", "groups": ["staff"]}));
    let bob = caller(json!({"subject": "bob", "groups": ["staff"]}));
    assert_eq!(verdict(&p, "delete_event", &json!({}), Some(&alice)), Verdict::Allow);
    let denied = p.decide_as("calendar", "delete_event", &json!({}), Some(&bob));
    assert_eq!(denied.verdict, Verdict::Deny);
    assert_eq!(denied.reason, "the policy denies `delete_event`");
    let allowed = p.decide_as("calendar", "delete_event", &json!({}), Some(&alice));
    assert_eq!(allowed.reason, "the policy allows `delete_event` for subject \"alice\"");
}

#[test]
fn a_providers_caller_rules_cap_every_verdict_and_never_loosen_one() {
    let p = Policy::from_toml(TEAM, "policy.toml").unwrap();
    let staff = caller(json!({"subject": "carol", "groups": ["staff"]}));
    let contractor = caller(json!({"subject": "dan", "groups": ["contractors", "staff"]}));
    let stranger = caller(json!({"subject": "eve"}));
    // Unlisted tools are allowed, for staff; a contractor needs approval (the first rule
    // that matches decides, so being staff as well changes nothing); others get nothing.
    assert_eq!(verdict(&p, "rename", &json!({}), Some(&staff)), Verdict::Allow);
    assert_eq!(verdict(&p, "rename", &json!({}), Some(&contractor)), Verdict::Ask);
    let refused = p.decide_as("calendar", "rename", &json!({}), Some(&stranger));
    assert_eq!(refused.verdict, Verdict::Deny);
    assert_eq!(refused.reason, "the policy denies this provider's tools to every caller");
    assert_eq!(verdict(&p, "rename", &json!({}), None), Verdict::Deny, "no caller: only the catch-all holds");
    // The cap never loosens a tool's own deny.
    assert_eq!(verdict(&p, "delete_event", &json!({}), Some(&staff)), Verdict::Deny);
}

#[test]
fn a_tool_is_denied_to_a_caller_whatever_the_arguments_only_when_no_rule_lets_them_call_it() {
    let p = Policy::from_toml(TEAM, "policy.toml").unwrap();
    let staff = caller(json!({"subject": "carol", "groups": ["staff"]}));
    let alice = caller(json!({"subject": "alice", "groups": ["staff"]}));
    let stranger = caller(json!({"subject": "eve"}));
    assert!(p.denies_caller("calendar", "delete_event", Some(&staff)));
    assert!(!p.denies_caller("calendar", "delete_event", Some(&alice)));
    assert!(!p.denies_caller("calendar", "list_events", Some(&staff)), "its constraint depends on the arguments");
    assert!(p.denies_caller("calendar", "list_events", Some(&stranger)), "the provider's catch-all");
    assert!(p.denies_caller("calendar", "list_events", None));
    assert!(p.denies_caller("mail", "x", Some(&staff)), "not in the policy");
    assert!(!p.denies_everyone("calendar", "delete_event"), "alice may");
}

#[test]
fn a_constraint_naming_the_caller_holds_for_the_callers_own_value_only() {
    let p = Policy::from_toml(TEAM, "policy.toml").unwrap();
    let ann = caller(json!({"subject": "ann", "groups": ["staff"], "email": "ann@example.com"}));
    assert_eq!(verdict(&p, "list_events", &json!({"owner": "ann@example.com"}), Some(&ann)), Verdict::Allow);
    assert_eq!(verdict(&p, "list_events", &json!({"owner": "bob@example.com"}), Some(&ann)), Verdict::Deny);
}

#[test]
fn budgets_are_read_with_their_defaults() {
    let p = Policy::from_toml(TEAM, "policy.toml").unwrap();
    let [deletes, free] = p.budgets() else { panic!("two budgets") };
    assert_eq!((deletes.rate, deletes.per, deletes.burst, deletes.each), (3, Per::Hour, 3, Each::Tool));
    assert!(deletes.covers("calendar", "delete_event", None));
    assert!(!deletes.covers("calendar", "list_events", None));
    assert!(!deletes.covers("mail", "delete_event", None));
    assert_eq!((free.rate, free.per, free.burst, free.each), (100, Per::Day, 10, Each::Caller));
    assert!(free.covers("calendar", "x", Some(&caller(json!({"subject": "f", "tier": "free"})))));
    assert!(!free.covers("calendar", "x", Some(&caller(json!({"subject": "p", "tier": "paid"})))));
    assert_eq!(free.describe(), "budgets[1] (100 calls per day)");
    assert_eq!(Policy::from_toml("", "p").unwrap().budgets().len(), 0);
}

fn invalid(text: &str) -> (String, String) {
    match Policy::from_toml(text, "policy.toml") {
        Err(PolicyError::Invalid { key, problem, .. }) => (key, problem),
        other => panic!("expected an invalid-policy error, got {other:?}"),
    }
}

#[test]
fn mistakes_in_caller_rules_and_budgets_name_the_key() {
    let base = "[providers.calendar]\n";
    let cases = [
        ("[[budgets]]\nrate = 0\n", "budgets[0].rate", "a rate of 0 would refuse every call"),
        ("[[budgets]]\nrate = 5\nburst = 0\n", "budgets[0].burst", "a burst of 0 would refuse every call"),
        ("[[budgets]]\nrate = 5\nprovider = \"mail\"\n", "budgets[0].provider", "the policy has no provider \"mail\""),
        ("[[budgets]]\nrate = 5\ntools = \"\"\n", "budgets[0].tools", "empty pattern"),
        ("[[budgets]]\nrate = 5\ngroups = [\"\"]\n", "budgets[0].groups[0]", "empty name"),
        (
            "[[providers.calendar.callers]]\nsubjects = [\"\"]\nverdict = \"allow\"\n",
            "providers.calendar.callers[0].subjects[0]",
            "empty name",
        ),
        (
            "[[providers.calendar.callers]]\nclaims = { at = 1979-05-27 }\nverdict = \"allow\"\n",
            "providers.calendar.callers[0].claims.at",
            "dates, times, NaN and infinities have no JSON equivalent",
        ),
    ];
    for (text, key, problem) in cases {
        let (k, p) = invalid(&format!("{base}{text}"));
        assert_eq!((k.as_str(), p.as_str()), (key, problem), "{text}");
    }
    // Unknown keys and a missing verdict are refused by the parser, with the line.
    for text in ["[[budgets]]\nrate = 5\nper = \"week\"\n", "[[providers.calendar.callers]]\ngroups = [\"a\"]\n"] {
        assert!(Policy::from_toml(&format!("{base}{text}"), "p").is_err(), "{text}");
    }
}

/// The ```toml blocks of `doc` (in docs/) that contain `marker`.
fn doc_examples(doc: &str, marker: &str) -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs").join(doc);
    let text = std::fs::read_to_string(path).unwrap();
    text.split("```toml\n")
        .skip(1)
        .filter_map(|rest| rest.split("```").next())
        .filter(|block| block.contains(marker))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_documented_caller_rules_and_budgets_parse_and_decide_as_documented() {
    let [callers] = &doc_examples("POLICY.md", "[[providers.calendar.callers]]")[..] else { panic!("one example") };
    let p = Policy::from_toml(callers, "POLICY.md").unwrap();
    let who = |subject: &str, groups: &[&str]| caller(json!({"subject": subject, "groups": groups}));
    let own = json!({"user": "ann@example.com"});
    let ann = caller(json!({"subject": "ann", "groups": ["staff"], "email": "ann@example.com"}));
    assert_eq!(verdict(&p, "calendar_query", &own, Some(&ann)), Verdict::Allow);
    assert_eq!(verdict(&p, "calendar_query", &json!({"user": "x@example.com"}), Some(&ann)), Verdict::Deny);
    assert_eq!(verdict(&p, "calendar_delete", &json!({}), Some(&who("alice", &["staff"]))), Verdict::Ask);
    assert_eq!(verdict(&p, "calendar_delete", &json!({}), Some(&who("bob", &["staff"]))), Verdict::Deny);
    let contractor = caller(json!({"subject": "c", "groups": ["contractors"], "email": "c@example.com"}));
    assert_eq!(verdict(&p, "calendar_query", &json!({"user": "c@example.com"}), Some(&contractor)), Verdict::Ask);
    let stranger = caller(json!({"subject": "s", "email": "s@example.com"}));
    assert_eq!(verdict(&p, "calendar_query", &json!({"user": "s@example.com"}), Some(&stranger)), Verdict::Deny);

    let [budgets] = &doc_examples("POLICY.md", "[[budgets]]")[..] else { panic!("one example") };
    let p = Policy::from_toml(budgets, "POLICY.md").unwrap();
    assert_eq!(p.budgets().len(), 2);
    assert!(p.budgets()[0].covers("calendar", "calendar_delete", None));
    assert_eq!((p.budgets()[1].rate, p.budgets()[1].burst), (60, 10));

    let [team] = &doc_examples("SERVER.md", "[[budgets]]")[..] else { panic!("one example") };
    let p = Policy::from_toml(team, "SERVER.md").unwrap();
    assert_eq!(verdict(&p, "calendar_create", &json!({}), Some(&ann)), Verdict::Ask);
    assert_eq!(verdict(&p, "calendar_query", &json!({"user": "c@example.com"}), Some(&contractor)), Verdict::Ask);
    assert_eq!((p.budgets()[0].rate, p.budgets()[0].burst, p.budgets()[0].per), (120, 20, Per::Hour));
}
