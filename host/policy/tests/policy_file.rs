//! The policy file: what parses, what each key means, and how mistakes are reported.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use std::path::Path;
use wasmgate_policy::{ConfinementLevel, InjectionAction, Policy, PolicyError, Verdict};

const CALENDAR: &str = r#"
[providers.calendar]
note = "third-party calendar server"
injection = "flag"

[providers.calendar.tools]
calendar_query = "allow"
calendar_create = "ask"
calendar_delete = "deny"
"#;

fn parse(text: &str) -> Policy {
    Policy::from_toml(text, "policy.toml").unwrap()
}

/// (line, key, problem, fix) of an invalid policy.
fn invalid(text: &str) -> (usize, String, String, String) {
    match Policy::from_toml(text, "policy.toml") {
        Err(PolicyError::Invalid { line, key, problem, fix, .. }) => (line, key, problem, fix),
        other => panic!("expected an invalid-policy error, got {other:?}"),
    }
}

#[test]
fn the_calendar_policy_allows_queries_asks_for_creates_and_denies_deletes() {
    let p = parse(CALENDAR);
    let args = json!({});
    assert_eq!(p.decide("calendar", "calendar_query", &args).verdict, Verdict::Allow);
    assert_eq!(p.decide("calendar", "calendar_create", &args).verdict, Verdict::Ask);
    let deny = p.decide("calendar", "calendar_delete", &args);
    assert_eq!(deny.verdict, Verdict::Deny);
    assert_eq!(deny.reason, "the policy denies `calendar_delete`");
}

#[test]
fn unlisted_tools_are_denied_unless_the_provider_says_otherwise() {
    let p = parse(CALENDAR);
    let d = p.decide("calendar", "calendar_share", &json!({}));
    assert_eq!(d.verdict, Verdict::Deny);
    assert!(d.reason.contains("not listed"), "{}", d.reason);
    let p = parse("[providers.files]\nunlisted = \"ask\"\n");
    assert_eq!(p.decide("files", "read", &json!({})).verdict, Verdict::Ask);
}

#[test]
fn an_unknown_provider_is_denied() {
    assert_eq!(parse(CALENDAR).decide("mail", "send", &json!({})).verdict, Verdict::Deny);
    assert_eq!(Policy::default().decide("calendar", "calendar_query", &json!({})).verdict, Verdict::Deny);
}

#[test]
fn a_tool_name_outside_mcp_rules_is_denied_without_being_echoed() {
    let p = parse("[providers.p]\nunlisted = \"allow\"\n");
    let d = p.decide("p", "evil\u{202e}name", &json!({}));
    assert_eq!(d.verdict, Verdict::Deny);
    assert!(!d.reason.contains("evil"));
}

#[test]
fn a_failing_argument_constraint_denies_with_a_reason() {
    let p = parse(
        r#"
[providers.calendar.tools.calendar_query]
verdict = "allow"
constraints = [
  { pointer = "/calendar_id", equals = "primary" },
  { pointer = "/range/days", pattern = "[1-9]|[1-2][0-9]|30" },
]
"#,
    );
    let ok = json!({"calendar_id": "primary", "range": {"days": "7"}});
    assert_eq!(p.decide("calendar", "calendar_query", &ok).verdict, Verdict::Allow);
    let other_user = json!({"calendar_id": "bob@example.com", "range": {"days": "7"}});
    let d = p.decide("calendar", "calendar_query", &other_user);
    assert_eq!(d.verdict, Verdict::Deny);
    assert_eq!(d.reason, "argument `/calendar_id` must equal \"primary\" (policy for `calendar_query`)");
    let too_long = json!({"calendar_id": "primary", "range": {"days": "365"}});
    assert_eq!(p.decide("calendar", "calendar_query", &too_long).verdict, Verdict::Deny);
}

