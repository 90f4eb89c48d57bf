//! Canonical JSON and the definition hash that pins a reviewed tool.
//!
//! Canonical form: object keys sorted by their UTF-8 bytes, no whitespace, strings escaped only
//! where JSON requires it (`"`, `\` and U+0000..U+001F, the latter as `\b \f \n \r \t` or
//! `\u00xx`), numbers as serde_json prints them. The writer is iterative, so a deeply nested
//! definition from a hostile provider cannot overflow the stack.
//!
//! The hash covers exactly `name`, `description`, `inputSchema`, `outputSchema` and `annotations`.
//! A field that is missing and a field that is `null` are the same (both are left out), so a
//! provider cannot change the hash by switching between the two, and other top-level fields
//! (`title`, `icons`, `_meta`, ...) do not affect it.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The definition fields that review covers, in the order they are shown.
pub const REVIEWED_FIELDS: [&str; 5] = ["name", "description", "inputSchema", "outputSchema", "annotations"];

/// The reviewed part of a tool definition: the [`REVIEWED_FIELDS`] that are present and not null.
pub fn reviewed_fields(definition: &Value) -> Value {
    let mut out = Map::new();
    for field in REVIEWED_FIELDS {
        match definition.get(field) {
            None | Some(Value::Null) => {}
            Some(v) => {
                out.insert(field.to_owned(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// SHA-256, lowercase hex, of the canonical JSON of `reviewed_fields`. Reads the definition by
/// reference, so its depth costs heap, not stack.
pub fn definition_hash(definition: &Value) -> String {
    let fields =
        REVIEWED_FIELDS.iter().filter_map(|f| definition.get(*f).filter(|v| !v.is_null()).map(|v| (*f, v))).collect();
    hex::encode(Sha256::digest(write(Step::Entries(fields)).as_bytes()))
}

/// `value` in canonical form (see the module docs).
pub fn canonical_json(value: &Value) -> String {
    write(Step::Value(value))
}

enum Step<'a> {
    Value(&'a Value),
    Entries(Vec<(&'a str, &'a Value)>),
    Key(&'a str),
    Raw(&'static str),
}

fn write(first: Step<'_>) -> String {
    let mut out = String::new();
    let mut stack = vec![first];
    while let Some(step) = stack.pop() {
        match step {
            Step::Raw(s) => out.push_str(s),
            Step::Key(k) => {
                escape_into(&mut out, k);
                out.push(':');
            }
            Step::Value(Value::Null) => out.push_str("null"),
            Step::Value(Value::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
            Step::Value(Value::Number(n)) => out.push_str(&n.to_string()),
            Step::Value(Value::String(s)) => escape_into(&mut out, s),
            Step::Value(Value::Array(items)) => {
                out.push('[');
                stack.push(Step::Raw("]"));
                for (i, item) in items.iter().enumerate().rev() {
                    stack.push(Step::Value(item));
                    if i > 0 {
                        stack.push(Step::Raw(","));
                    }
                }
            }
            Step::Value(Value::Object(map)) => {
                stack.push(Step::Entries(map.iter().map(|(k, v)| (k.as_str(), v)).collect()));
            }
            Step::Entries(mut entries) => {
                out.push('{');
                stack.push(Step::Raw("}"));
                entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                for (i, (k, v)) in entries.into_iter().enumerate().rev() {
                    stack.push(Step::Value(v));
                    stack.push(Step::Key(k));
                    if i > 0 {
                        stack.push(Step::Raw(","));
                    }
                }
            }
        }
    }
    out
}

fn escape_into(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_json_sorts_keys_at_every_level_and_has_no_whitespace() {
        let v: Value = serde_json::from_str(r#"{ "b": [ {"z": 1, "a": null} ], "a": "x\n\u0001" }"#).unwrap();
        assert_eq!(canonical_json(&v), r#"{"a":"x\n\u0001","b":[{"a":null,"z":1}]}"#);
    }

    #[test]
    fn canonical_json_is_itself_valid_json_with_the_same_value() {
        let v = json!({"q\"uote": ["\\", "é\u{200b}", 1.5, -3, true, {}], "": []});
        let back: Value = serde_json::from_str(&canonical_json(&v)).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn the_hash_ignores_key_order_and_unreviewed_fields() {
        let a = json!({"name": "q", "description": "d", "inputSchema": {"type": "object", "properties": {}}});
        let b = json!({"inputSchema": {"properties": {}, "type": "object"}, "title": "T", "_meta": {"x": 1},
                       "description": "d", "name": "q"});
        assert_eq!(definition_hash(&a), definition_hash(&b));
        assert_eq!(definition_hash(&a).len(), 64);
        assert_eq!(definition_hash(&a), hex::encode(Sha256::digest(canonical_json(&reviewed_fields(&b)))));
    }

    #[test]
    fn a_missing_field_and_a_null_field_hash_the_same() {
        let a = json!({"name": "q", "inputSchema": {}});
        let b = json!({"name": "q", "inputSchema": {}, "outputSchema": null, "annotations": null});
        assert_eq!(definition_hash(&a), definition_hash(&b));
    }

    #[test]
    fn every_reviewed_field_changes_the_hash() {
        let base = json!({"name": "q", "description": "d", "inputSchema": {}, "outputSchema": {}, "annotations": {}});
        for field in REVIEWED_FIELDS {
            let mut changed = base.clone();
            changed[field] = json!("different");
            assert_ne!(definition_hash(&base), definition_hash(&changed), "{field}");
        }
    }

    #[test]
    fn a_very_deep_definition_hashes_without_overflowing_the_stack() {
        let mut v = json!("leaf");
        for _ in 0..100_000 {
            v = Value::Array(vec![v]);
        }
        let mut def = json!({"name": "deep"});
        def["inputSchema"] = v; // moved, not cloned: json! would clone it recursively
        assert_eq!(definition_hash(&def).len(), 64);
        // serde_json drops nested values recursively; leak it so the test checks only our code.
        std::mem::forget(def);
    }

    #[test]
    fn a_definition_that_is_not_an_object_hashes_as_empty() {
        assert_eq!(definition_hash(&json!("x")), definition_hash(&json!({})));
    }
}
