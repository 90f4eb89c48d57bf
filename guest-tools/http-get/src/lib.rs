//! A sample tool component that reaches the network (WIT world `tool-provider`): one
//! `get` tool that fetches `http://host[:port]/path` with a plain HTTP/1.0 GET and
//! returns the body as text, at most [`MAX_BODY`] bytes.
//!
//! It may reach only what its policy grants: `network_hosts = ["127.0.0.1:5232"]`
//! opens `wasi:sockets` TCP to that address, and every other address, UDP, listening
//! and (unless a host is granted by name) name lookups stay refused by the sandbox
//! (docs/CONFIG.md). The component itself trusts nothing it reads: the answer is cut to
//! size and returned as text, which the gateway screens like any result.
//!
//! The logic is plain Rust, tested natively; `component` (wasm32 only) is the export.

use std::io::{Read, Write};

/// The most of a body kept.
pub const MAX_BODY: usize = 64 * 1024;
/// The most of a whole response read (head and body).
const MAX_RESPONSE: u64 = MAX_BODY as u64 + 16 * 1024;

/// Where a URL points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `host:port`, as given to the socket.
    pub authority: String,
    /// The host, for the `Host` header.
    pub host: String,
    /// The path and query, `/` at least.
    pub path: String,
}

/// The target of an `http://` URL, or why it cannot be fetched.
pub fn target(url: &str) -> Result<Target, String> {
    let rest = url.strip_prefix("http://").ok_or("only http:// URLs (this sample speaks no TLS)")?;
    let (authority, path) = rest.find('/').map_or((rest, "/"), |at| rest.split_at(at));
    if authority.is_empty() || authority.contains(['@', ' ']) || path.contains([' ', '\r', '\n']) {
        return Err(format!("not a URL this tool fetches: {url:?}"));
    }
    if authority.contains('[') {
        return Err("this sample takes host names and IPv4 addresses, not IPv6 literals".into());
    }
    let (host, authority) = match authority.rsplit_once(':') {
        Some((host, port)) => {
            port.parse::<u16>().map_err(|_| format!("bad port in {url:?}"))?;
            (host, authority.to_owned())
        }
        None => (authority, format!("{authority}:80")),
    };
    Ok(Target { authority, host: host.to_owned(), path: path.to_owned() })
}

/// The request sent for `target`.
#[must_use]
pub fn request(target: &Target) -> String {
    format!(
        "GET {} HTTP/1.0\r\nHost: {}\r\nUser-Agent: wasmgate-http-get\r\nConnection: close\r\n\r\n",
        target.path, target.host
    )
}

/// A response: its status and its body (cut to [`MAX_BODY`], as text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The body, lossily decoded.
    pub body: String,
}

/// Parses a whole response.
pub fn response(bytes: &[u8]) -> Result<Response, String> {
    let end = bytes.windows(4).position(|w| w == b"\r\n\r\n").ok_or("no end of the response head")?;
    let head = String::from_utf8_lossy(&bytes[..end]);
    let status = head
        .lines()
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or("no status line")?;
    let body = &bytes[end + 4..];
    let body = &body[..body.len().min(MAX_BODY)];
    Ok(Response { status, body: String::from_utf8_lossy(body).into_owned() })
}

/// Fetches `url` over `connect`'s stream.
pub fn get<S: Read + Write>(url: &str, connect: impl FnOnce(&str) -> std::io::Result<S>) -> Result<Response, String> {
    let target = target(url)?;
    let mut stream = connect(&target.authority).map_err(|e| format!("connecting to {}: {e}", target.authority))?;
    stream.write_all(request(&target).as_bytes()).map_err(|e| format!("sending: {e}"))?;
    let mut bytes = Vec::new();
    stream.take(MAX_RESPONSE).read_to_end(&mut bytes).map_err(|e| format!("receiving: {e}"))?;
    response(&bytes)
}