#[test]
fn constraints_also_guard_ask_tools() {
    let p = parse(
        "[providers.c.tools.create]\nverdict = \"ask\"\n[[providers.c.tools.create.constraints]]\npointer = \"/cal\"\nequals = 1\n",
    );
    assert_eq!(p.decide("c", "create", &json!({"cal": 1})).verdict, Verdict::Ask);
    assert_eq!(p.decide("c", "create", &json!({"cal": 2})).verdict, Verdict::Deny);
}

#[test]
fn every_provider_setting_is_parsed_and_exposed() {
    let p = parse(
        r#"
[providers.calendar]
unlisted = "ask"
injection = "withhold"
secrets = "deny"
confinement = "best-effort"
read_paths = ["/usr/share/zoneinfo"]
network_ports = [443, 8443]
unix_sockets = true

[providers.calendar.limits]
deadline_ms = 2000
memory_bytes = 33554432
output_bytes = 65536

[[providers.calendar.formatters]]
tools = "calendar_*"
wasm = "formatters/calendar.wasm"

[[providers.calendar.formatters]]
tools = "*"
wasm = "/opt/wasmgate/json.wasm"
"#,
    );
    let c = p.provider("calendar").unwrap();
    assert_eq!(c.unlisted, Verdict::Ask);
    assert_eq!(c.injection, InjectionAction::Withhold);
    assert_eq!(c.secrets, wasmgate_policy::SecretsAction::Deny);
    assert_eq!(c.confinement, ConfinementLevel::BestEffort);
    assert_eq!(c.read_paths, [Path::new("/usr/share/zoneinfo")]);
    assert_eq!(c.network_ports, [443, 8443]);
    assert!(c.unix_sockets);
    let hosts = parse(
        "[providers.h]\nnetwork_hosts = [\"calendar.example.com:443\", \"127.0.0.1:5232\", \"*.Example.org:443\", \"*:80\"]\n",
    );
    let granted: Vec<(&str, u16)> =
        hosts.provider("h").unwrap().network_hosts.iter().map(|h| (h.host.as_str(), h.port)).collect();
    assert_eq!(granted, [("calendar.example.com", 443), ("127.0.0.1", 5232), ("*.example.org", 443), ("*", 80)]);
    assert_eq!(
        (c.limits.deadline_ms, c.limits.memory_bytes, c.limits.output_bytes),
        (Some(2000), Some(33554432), Some(65536))
    );
    assert_eq!(c.formatter_for("calendar_query"), Some(Path::new("formatters/calendar.wasm")));
    assert_eq!(c.formatter_for("other"), Some(Path::new("/opt/wasmgate/json.wasm")));
}

#[test]
fn defaults_are_deny_untrusted_flag_and_required_confinement() {
    let c = parse("[providers.p]\n").provider("p").cloned().unwrap();
    assert_eq!(c.unlisted, Verdict::Deny);
    assert_eq!(c.injection, InjectionAction::Flag);
    assert_eq!(c.secrets, wasmgate_policy::SecretsAction::Ask);
    assert_eq!(c.confinement, ConfinementLevel::Required);
    assert!(c.read_paths.is_empty() && c.network_ports.is_empty() && c.formatters.is_empty());
    assert!(!c.unix_sockets, "the seccomp filter refuses Unix sockets unless granted");
    assert_eq!(c.limits, Default::default());
    assert_eq!(c.formatter_for("x"), None);
}

#[test]
fn load_resolves_relative_formatter_paths_against_the_policy_directory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.toml");
    std::fs::write(&path, "[[providers.p.formatters]]\ntools = \"*\"\nwasm = \"f/x.wasm\"\n").unwrap();
    let p = Policy::load(&path).unwrap();
    assert_eq!(p.provider("p").unwrap().formatter_for("t"), Some(dir.path().join("f/x.wasm").as_path()));
}

#[test]
fn a_missing_policy_file_is_a_read_error_naming_the_path() {
    let err = Policy::load(Path::new("/nonexistent/policy.toml")).unwrap_err();
    assert!(matches!(err, PolicyError::Read { .. }));
    assert!(err.to_string().contains("/nonexistent/policy.toml"));
}

