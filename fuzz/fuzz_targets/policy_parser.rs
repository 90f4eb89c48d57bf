//! Any text as a policy file. `Policy::from_toml` must only ever return; an error
//! must be `Invalid`, located at a line and column that exist in the text, and
//! Display as `fuzz.toml:<line>:<column>: ...` with a fix. Bytes that are not UTF-8
//! must be refused by `Policy::load` as unreadable (and their lossy text is parsed
//! like any other).
//!
//! A policy that parses is then asked about calls, and every answer is checked
//! against the decision order of docs/POLICY.md ("How a decision is made"): an
//! unknown provider or a name outside MCP's rules is denied, an unlisted tool gets
//! the provider's `unlisted` verdict, a listed `deny` is denied, a failing
//! constraint denies with its reason, else the listed verdict. A decision is never
//! looser than the static verdict, never echoes an argument's value, and
//! `resource_readers` names exactly the providers whose globs allow the URI.

#![no_main]

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};
use wasmgate_policy::{Policy, PolicyError, ProviderPolicy, Rule, Verdict, is_valid_tool_name, validate_provider};

const ORIGIN: &str = "fuzz.toml";
/// An argument value no policy reason may contain (unless the policy itself does).
const SECRET: &str = "zz-argument-value-5e1f";

fuzz_target!(|data: &[u8]| {
    match std::str::from_utf8(data) {
        Ok(text) => check_text(text),
        Err(_) => {
            check_not_utf8(data);
            check_text(&String::from_utf8_lossy(data));
        }
    }
});

fn check_text(text: &str) {
    match Policy::from_toml(text, ORIGIN) {
        Ok(policy) => check_policy(text, &policy),
        Err(err) => check_error(text, &err),
    }
}

/// `Policy::load` reads the file as UTF-8: anything else is a read error, not a panic
/// and not a policy. The scratch file is on tmpfs where there is one, and removed
/// after each input.
fn check_not_utf8(data: &[u8]) {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    let path = PATH.get_or_init(|| {
        let shm = Path::new("/dev/shm");
        let dir = if shm.is_dir() { shm.to_owned() } else { std::env::temp_dir() };
        dir.join(format!("wasmgate-fuzz-policy-{}.toml", std::process::id()))
    });
    std::fs::write(path, data).expect("cannot write the scratch policy file");
    let loaded = Policy::load(path);
    let _ = std::fs::remove_file(path);
    match loaded {
        Err(PolicyError::Read { source, .. }) => {
            assert_eq!(source.kind(), ErrorKind::InvalidData, "non-UTF-8 refused for the wrong reason: {source}")
        }
        Err(other) => panic!("non-UTF-8 policy refused as {other}, not as unreadable"),
        Ok(_) => panic!("a policy that is not UTF-8 was accepted"),
    }
}

fn check_error(text: &str, err: &PolicyError) {
    let shown = err.to_string();
    match err {
        PolicyError::Invalid { origin, line, column, fix, .. } => {
            assert_eq!(origin, ORIGIN);
            let lines = text.split('\n').count();
            assert!((1..=lines).contains(line), "line {line} of a {lines}-line text: {shown}");
            let chars = text.split('\n').nth(line - 1).map_or(0, |l| l.chars().count());
            assert!((1..=chars + 1).contains(column), "column {column} of a {chars}-character line: {shown}");
            assert!(!fix.is_empty(), "an error without a fix: {shown}");
            let head = format!("{ORIGIN}:{line}:{column}: ");
            assert!(shown.starts_with(&head), "{shown:?} does not start with {head:?}");
            assert!(shown.contains("\n  fix: "), "{shown:?} shows no fix");
        }
        PolicyError::TooLarge { .. } => {
            assert!(text.len() > wasmgate_policy::MAX_POLICY_BYTES, "{shown}")
        }
        other => panic!("from_toml failed without a location: {other}"),
    }
}