/// The `get` tool: `{"url": "..."}` to a result's content and error flag.
pub fn call<S: Read + Write>(
    arguments: &str,
    connect: impl FnOnce(&str) -> std::io::Result<S>,
) -> Result<(String, bool), String> {
    let value: serde_json::Value = serde_json::from_str(arguments).map_err(|e| format!("arguments: {e}"))?;
    let url = value.get("url").and_then(serde_json::Value::as_str).ok_or("expected {\"url\": \"http://...\"}")?;
    match get(url, connect) {
        Ok(answer) => {
            let error = !(200..300).contains(&answer.status);
            let text = if error { format!("HTTP {}: {}", answer.status, answer.body) } else { answer.body };
            Ok((serde_json::json!([{ "type": "text", "text": text }]).to_string(), error))
        }
        Err(why) => Ok((serde_json::json!([{ "type": "text", "text": why }]).to_string(), true)),
    }
}

#[cfg(target_arch = "wasm32")]
// The bindings wit-bindgen generates export the component's functions by name, which is
// unsafe code by the compiler's definition; nothing else here is.
#[allow(unsafe_code)]
mod component {
    wit_bindgen::generate!({ world: "tool-provider", path: "../../wit" });

    use exports::wasmgate::sandbox::tools::{CallError, CallOutcome, Guest, ToolDefinition};

    struct HttpGet;

    impl Guest for HttpGet {
        fn list_tools() -> Vec<ToolDefinition> {
            vec![ToolDefinition {
                name: "get".into(),
                description: "Fetches an http:// URL on a host this tool is granted and returns the body as text."
                    .into(),
                input_schema: r#"{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}"#.into(),
            }]
        }

        fn call_tool(name: String, arguments: String) -> Result<CallOutcome, CallError> {
            if name != "get" {
                return Err(CallError::UnknownTool(name));
            }
            let (content, is_error) = crate::call(&arguments, |authority| std::net::TcpStream::connect(authority))
                .map_err(CallError::InvalidArguments)?;
            Ok(CallOutcome { content, structured_content: None, is_error })
        }
    }

    export!(HttpGet);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A stream that answers with a fixed response and keeps what was written.
    struct Canned {
        answer: std::io::Cursor<Vec<u8>>,
        sent: Vec<u8>,
    }

    impl Read for Canned {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.answer.read(buf)
        }
    }

    impl Write for Canned {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.sent.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn urls_become_targets_and_others_are_refused() {
        let t = target("http://127.0.0.1:5232/cal/alice?x=1").unwrap();
        assert_eq!(
            (t.authority.as_str(), t.host.as_str(), t.path.as_str()),
            ("127.0.0.1:5232", "127.0.0.1", "/cal/alice?x=1")
        );
        assert_eq!(target("http://example.com").unwrap().authority, "example.com:80");
        for bad in
            ["https://a.com/", "http://", "http://u@a.com/", "http://a.com:x/", "http://a.com/a b", "http://[::1]/"]
        {
            assert!(target(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_get_sends_one_request_and_returns_the_body_cut_to_size() {
        let body = "x".repeat(MAX_BODY + 100);
        let answer = format!("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n{body}");
        let (content, error) = call(r#"{"url":"http://cal.test:8080/events"}"#, |authority| {
            assert_eq!(authority, "cal.test:8080");
            Ok(Canned { answer: std::io::Cursor::new(answer.into_bytes()), sent: Vec::new() })
        })
        .unwrap();
        assert!(!error);
        let value: serde_json::Value = serde_json::from_str(&content).unwrap();
        assert_eq!(value[0]["text"].as_str().unwrap().len(), MAX_BODY);
        let request = request(&target("http://cal.test:8080/events").unwrap());
        assert!(request.starts_with("GET /events HTTP/1.0\r\nHost: cal.test\r\n"), "{request}");
    }

    #[test]
    fn a_refused_connection_or_an_error_status_is_an_error_result() {
        let refused = call(r#"{"url":"http://10.0.0.1/"}"#, |_| -> std::io::Result<Canned> {
            Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied))
        });
        let (content, error) = refused.unwrap();
        assert!(error && content.contains("connecting to 10.0.0.1:80"), "{content}");
        let answer = b"HTTP/1.0 404 Not Found\r\n\r\nnope".to_vec();
        let (content, error) = call(r#"{"url":"http://a.test/"}"#, |_| {
            Ok(Canned { answer: std::io::Cursor::new(answer), sent: Vec::new() })
        })
        .unwrap();
        assert!(error && content.contains("HTTP 404: nope"), "{content}");
        assert!(call("{}", |_| -> std::io::Result<Canned> { unreachable!() }).is_err(), "no url");
        assert!(response(b"garbage").is_err());
    }
}