#[test]
fn an_oversized_policy_file_is_refused() {
    let text = format!("# {}\n", "x".repeat(wasmgate_policy::MAX_POLICY_BYTES));
    assert!(matches!(Policy::from_toml(&text, "p"), Err(PolicyError::TooLarge { .. })));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.toml");
    std::fs::write(&path, &text).unwrap();
    assert!(matches!(Policy::load(&path), Err(PolicyError::TooLarge { .. })));
}

#[test]
fn an_endless_policy_path_is_read_only_up_to_the_limit() {
    assert!(matches!(Policy::load(Path::new("/dev/zero")), Err(PolicyError::TooLarge { .. })));
}

#[test]
fn an_unknown_key_names_its_line_and_key_and_suggests_the_right_one() {
    let (line, key, problem, fix) = invalid("[providers.calendar]\nunlisted = \"deny\"\ninjecton = \"flag\"\n");
    assert_eq!(line, 3);
    assert_eq!(key, "providers.calendar.injecton");
    assert_eq!(problem, "unknown key `injecton`");
    assert!(fix.starts_with("did you mean `injection`?"), "{fix}");
}

#[test]
fn an_unknown_key_in_a_tool_table_is_found_too() {
    let (line, key, problem, fix) = invalid("[providers.c.tools.q]\nverdict = \"allow\"\nverdit = \"deny\"\n");
    assert_eq!((line, key.as_str(), problem.as_str()), (3, "providers.c.tools.q.verdit", "unknown key `verdit`"));
    assert!(fix.contains("`verdict`"), "{fix}");
}

#[test]
fn an_unknown_top_level_key_is_rejected() {
    let (line, _, problem, _) = invalid("\n\nprovider = 1\n");
    assert_eq!(line, 3);
    assert_eq!(problem, "unknown key `provider`");
}

#[test]
fn a_misspelled_verdict_suggests_the_allowed_values() {
    let (line, key, problem, fix) = invalid("[providers.c.tools]\nq = \"alow\"\n");
    assert_eq!((line, key.as_str()), (2, "providers.c.tools.q"));
    assert_eq!(problem, "unknown value \"alow\"");
    assert!(fix.starts_with("did you mean \"allow\"?"), "{fix}");
}

#[test]
fn a_wrong_type_names_the_key() {
    let (line, key, problem, _) = invalid("[providers.c.limits]\ndeadline_ms = \"2s\"\n");
    assert_eq!((line, key.as_str()), (2, "providers.c.limits.deadline_ms"));
    assert!(problem.contains("invalid type"), "{problem}");
}

#[test]
fn a_toml_syntax_error_names_the_line() {
    let (line, _, _, fix) = invalid("[providers.c]\nunlisted = \n");
    assert_eq!(line, 2);
    assert!(fix.contains("syntax"));
}

#[test]
fn a_provider_name_that_could_break_prefixing_is_rejected_at_load() {
    for bad in ["Calendar", "cal_endar", "cal.endar", ""] {
        let (line, key, _, fix) = invalid(&format!("\n[providers.\"{bad}\"]\n"));
        assert_eq!(line, 2, "{bad}");
        assert_eq!(key, format!("providers.{bad}"));
        assert!(fix.contains("a-z, 0-9 and '-'"), "{fix}");
    }
}

#[test]
fn a_listed_tool_name_outside_mcp_rules_is_rejected() {
    let (line, _, problem, _) = invalid("[providers.c.tools]\n\"bad name\" = \"allow\"\n");
    assert_eq!(line, 2);
    assert!(problem.contains("can never be a tool name"));
}