fn check_policy(text: &str, policy: &Policy) {
    let names: Vec<&str> = policy.providers().map(|(name, _)| name).collect();
    for (name, provider) in policy.providers() {
        assert!(validate_provider(name).is_ok(), "provider {name:?} was accepted");
        for (tool, _) in provider.tools() {
            assert!(is_valid_tool_name(tool), "tool {tool:?} was accepted");
        }
    }

    let mut providers: Vec<&str> = names.clone();
    providers.push("zz-not-a-provider");
    providers.push("");
    for provider in providers {
        let p = policy.provider(provider);
        let mut tools: Vec<String> = p.map(|p| p.tools().map(|(t, _)| t.to_owned()).collect()).unwrap_or_default();
        tools.extend(["zz_unlisted_tool", "bad name", "", "a/b"].map(String::from));
        tools.push("t".repeat(129));
        for tool in &tools {
            for args in arguments(p, tool) {
                check_decision(text, policy, provider, p, tool, &args);
            }
        }
        if let Some(p) = p {
            for tool in &tools {
                let _ = (p.allows_prompt(tool), p.formatter_for(tool));
            }
        }
    }

    let mut uris: Vec<&str> = vec!["", "file:///srv/docs/a.md", "docs://templates/{id}", "*"];
    uris.extend(text.split(['"', '\'', '\n', '[', ']', ',']).map(str::trim).filter(|s| s.len() <= 256).take(64));
    for uri in uris {
        let readers = policy.resource_readers(uri);
        let expected: Vec<&str> = policy.providers().filter(|(_, p)| p.allows_resource(uri)).map(|(n, _)| n).collect();
        assert_eq!(readers, expected, "resource_readers({uri:?})");
        for name in readers {
            assert!(policy.provider(name).is_some_and(ProviderPolicy::offers_resources), "{name} reads {uri:?}");
        }
    }
}

/// Arguments to try for `tool`: none, some unrelated ones, the values its `equals`
/// constraints want (so the allow and ask paths are reached), and a marker value at
/// every constrained pointer (so a failing constraint's reason can be checked).
fn arguments(p: Option<&ProviderPolicy>, tool: &str) -> Vec<Value> {
    let mut out = vec![json!({}), Value::Null, json!({"a": 1, "path": "/srv/files/x"})];
    let Some(rule) = p.and_then(|p| p.tool(tool)) else { return out };
    let mut wanted = json!({});
    let mut marked = json!({});
    for c in &rule.constraints {
        if let Rule::Equals(value) = &c.rule {
            set(&mut wanted, &c.pointer, value.clone());
        }
        set(&mut marked, &c.pointer, Value::String(SECRET.to_owned()));
    }
    out.push(wanted);
    out.push(marked);
    out
}

/// Sets `value` at an RFC 6901 pointer, making objects on the way (and replacing
/// whatever is not one).
fn set(root: &mut Value, pointer: &str, value: Value) {
    let mut at = root;
    if !pointer.is_empty() {
        let tokens: Vec<String> = pointer[1..].split('/').map(|t| t.replace("~1", "/").replace("~0", "~")).collect();
        for token in tokens {
            if !at.is_object() {
                *at = Value::Object(Map::new());
            }
            at = at.as_object_mut().expect("just made an object").entry(token).or_insert(Value::Null);
        }
    }
    *at = value;
}

fn check_decision(text: &str, policy: &Policy, provider: &str, p: Option<&ProviderPolicy>, tool: &str, args: &Value) {
    let decision = policy.decide(provider, tool, args);
    assert_eq!(decision, policy.decide(provider, tool, args), "decide is not deterministic");
    let what = format!("decide({provider:?}, {tool:?}, {args})");

    let expected = match p {
        None => Verdict::Deny,
        Some(_) if !is_valid_tool_name(tool) => Verdict::Deny,
        Some(p) => match p.tool(tool) {
            None => p.unlisted,
            Some(rule) if rule.verdict == Verdict::Deny => Verdict::Deny,
            Some(rule) => match rule.constraints.iter().find_map(|c| c.check(args).err()) {
                Some(why) => {
                    let why = why.to_string();
                    assert!(decision.reason.contains(&why), "{what}: reason {:?} lacks {why:?}", decision.reason);
                    Verdict::Deny
                }
                None => rule.verdict,
            },
        },
    };
    assert_eq!(decision.verdict, expected, "{what}: {}", decision.reason);

    let fixed = policy.static_verdict(provider, tool);
    assert!(
        decision.verdict == fixed || decision.verdict == Verdict::Deny,
        "{what} is {} but the static verdict is {fixed}",
        decision.verdict
    );
    if !is_valid_tool_name(tool) && !tool.is_empty() {
        assert!(!decision.reason.contains(tool), "{what}: the invalid name is echoed in {:?}", decision.reason);
    }
    if !text.contains(SECRET) {
        assert!(!decision.reason.contains(SECRET), "{what}: an argument value is echoed in {:?}", decision.reason);
    }
}
