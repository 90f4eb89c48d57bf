//! `x-mcp-header` (2026-07-28, Streamable HTTP): tool parameters mirrored into headers.
//!
//! A server may mark parameters in a tool's `inputSchema` with `"x-mcp-header": "Name"`;
//! an HTTP client must then send `Mcp-Param-Name: <value>` with every call of that tool,
//! and must drop from `tools/list` any tool whose annotations break the rules: the name
//! must be a non-empty HTTP token, unique case-insensitively, on a `string`, `integer`
//! or `boolean` property that is reachable from the root through `properties` keys
//! only (not through `items`, `oneOf`, `$ref`, ...). Values are the argument at that
//! path: strings as-is, integers in JavaScript's safe range in decimal, booleans as
//! `true`/`false`, each through the same Base64 wrapping as `Mcp-Name`; an absent or
//! `null` argument sends no header.

//!
//! Pure: the client encodes the values into headers (`wasmgate-client`), the server
//! checks the headers it received against them (`wasmgate-server`).

use std::collections::HashSet;

use serde_json::{Map, Value};

/// One annotated parameter: where it is in the arguments and which header it feeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    path: Vec<String>,
    header: String,
}

impl HeaderParam {
    /// The header's name: `Mcp-Param-` and the annotation.
    #[must_use]
    pub fn header_name(&self) -> String {
        format!("Mcp-Param-{}", self.header)
    }
}

/// Why a tool's `x-mcp-header` annotations are refused (the tool is then dropped).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnnotationError {
    /// An annotation on a property no `properties` path reaches.
    #[error("x-mcp-header on a property that is not reachable through `properties` alone")]
    Unreachable,
    /// Two parameters mirrored into one header.
    #[error("x-mcp-header {0:?} is used twice")]
    Twice(String),
    /// An annotation that is not a string (on the property named).
    #[error("x-mcp-header of {0:?} is not a string")]
    NotAString(String),
    /// A header name that is not an HTTP token.
    #[error("x-mcp-header {0:?} is not an HTTP header token")]
    NotAToken(String),
    /// A property of a type a header cannot carry.
    #[error("x-mcp-header {header:?} is on a property of type {kind:?}")]
    WrongType {
        /// The header.
        header: String,
        /// The property's type, if it names one.
        kind: Option<String>,
    },
}

/// The annotated parameters of a tool's `inputSchema`.
///
/// # Errors
///
/// An [`AnnotationError`] naming the broken rule: the tool must be dropped.
pub fn header_params(schema: &Value) -> Result<Vec<HeaderParam>, AnnotationError> {
    let mut found = Vec::new();
    reachable(schema, &mut Vec::new(), &mut found)?;
    if count(schema, false) != found.len() {
        return Err(AnnotationError::Unreachable);
    }
    let mut seen = HashSet::new();
    if let Some(dup) = found.iter().find(|p| !seen.insert(p.header.to_ascii_lowercase())) {
        return Err(AnnotationError::Twice(dup.header.clone()));
    }
    Ok(found)
}

fn reachable(schema: &Value, path: &mut Vec<String>, found: &mut Vec<HeaderParam>) -> Result<(), AnnotationError> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return Ok(()) };
    for (key, property) in properties {
        path.push(key.clone());
        if let Some(header) = property.get("x-mcp-header") {
            let header = header.as_str().ok_or_else(|| AnnotationError::NotAString(key.clone()))?;
            if header.is_empty() || !header.bytes().all(is_tchar) {
                return Err(AnnotationError::NotAToken(header.to_owned()));
            }
            match property.get("type").and_then(Value::as_str) {
                Some("string" | "integer" | "boolean") => {}
                other => {
                    let kind = other.map(str::to_owned);
                    return Err(AnnotationError::WrongType { header: header.to_owned(), kind });
                }
            }
            found.push(HeaderParam { path: path.clone(), header: header.to_owned() });
        }
        reachable(property, path, found)?;
        path.pop();
    }
    Ok(())
}

/// Every `x-mcp-header` keyword anywhere in the schema (property *names* excluded).
fn count(value: &Value, is_properties_map: bool) -> usize {
    match value {
        Value::Object(map) => map
            .iter()
            .map(|(key, child)| {
                usize::from(!is_properties_map && key == "x-mcp-header") + count(child, key == "properties")
            })
            .sum(),
        Value::Array(items) => items.iter().map(|item| count(item, false)).sum(),
        _ => 0,
    }
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The value each annotated parameter has in `arguments`, as header text before any
/// encoding: strings as-is, integers in JavaScript's safe range in decimal, booleans
/// as `true`/`false`. A parameter that is absent, `null` or of another kind has none.
#[must_use]
pub fn header_values<'a>(
    params: &'a [HeaderParam],
    arguments: &Map<String, Value>,
) -> Vec<(&'a HeaderParam, Option<String>)> {
    const SAFE: i64 = (1 << 53) - 1;
    params
        .iter()
        .map(|param| {
            let mut value = None;
            let mut scope = Some(arguments);
            for (i, key) in param.path.iter().enumerate() {
                let next = scope.and_then(|s| s.get(key));
                if i + 1 == param.path.len() {
                    value = next;
                } else {
                    scope = next.and_then(Value::as_object);
                }
            }
            let text = match value {
                Some(Value::String(s)) => Some(s.clone()),
                Some(Value::Bool(b)) => Some(b.to_string()),
                Some(Value::Number(n)) if n.as_i64().is_some_and(|i| (-SAFE..=SAFE).contains(&i)) => {
                    Some(n.to_string())
                }
                _ => None,
            };
            (param, text)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    #[test]
    fn annotated_parameters_give_their_values_and_absent_ones_none() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "opts": {"type": "object", "properties": {"dry": {"type": "boolean", "x-mcp-header": "Dry"}}},
            "count": {"type": "integer", "x-mcp-header": "Count"}}});
        let params = header_params(&schema).unwrap();
        let args = json!({"region": "Hello, 世界", "opts": {"dry": true}, "count": null});
        let mut got: Vec<(String, Option<String>)> =
            header_values(&params, args.as_object().unwrap()).into_iter().map(|(p, v)| (p.header_name(), v)).collect();
        got.sort();
        assert_eq!(
            got,
            vec![
                ("Mcp-Param-Count".to_owned(), None),
                ("Mcp-Param-Dry".to_owned(), Some("true".to_owned())),
                ("Mcp-Param-Region".to_owned(), Some("Hello, 世界".to_owned())),
            ]
        );
    }

    #[test]
    fn invalid_annotations_reject_the_tool() {
        let bad = [
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "Bad Name"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "a"}}}),
            json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}}),
            json!({"oneOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}),
        ];
        for schema in bad {
            assert!(header_params(&schema).is_err(), "{schema}");
        }
        let named_like_the_keyword = json!({"properties": {"x-mcp-header": {"type": "string"}}});
        assert_eq!(header_params(&named_like_the_keyword), Ok(vec![]));
    }
}
