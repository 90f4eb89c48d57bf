//! `x-mcp-header` (2026-07-28, Streamable HTTP): the `Mcp-Param-*` headers of one call,
//! from the annotated parameters `wasmgate_protocol::header_params` finds, each value
//! through the same Base64 wrapping as `Mcp-Name`; an absent or `null` argument sends
//! no header.

use serde_json::{Map, Value};
pub(crate) use wasmgate_protocol::{HeaderParam, header_params};

use crate::transport::encode_header_value;

/// The `Mcp-Param-*` headers for one call.
pub(crate) fn headers(params: &[HeaderParam], arguments: &Map<String, Value>) -> Vec<(String, String)> {
    wasmgate_protocol::header_values(params, arguments)
        .into_iter()
        .filter_map(|(param, value)| Some((param.header_name(), encode_header_value(&value?))))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    #[test]
    fn annotated_parameters_become_encoded_headers_and_absent_ones_are_omitted() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "opts": {"type": "object", "properties": {"dry": {"type": "boolean", "x-mcp-header": "Dry"}}},
            "count": {"type": "integer", "x-mcp-header": "Count"}}});
        let params = header_params(&schema).unwrap();
        let args = json!({"region": "Hello, 世界", "opts": {"dry": true}, "count": null});
        let mut got = headers(&params, args.as_object().unwrap());
        got.sort();
        assert_eq!(
            got,
            vec![
                ("Mcp-Param-Dry".to_owned(), "true".to_owned()),
                ("Mcp-Param-Region".to_owned(), "=?base64?SGVsbG8sIOS4lueVjA==?=".to_owned())
            ]
        );
    }
}
