//! A scripted HTTP/1.1 endpoint on loopback for the Streamable HTTP transport tests:
//! the test accepts each request (POSTs, and the GET and DELETE of handshake-era
//! sessions), inspects its headers and body, and writes exactly the answer it wants
//! (statuses, sessions, SSE streams, oversized bodies). Every answer closes its
//! connection, so each request arrives on a fresh accept, in order.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub struct Endpoint {
    listener: TcpListener,
    pub url: String,
}

/// One received request, answerable once.
pub struct Exchange {
    pub method: String,
    pub headers: HashMap<String, String>,
    pub body: Value,
    stream: TcpStream,
}

impl Endpoint {
    pub async fn bind() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        Self { listener, url }
    }

    /// The next request.
    pub async fn next(&self) -> Exchange {
        let (mut stream, _) = self.listener.accept().await.unwrap();
        let mut data = Vec::new();
        let head_end = loop {
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).await.unwrap();
            assert!(n > 0, "connection closed before a full request head");
            data.extend_from_slice(&chunk[..n]);
            if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
        };
        let head = String::from_utf8(data[..head_end].to_vec()).unwrap();
        let mut lines = head.split("\r\n");
        let method = lines.next().unwrap().split(' ').next().unwrap().to_owned();
        let headers: HashMap<String, String> = lines
            .filter_map(|line| line.split_once(": "))
            .map(|(k, v)| (k.to_ascii_lowercase(), v.to_owned()))
            .collect();
        let length: usize = headers.get("content-length").map_or(0, |v| v.parse().unwrap());
        let mut body = data[head_end..].to_vec();
        while body.len() < length {
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).await.unwrap();
            body.extend_from_slice(&chunk[..n]);
        }
        let body = if body.is_empty() { Value::Null } else { serde_json::from_slice(&body).unwrap() };
        Exchange { method, headers, body, stream }
    }

    /// The next request, which must be an HTTP `method` request without a body (the GET
    /// stream, the DELETE that ends a session).
    pub async fn expect_http(&self, method: &str) -> Exchange {
        let exchange = self.next().await;
        assert_eq!(exchange.method, method, "unexpected request {} {}", exchange.method, exchange.body);
        assert_eq!(exchange.body, Value::Null, "a {method} has no body");
        exchange
    }

    /// The next request, which must be a JSON-RPC message with `method`.
    pub async fn expect(&self, method: &str) -> Exchange {
        let exchange = self.next().await;
        assert_eq!(exchange.body["method"], method, "unexpected request {}", exchange.body);
        exchange
    }
}

impl Exchange {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }

    pub fn id(&self) -> Value {
        self.body["id"].clone()
    }

    /// Answers with `status`, extra headers and a body, then closes.
    pub async fn reply(mut self, status: u16, headers: &[(&str, &str)], body: &[u8]) {
        let mut head = format!("HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n", body.len());
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        self.stream.write_all(head.as_bytes()).await.unwrap();
        self.stream.write_all(body).await.unwrap();
        self.stream.shutdown().await.unwrap();
    }

    /// Answers 200 with a JSON body.
    pub async fn json(self, body: Value, headers: &[(&str, &str)]) {
        let mut all = vec![("content-type", "application/json")];
        all.extend_from_slice(headers);
        self.reply(200, &all, body.to_string().as_bytes()).await;
    }

    /// Answers `{"jsonrpc":"2.0","id":<this id>,"result":result}`.
    pub async fn result(self, result: Value, headers: &[(&str, &str)]) {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": self.id(), "result": result});
        self.json(body, headers).await;
    }

    /// Starts an SSE answer and hands back the open connection.
    pub async fn sse(mut self) -> TcpStream {
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
        self.stream.write_all(head.as_bytes()).await.unwrap();
        self.stream
    }
}

/// Writes one SSE event carrying `message`.
pub async fn event(stream: &mut TcpStream, message: &Value) {
    stream.write_all(format!("data: {message}\n\n").as_bytes()).await.unwrap();
}

/// Reads until the client closes `stream` (EOF), within `guard`; false if it did not.
pub async fn closed_by_client(stream: &mut TcpStream, guard: std::time::Duration) -> bool {
    let mut buf = [0u8; 256];
    let until_eof = async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(guard, until_eof).await.is_ok()
}