#[test]
fn a_rule_for_the_prefixed_name_the_gateway_shows_is_rejected() {
    // `calendar__calendar_delete` is never looked up: with `unlisted = "allow"` the
    // deny below would silently not apply.
    let policy = "[providers.calendar]\nunlisted = \"allow\"\n[providers.calendar.tools]\ncalendar__calendar_delete = \"deny\"\n";
    let (line, key, problem, fix) = invalid(policy);
    assert_eq!((line, key.as_str()), (4, "providers.calendar.tools.calendar__calendar_delete"));
    assert!(problem.contains("never match"), "{problem}");
    assert!(fix.contains("\"calendar_delete\""), "{fix}");
    // Another provider's prefix is only an odd name, and a name may contain `__`.
    let other = "[providers.calendar.tools]\nmail__send = \"deny\"\n";
    assert!(Policy::from_toml(other, "p").is_ok());
}

#[test]
fn a_constraint_needs_exactly_one_of_equals_and_pattern() {
    let both = "[providers.c.tools.q]\nverdict = \"allow\"\nconstraints = [{ pointer = \"/a\", equals = 1, pattern = \"x\" }]\n";
    let (line, key, problem, _) = invalid(both);
    assert_eq!((line, key.as_str()), (3, "providers.c.tools.q.constraints[0]"));
    assert!(problem.contains("exactly one"));
    let neither = "[providers.c.tools.q]\nverdict = \"allow\"\nconstraints = [{ pointer = \"/a\" }]\n";
    assert!(invalid(neither).2.contains("exactly one"));
}

#[test]
fn a_bad_pointer_or_pattern_is_reported_at_its_line() {
    let text = "[providers.c.tools.q]\nverdict = \"allow\"\n[[providers.c.tools.q.constraints]]\npointer = \"a\"\nequals = 1\n";
    let (line, key, _, fix) = invalid(text);
    assert_eq!((line, key.as_str()), (4, "providers.c.tools.q.constraints[0].pointer"));
    assert!(fix.contains("RFC 6901"));
    let text = "[providers.c.tools.q]\nverdict = \"allow\"\n[[providers.c.tools.q.constraints]]\npointer = \"/a\"\npattern = \"(a{100}){100}\"\n";
    let (line, key, problem, _) = invalid(text);
    assert_eq!((line, key.as_str()), (5, "providers.c.tools.q.constraints[0].pattern"));
    assert!(problem.contains("compiles to more than"), "{problem}");
}

#[test]
fn a_datetime_cannot_be_an_equals_value() {
    let text =
        "[providers.c.tools.q]\nverdict = \"allow\"\nconstraints = [{ pointer = \"/d\", equals = 2024-01-01 }]\n";
    assert!(invalid(text).2.contains("no JSON equivalent"));
}

#[test]
fn zero_limits_relative_read_paths_and_port_zero_are_rejected() {
    assert_eq!(invalid("[providers.c.limits]\nmemory_bytes = 0\n").1, "providers.c.limits.memory_bytes");
    let (line, key, _, fix) = invalid("[providers.c]\nread_paths = [\"data\"]\n");
    assert_eq!((line, key.as_str()), (2, "providers.c.read_paths"));
    assert!(fix.contains("absolute"));
    assert!(invalid("[providers.c]\nnetwork_ports = [0]\n").3.contains("1 to 65535"));
    assert!(invalid("[providers.c]\nnetwork_hosts = [\"example.com\"]\n").3.contains("host:port"));
    assert!(invalid("[providers.c]\nnetwork_hosts = [\"example.com:0\"]\n").3.contains("host:port"));
    // The one grammar of a grant, the egress proxy's: a host that is no host name is refused here.
    let bad = invalid("[providers.c]\nnetwork_hosts = [\"a b:443\"]\n");
    assert!(bad.2.contains("neither a host name") && bad.3.contains("host:port"), "{bad:?}");
    let wild = invalid("[providers.c]\nnetwork_hosts = [\"api.*.com:443\"]\n");
    assert!(wild.2.contains("neither a host name") && wild.3.contains("\"*:443\" (any public address)"), "{wild:?}");
    let both = invalid("[providers.c]\nnetwork_ports = [443]\nnetwork_hosts = [\"a.com:443\"]\n");
    assert!(both.2.contains("both") && both.3.contains("not both"), "{both:?}");
    assert!(invalid("[providers.c]\nnetwork_ports = [70000]\n").2.contains("invalid value"));
}

