//! HTTP servers on loopback for tests: [`Loopback`] answers every request (on every
//! connection, kept alive) with a handler, on the tokio runtime; [`answer_once`] answers
//! one request with fixed bytes, on a thread of its own, and returns what was asked.

use std::io::{Read as _, Write as _};
use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// The longest request head read.
const MAX_HEAD: usize = 64 * 1024;

/// One request a [`Loopback`] server received.
#[derive(Debug, Clone)]
pub struct Request {
    /// The request line and the headers, as sent.
    pub head: String,
    /// The body (`Content-Length` bytes).
    pub body: Vec<u8>,
}

impl Request {
    /// The body as JSON (`Null` when it is not).
    #[must_use]
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// What a [`Loopback`] server answers.
#[derive(Debug, Clone)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The `Content-Type`.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
    /// More headers (name, value).
    pub headers: Vec<(String, String)>,
}

impl Response {
    /// `200 OK` with `value` as its JSON body.
    #[must_use]
    pub fn json(value: &Value) -> Self {
        Self {
            status: 200,
            content_type: "application/json",
            body: value.to_string().into_bytes(),
            headers: Vec::new(),
        }
    }

    /// `status` with `value` as its JSON body.
    #[must_use]
    pub fn json_status(status: u16, value: &Value) -> Self {
        Self { status, ..Self::json(value) }
    }

    /// `200 OK` with an HTML page.
    #[must_use]
    pub fn html(page: String) -> Self {
        Self { status: 200, content_type: "text/html; charset=utf-8", body: page.into_bytes(), headers: Vec::new() }
    }

    /// `302 Found` to `location`.
    #[must_use]
    pub fn redirect(location: String) -> Self {
        Self { status: 302, content_type: "text/plain", body: Vec::new(), headers: vec![("location".into(), location)] }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut head = format!("HTTP/1.1 {} X\r\ncontent-type: {}\r\n", self.status, self.content_type);
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        let mut out = format!("{head}content-length: {}\r\n\r\n", self.body.len()).into_bytes();
        out.extend_from_slice(&self.body);
        out
    }
}

/// An HTTP/1.1 server on `127.0.0.1`, answering every request with its handler until it
/// is dropped.
pub struct Loopback {
    /// Where it listens.
    pub addr: SocketAddr,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for Loopback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loopback").finish_non_exhaustive()
    }
}

impl Loopback {
    /// Listens on a free port of `127.0.0.1` and answers each request with `answer`.
    pub async fn start(answer: impl Fn(Request) -> Response + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let answer = Arc::new(answer);
        let task = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let answer = Arc::clone(&answer);
                tokio::spawn(async move {
                    while let Some(request) = read_request(&mut stream).await {
                        if stream.write_all(&answer(request).bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Self { addr, task }
    }

    /// The URL of `path` on it.
    #[must_use]
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One request from `stream`, or `None` when it closed first.
async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<Request> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.ok()? != 1 || head.len() > MAX_HEAD {
            return None;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let length = content_length(&head);
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).await.ok()?;
    Some(Request { head, body })
}

fn content_length(head: &str) -> usize {
    head.lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.trim().eq_ignore_ascii_case("content-length").then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0)
}

/// Answers one request on `listener` with `response` (raw bytes, status line and all), on
/// a thread of its own; the thread returns the request's head.
pub fn answer_once(listener: std::net::TcpListener, response: &'static [u8]) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
            head.push(byte[0]);
        }
        stream.write_all(response).unwrap();
        String::from_utf8_lossy(&head).into_owned()
    })
}