#[test]
fn unknown_enum_values_are_rejected_with_choices() {
    let fix = invalid("[providers.c]\nconfinement = \"besteffort\"\n").3;
    assert!(fix.contains("\"best-effort\""), "{fix}");
    let fix = invalid("[providers.c]\ninjection = \"block\"\n").3;
    assert!(fix.contains("`withhold`"), "{fix}");
}

#[test]
fn hostile_policy_text_returns_errors_not_panics() {
    let deep = format!("x = {}{}\n", "[".repeat(10_000), "]".repeat(10_000));
    for text in [deep.as_str(), "\u{0}", "[[[", "[providers.\"\u{202e}\"]", "[providers.a]\ntools = 5", "\u{feff}= ="] {
        assert!(Policy::from_toml(text, "p").is_err(), "{text:?}");
    }
}

#[test]
fn errors_display_file_line_column_key_and_fix() {
    let err = Policy::from_toml("[providers.c]\nunlisted = \"maybe\"\n", "etc/policy.toml").unwrap_err();
    let shown = err.to_string();
    assert!(shown.starts_with("etc/policy.toml:2:12: `providers.c.unlisted`: unknown value \"maybe\""), "{shown}");
    assert!(shown.contains("\n  fix: use one of: `allow`, `ask`, `deny`"), "{shown}");
}

#[test]
fn the_policy_reference_example_parses_and_decides_as_documented() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/POLICY.md")).unwrap();
    let example = doc.split("```toml\n").nth(1).and_then(|rest| rest.split("```").next()).unwrap();
    let p = parse(example);
    let c = p.provider("calendar").unwrap();
    assert_eq!(
        (c.injection, c.confinement, c.network_ports.as_slice()),
        (InjectionAction::Flag, ConfinementLevel::Required, &[443][..])
    );
    let primary = json!({"calendar_id": "primary", "from": "2026-05-01"});
    assert_eq!(p.decide("calendar", "calendar_query", &primary).verdict, Verdict::Allow);
    let bob = p.decide("calendar", "calendar_query", &json!({"calendar_id": "bob@example.com"}));
    assert_eq!(bob.reason, "argument `/calendar_id` must equal \"primary\" (policy for `calendar_query`)");
    assert_eq!(p.decide("calendar", "calendar_create", &json!({})).verdict, Verdict::Ask);
    assert_eq!(p.decide("calendar", "calendar_delete", &json!({})).verdict, Verdict::Deny);
    assert_eq!(p.decide("calendar", "calendar_share", &json!({})).verdict, Verdict::Deny);
}

#[test]
fn resources_and_prompts_are_denied_unless_a_glob_allows_them() {
    let policy = parse(
        r#"
[providers.docs]
resources = ["file:///docs/*", "test://static-text"]
prompts = ["summarize_*"]

[providers.other]
resources = ["file:///docs/shared/*"]
"#,
    );
    let docs = policy.provider("docs").unwrap();
    assert!(docs.allows_resource("file:///docs/a.md"));
    assert!(docs.allows_resource("test://static-text"));
    assert!(!docs.allows_resource("test://static-text2"), "a glob without `*` matches exactly");
    assert!(!docs.allows_resource("file:///etc/passwd"));
    assert!(docs.allows_prompt("summarize_week"));
    assert!(!docs.allows_prompt("delete_all"));
    let other = policy.provider("other").unwrap();
    assert!(!other.allows_prompt("summarize_week"), "no `prompts` key: no prompts");
    assert_eq!(policy.resource_readers("file:///docs/a.md"), vec!["docs"]);
    assert_eq!(policy.resource_readers("file:///docs/shared/x"), vec!["docs", "other"], "both may: ambiguous");
    assert!(policy.resource_readers("https://example.com/").is_empty());
}

#[test]
fn a_resource_uri_that_climbs_out_of_its_glob_is_denied_however_it_is_spelled() {
    let policy = parse("[providers.docs]\nresources = [\"file:///srv/docs/*\", \"docs://*\"]\n");
    let docs = policy.provider("docs").unwrap();
    assert!(docs.allows_resource("file:///srv/docs/a/b.md"));
    assert!(docs.allows_resource("file:///srv/docs/notes..md"), "dots inside a name are fine");
    assert!(docs.allows_resource("file:///srv/docs/a?q=..#.."), "only the path counts");
    for climbing in [
        "file:///srv/docs/../../home/u/.ssh/id_rsa",
        "file:///srv/docs/a/..",
        "file:///srv/docs/%2e%2e/%2E%2E/etc/passwd",
        "file:///srv/docs/..%2f..%2fetc/passwd",
        "file:///srv/docs/%252e%252e/etc/passwd",
        "file:///srv/docs/..\\..\\etc",
        "docs://x/../y",
    ] {
        assert!(!docs.allows_resource(climbing), "{climbing}");
        assert!(policy.resource_readers(climbing).is_empty(), "{climbing}");
    }
}

#[test]
fn an_empty_resource_or_prompt_pattern_is_refused_with_its_key() {
    let (line, key, _problem, fix) = invalid("[providers.docs]\nresources = [\"test://a\", \"\"]\n");
    assert_eq!((line, key.as_str()), (2, "providers.docs.resources[1]"));
    assert!(fix.contains("URI glob"), "{fix}");
    let (_, key, _, _) = invalid("[providers.docs]\nprompts = [\"\"]\n");
    assert_eq!(key, "providers.docs.prompts[0]");
}

#[test]
fn media_is_text_unless_passed_and_its_types_and_size_are_checked_at_load() {
    let plain = parse("[providers.c]\n");
    let rules = plain.provider("c").unwrap();
    assert_eq!(rules.media, wasmgate_policy::MediaMode::Text);
    assert_eq!(rules.media_types, wasmgate_policy::DEFAULT_MEDIA_TYPES);
    assert_eq!(rules.media_max_bytes, wasmgate_policy::DEFAULT_MEDIA_MAX_BYTES);

    let passed = parse("[providers.c]\nmedia = \"pass\"\nmedia_types = [\"Image/PNG\"]\nmedia_max_bytes = 1024\n");
    let rules = passed.provider("c").unwrap();
    assert_eq!(rules.media, wasmgate_policy::MediaMode::Pass);
    assert_eq!(rules.media_types, ["image/png"]);
    assert_eq!(rules.media_max_bytes, 1024);

    let (line, key, problem, fix) = invalid("[providers.c]\nmedia_types = [\"image/png; q=1\"]\n");
    assert_eq!((line, key.as_str()), (2, "providers.c.media_types[0]"));
    assert!(problem.contains("is not a MIME type") && fix.contains("image/png"), "{problem} {fix}");
    let (_, key, problem, _) = invalid("[providers.c]\nmedia_max_bytes = 0\n");
    assert_eq!((key.as_str(), problem.as_str()), ("providers.c.media_max_bytes", "0 would pass nothing"));
    assert!(Policy::from_toml("[providers.c]\nmedia = \"raw\"\n", "p").is_err());
}

#[test]
fn sampling_is_denied_unless_allowed_and_roots_are_file_uris_checked_at_load() {
    let plain = parse("[providers.c]\n");
    let rules = plain.provider("c").unwrap();
    assert_eq!(
        (rules.sampling, rules.sampling_max_tokens),
        (Verdict::Deny, wasmgate_policy::DEFAULT_SAMPLING_MAX_TOKENS)
    );
    assert!(rules.roots.is_empty(), "no roots unless listed");

    let set = parse("[providers.c]\nsampling = \"ask\"\nsampling_max_tokens = 64\nroots = [\"file:///srv/data\"]\n");
    let rules = set.provider("c").unwrap();
    assert_eq!((rules.sampling, rules.sampling_max_tokens), (Verdict::Ask, 64));
    assert_eq!(rules.roots, ["file:///srv/data"]);

    let (line, key, problem, fix) = invalid("[providers.c]\nroots = [\"/srv/data\"]\n");
    assert_eq!((line, key.as_str()), (2, "providers.c.roots[0]"));
    assert!(problem.contains("is not a file:// URI") && fix.contains("file:///"), "{problem} {fix}");
    let (_, key, problem, _) = invalid("[providers.c]\nsampling_max_tokens = 0\n");
    assert_eq!((key.as_str(), problem.as_str()), ("providers.c.sampling_max_tokens", "0 would allow no completion"));
}

#[test]
fn asks_go_to_reviewers_only_for_the_tools_named_and_wait_for_a_bounded_deadline() {
    let policy = parse("[approvals]\ndeadline_seconds = 60\n\n[providers.pay]\nask_reviewers = [\"send_*\"]\n");
    assert!(policy.asks_reviewers("pay", "send_money"));
    assert!(!policy.asks_reviewers("pay", "balance") && !policy.asks_reviewers("other", "send_money"));
    assert_eq!(policy.approval_deadline(), std::time::Duration::from_secs(60));
    assert_eq!(parse("").approval_deadline().as_secs(), wasmgate_policy::DEFAULT_APPROVAL_DEADLINE_SECONDS);
    assert_eq!(Policy::default().approval_deadline(), parse("").approval_deadline());
    for seconds in [0, wasmgate_policy::MAX_APPROVAL_DEADLINE_SECONDS + 1] {
        let (line, key, problem, _) = invalid(&format!("[approvals]\ndeadline_seconds = {seconds}\n"));
        assert_eq!((line, key.as_str()), (1, "approvals.deadline_seconds"), "{problem}");
    }
    let (_, _, problem, _) = invalid("[approvals]\nwebhook = 3\n");
    assert!(problem.contains("webhook"), "{problem}");
}

#[test]
fn the_console_names_reviewers_and_admins_and_nobody_else() {
    use wasmgate_policy::ConsoleRole;
    let policy = parse(
        "[console]\nreviewers = [{ groups = [\"security\"] }, { subjects = [\"carol\"] }]\n\
         admins = [{ claims = { dept = \"ops\" } }]\n",
    );
    let facts = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
    let role = |v| policy.console_role(&facts(v));
    assert_eq!(role(serde_json::json!({"subject": "alice", "groups": ["security"]})), Some(ConsoleRole::Reviewer));
    assert_eq!(role(serde_json::json!({"subject": "carol"})), Some(ConsoleRole::Reviewer));
    assert_eq!(role(serde_json::json!({"subject": "dan", "dept": "ops"})), Some(ConsoleRole::Admin));
    assert_eq!(
        role(serde_json::json!({"subject": "dan", "groups": ["security"], "dept": "ops"})),
        Some(ConsoleRole::Admin)
    );
    assert_eq!(role(serde_json::json!({"subject": "mallory", "groups": ["staff"]})), None);
    assert_eq!(parse("").console_role(&facts(serde_json::json!({"subject": "root"}))), None, "nobody by default");
    let (line, key, problem, fix) = invalid("[console]\nreviewers = [{ subjects = [\"a\"] }, {}]\n");
    assert_eq!((line, key.as_str()), (2, "console.reviewers[1]"), "{problem}");
    assert!(problem.contains("every caller") && fix.contains("subjects"), "{problem} {fix}");
    let (_, key, _, _) = invalid("[console]\nadmins = [{ groups = [\"\"] }]\n");
    assert_eq!(key, "console.admins[0].groups[0]");
    let (_, _, problem, _) = invalid("[console]\nviewers = []\n");
    assert!(problem.contains("viewers"), "{problem}");
}
