//! The egress proxy of a stdio server granted hosts.
//!
//! A server whose policy lists `network_hosts` runs in a network namespace of its own
//! with nothing but a loopback interface, where the gateway listens
//! (`wasmgate-confine`'s `Network::Proxied`); its `HTTP_PROXY` and
//! `HTTPS_PROXY` point there. This module serves that listener from the gateway's side:
//!
//! * `CONNECT host:port` (HTTPS, or any TCP) and absolute-form `http://host:port/...`
//!   requests of any method (plain HTTP; sent on in origin form, one request per
//!   connection, with `Host` naming the target) are the two it understands; anything
//!   else is refused;
//! * the target must be one of the grants: its host and port exactly (a host name
//!   compared without regard to case), a name under a granted domain (`*.example.com`),
//!   or anything on a port granted to `*`;
//! * the gateway resolves a granted name itself and connects to an address it checked:
//!   the server never resolves, so it cannot rebind, and a name that resolves to a
//!   loopback, private, link-local or otherwise non-public address is refused; such an
//!   address is reached only when the grant lists it literally (a literal asked for under
//!   a wildcard grant must be public too; a literal grant wins over a wildcard);
//! * every connection, refused or not, is reported once it ends ([`EgressRecord`]: host,
//!   port, address, bytes each way, duration) for the audit log.
//!
//! Bounds: a request head of 16 KiB read within 10 s, a connect within 10 s, and 32
//! connections at once per server; the excess is refused.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use crate::address::is_public;
use crate::connect::resolve;
use crate::dns::Answered;
use crate::grant::{HostGrant, is_host_name, split_authority};

/// The port of the proxy inside a server's network namespace (the namespace is the
/// server's alone, so any port will do).
pub const PROXY_PORT: u16 = 3128;

const MAX_HEAD: usize = 16 * 1024;
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_CONNECTIONS: usize = 32;

/// How a provider reached out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EgressKind {
    /// A stdio server's connection through the egress proxy, reported when it ends.
    #[default]
    Proxied,
    /// A component's TCP connect, reported when it is decided.
    Connect,
    /// A component's name lookup (`host` the name, no port), reported when it is decided.
    Lookup,
    /// A stdio server's own connect to an address (no proxy), caught in its namespace,
    /// reported when it ends.
    Direct,
}

impl EgressKind {
    /// `proxied`, `connect`, `lookup` or `direct`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Proxied => "proxied",
            Self::Connect => "connect",
            Self::Lookup => "lookup",
            Self::Direct => "direct",
        }
    }
}

/// One connection (or lookup) a provider asked for: of a stdio server through the proxy,
/// as it ended; of a component, as it was decided.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EgressRecord {
    /// Which way it went out.
    pub kind: EgressKind,
    /// The host asked for (empty when the request could not be read).
    pub host: String,
    /// The port asked for.
    pub port: u16,
    /// The address connected to.
    pub address: Option<SocketAddr>,
    /// `None`: allowed and connected; `Some(reason)`: refused or failed.
    pub refused: Option<String>,
    /// Bytes from the server to the host.
    pub bytes_up: u64,
    /// Bytes from the host to the server.
    pub bytes_down: u64,
    /// From the request to the end of the connection.
    pub duration: Duration,
}

/// Where a server's connection records go (the gateway's audit log).
pub type EgressObserver = Arc<dyn Fn(EgressRecord) + Send + Sync>;

/// What a server granted hosts may reach, and who hears of each connection.
#[derive(Clone)]
pub struct EgressGrant {
    /// The hosts.
    pub hosts: Vec<HostGrant>,
    /// Told of every connection once it ends.
    pub observer: Option<EgressObserver>,
}

impl std::fmt::Debug for EgressGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EgressGrant").field("hosts", &self.hosts).finish_non_exhaustive()
    }
}

/// Serves the proxy's `listener`, the `transparent` ones and the name service's `dns`
/// socket (inside server `name`'s namespace; see [`crate::transparent`] and the `dns`
/// module) until the task is aborted; `None` when a socket cannot be handed to the
/// runtime. The bound on connections at once covers the proxy's and the direct ones.
#[must_use]
pub fn serve(
    name: String,
    listener: std::net::TcpListener,
    transparent: Vec<std::net::TcpListener>,
    dns: Option<std::net::UdpSocket>,
    grant: EgressGrant,
) -> Option<JoinHandle<()>> {
    let tokio_listener = |listener: std::net::TcpListener| {
        listener.set_nonblocking(true).ok()?;
        TcpListener::from_std(listener).ok()
    };
    let listener = tokio_listener(listener)?;
    let transparent: Vec<TcpListener> = transparent.into_iter().map(tokio_listener).collect::<Option<_>>()?;
    let dns = match dns {
        Some(socket) => {
            socket.set_nonblocking(true).ok()?;
            Some(tokio::net::UdpSocket::from_std(socket).ok()?)
        }
        None => None,
    };
    let grant = Arc::new(grant);
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let answered = Arc::new(Answered::default());
    // Dropped with the serve task, when the server is gone: its connections end then.
    let (alive, watching) = tokio::sync::watch::channel(());
    let accepting = |listener: TcpListener, direct: bool| {
        let (grant, slots, name, answered) = (grant.clone(), slots.clone(), name.clone(), answered.clone());
        accept_loop(listener, grant, slots, (name, answered, watching.clone()), direct)
    };
    let direct: Vec<_> = transparent.into_iter().map(|l| accepting(l, true)).collect();
    let proxy = accepting(listener, false);
    let names = dns.map(|socket| crate::dns::serve(socket, grant.clone(), answered.clone()));
    Some(tokio::spawn(async move {
        let mut others: Vec<_> = direct.into_iter().map(tokio::spawn).collect();
        others.extend(names.map(tokio::spawn));
        // Aborting this task ends the others with it, and its connections.
        let _ends = AbortOnDrop(others);
        let _alive = alive;
        proxy.await;
    }))
}

/// Aborts its tasks when dropped.
struct AbortOnDrop(Vec<JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// Accepts on `listener` for ever: each connection handled by the proxy, or (`direct`)
/// as a transparent one, and reported once it ends.
async fn accept_loop(
    listener: TcpListener,
    grant: Arc<EgressGrant>,
    slots: Arc<Semaphore>,
    (name, answered, alive): (String, Arc<Answered>, tokio::sync::watch::Receiver<()>),
    direct: bool,
) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors, say: the server's connections wait.
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let (grant, name, answered, mut alive) = (grant.clone(), name.clone(), answered.clone(), alive.clone());
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            match direct {
                true => tokio::spawn(crate::transparent::refuse(stream, grant)),
                false => tokio::spawn(refuse(stream, "too many connections at once".into(), grant)),
            };
            continue;
        };
        tokio::spawn(async move {
            let record = match direct {
                true => crate::transparent::connection(stream, &grant, &answered, &mut alive).await,
                false => connection(stream, &grant, &mut alive).await,
            };
            tracing::debug!(server = %name, host = %record.host, port = record.port, refused = ?record.refused, "egress");
            drop(slot);
            if let Some(observer) = &grant.observer {
                observer(record);
            }
        });
    }
}

async fn refuse(mut stream: TcpStream, reason: String, grant: Arc<EgressGrant>) {
    let _ = stream.write_all(&status(503, &reason)).await;
    if let Some(observer) = &grant.observer {
        observer(EgressRecord { refused: Some(reason), ..EgressRecord::default() });
    }
}

fn status(code: u16, reason: &str) -> Vec<u8> {
    let phrase = match code {
        200 => "Connection established",
        400 => "Bad Request",
        403 => "Forbidden",
        502 => "Bad Gateway",
        _ => "Service Unavailable",
    };
    let body = format!("wasmgate egress proxy: {reason}\n");
    let close = if code == 200 { "" } else { "Connection: close\r\n" };
    let length = if code == 200 { String::new() } else { format!("Content-Length: {}\r\n", body.len()) };
    let mut out = format!("HTTP/1.1 {code} {phrase}\r\n{close}{length}\r\n").into_bytes();
    if code != 200 {
        out.extend_from_slice(body.as_bytes());
    }
    out
}

/// A parsed request: where to, and whether it is a tunnel.
#[derive(Debug, PartialEq, Eq)]
struct Target {
    host: String,
    port: u16,
    tunnel: bool,
}

/// The target of a request head (its first line), or why it is refused.
fn target(head: &[u8]) -> Result<Target, String> {
    let line_end = head.iter().position(|&b| b == b'\r' || b == b'\n').unwrap_or(head.len());
    let line = std::str::from_utf8(&head[..line_end]).map_err(|_| "a request line that is not text".to_owned())?;
    let mut parts = line.split(' ');
    let (Some(method), Some(uri), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("a malformed request line".into());
    };
    if !version.starts_with("HTTP/1.") {
        return Err(format!("unsupported version {version:?}"));
    }
    let (authority, default_port, tunnel) = if method == "CONNECT" {
        (uri, None, true)
    } else if let Some(rest) = uri.strip_prefix("http://") {
        (rest.split(['/', '?', '#']).next().unwrap_or(""), Some(80), false)
    } else {
        return Err("only CONNECT and absolute http:// requests go through this proxy".into());
    };
    if authority.contains('@') {
        return Err("credentials in the target".into());
    }
    let (host, port) = match (split_authority(authority), default_port) {
        (Some((host, port)), _) => (host, port.parse::<u16>().map_err(|_| format!("bad port in {authority:?}"))?),
        (None, Some(port)) => (authority.trim_start_matches('[').trim_end_matches(']'), port),
        (None, None) => return Err(format!("{authority:?} is not host:port")),
    };
    if host.is_empty() {
        return Err("an empty host".into());
    }
    if host.parse::<std::net::IpAddr>().is_err() && !is_host_name(host.trim_end_matches('.')) {
        return Err(format!("{host:?} is not a host name"));
    }
    Ok(Target { host: host.to_ascii_lowercase(), port, tunnel })
}

/// Handles one connection from the server, and says how it went.
async fn connection(
    mut stream: TcpStream,
    grant: &EgressGrant,
    alive: &mut tokio::sync::watch::Receiver<()>,
) -> EgressRecord {
    let started = Instant::now();
    let mut record = EgressRecord::default();
    let outcome = async {
        let head = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut stream)).await {
            Ok(Ok(head)) => head,
            Ok(Err(reason)) => return Err((400, reason)),
            Err(_) => return Err((400, "no request within 10 s".to_owned())),
        };
        let target = target(&head).map_err(|reason| (400, reason))?;
        record.host.clone_from(&target.host);
        record.port = target.port;
        let matching = grant.hosts.iter().filter(|g| g.matches(&target.host, target.port));
        let Some(granted) = matching.min_by_key(|g| g.is_wildcard()) else {
            return Err((403, format!("{}:{} is not a granted host", target.host, target.port)));
        };
        let address = resolve(&target.host, target.port, granted.any_address).await.map_err(|reason| (403, reason))?;
        record.address = Some(address);
        if granted.is_wildcard() && !is_public(address.ip()) {
            let why = format!(
                "{} is not a public address, and `{granted}` reaches public addresses only; list the address itself \
                 to grant it",
                address.ip()
            );
            return Err((403, why));
        }
        let mut upstream = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await {
            Ok(Ok(upstream)) => upstream,
            Ok(Err(e)) => return Err((502, format!("connecting to {address}: {e}"))),
            Err(_) => return Err((502, format!("connecting to {address} timed out"))),
        };
        if target.tunnel {
            stream.write_all(&status(200, "")).await.map_err(|e| (0, e.to_string()))?;
            // A client may send its first bytes (a TLS ClientHello) in the same write as
            // the CONNECT head: they belong to the tunnel.
            let early = head_end(&head).map_or(&[][..], |end| &head[end..]);
            upstream.write_all(early).await.map_err(|e| (0, e.to_string()))?;
            record.bytes_up = early.len() as u64;
        } else {
            let head = origin_form(&head, &target).map_err(|reason| (400, reason))?;
            upstream.write_all(&head).await.map_err(|e| (0, e.to_string()))?;
            record.bytes_up = head.len() as u64;
        }
        let (up, down) = crate::splice::splice(&mut stream, &mut upstream, alive).await;
        record.bytes_up += up;
        record.bytes_down = down;
        Ok(())
    }
    .await;
    if let Err((code, reason)) = outcome {
        if code != 0 {
            let _ = stream.write_all(&status(code, &reason)).await;
        }
        record.refused = Some(reason);
    }
    record.duration = started.elapsed();
    record
}

/// The head of an absolute-form request (`METHOD http://host:port/path HTTP/1.1`), and
/// whatever body bytes came with it, as the origin server expects it: the request line
/// in origin form (`METHOD /path HTTP/1.1`, as an origin server must read it and most
/// only can), `Host` naming the target whatever the request said (RFC 9112 has a proxy
/// replace it: a server behind one address may serve other sites by name, and the
/// grant is for this one), the proxy's own headers dropped, and `Connection: close`. One request per connection: the next one, to whatever host,
/// comes on a new connection and is checked like this one, never carried unread down a
/// connection opened for another.
fn origin_form(head: &[u8], target: &Target) -> Result<Vec<u8>, String> {
    let end = head_end(head).ok_or("a request head without its end")?;
    let text = std::str::from_utf8(&head[..end - 4]).map_err(|_| "a request head that is not text".to_owned())?;
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (Some(method), Some(uri), Some(version)) = (parts.next(), parts.next(), parts.next()) else {
        return Err("a malformed request line".into());
    };
    let rest = uri.strip_prefix("http://").ok_or("not an absolute http:// request")?;
    let path = match rest.find(['/', '?']) {
        Some(at) if rest[at..].starts_with('/') => rest[at..].to_owned(),
        Some(at) => format!("/{}", &rest[at..]),
        None => "/".to_owned(),
    };
    let path = path.split('#').next().unwrap_or("/");
    let mut out = format!("{method} {path} {version}\r\n");
    let name = if target.host.contains(':') { format!("[{}]", target.host) } else { target.host.clone() };
    out.push_str(&format!("Host: {name}:{}\r\n", target.port));
    for line in lines {
        let name = line.split(':').next().unwrap_or_default().trim().to_ascii_lowercase();
        if !matches!(name.as_str(), "host" | "connection" | "proxy-connection" | "proxy-authorization" | "keep-alive") {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str("Connection: close\r\n\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&head[end..]);
    Ok(bytes)
}

/// Reads up to the end of the request head (an empty line): the head, at most
/// [`MAX_HEAD`] bytes whichever reads it came in, and what followed it in the same reads
/// (a body's start, or a tunnel's first bytes).
async fn read_head(stream: &mut TcpStream) -> Result<Vec<u8>, String> {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the connection closed before a request".into());
        }
        // The empty line can only end in what this read added: look there (and in the
        // three bytes before it), not again through the whole head, so a client
        // dripping its head a byte at a time costs time linear in its length.
        let from = head.len().saturating_sub(3);
        head.extend_from_slice(&chunk[..n]);
        match head_end_from(&head, from) {
            Some(end) if end <= MAX_HEAD => return Ok(head),
            Some(_) => return Err(format!("a request head over {MAX_HEAD} bytes")),
            None if head.len() >= MAX_HEAD => return Err(format!("a request head over {MAX_HEAD} bytes")),
            None => {}
        }
    }
}

/// Where the head of `bytes` ends (just past its empty line), if it does.
fn head_end(bytes: &[u8]) -> Option<usize> {
    head_end_from(bytes, 0)
}

/// [`head_end`], for `bytes` whose first `from` bytes end no empty line.
fn head_end_from(bytes: &[u8], from: usize) -> Option<usize> {
    let rest = bytes.get(from..)?;
    rest.windows(4).position(|w| w == b"\r\n\r\n").map(|at| from + at + 4)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_head_read_in_pieces_ends_where_it_ends_read_whole() {
        let head = b"CONNECT a.com:443 HTTP/1.1\r\nHost: a.com\r\n\r\nfirst bytes";
        let whole = head_end(head);
        assert_eq!(whole, Some(head.len() - b"first bytes".len()));
        for piece in 1..=5 {
            // As `read_head` looks: from three bytes before each new piece.
            let (mut read, mut found) = (0, None);
            while found.is_none() && read < head.len() {
                let from = read.saturating_sub(3);
                read = (read + piece).min(head.len());
                found = head_end_from(&head[..read], from);
            }
            assert_eq!(found, whole, "read {piece} bytes at a time");
        }
        assert_eq!(head_end_from(b"ab", 5), None);
    }

    #[test]
    fn request_targets_are_read_from_connect_and_absolute_form_only() {
        let t = |line: &str| target(format!("{line}\r\nHost: x\r\n\r\n").as_bytes());
        assert_eq!(t("CONNECT a.com:443 HTTP/1.1").unwrap(), Target { host: "a.com".into(), port: 443, tunnel: true });
        assert_eq!(
            t("GET http://a.com/x?y HTTP/1.1").unwrap(),
            Target { host: "a.com".into(), port: 80, tunnel: false }
        );
        assert_eq!(t("GET http://127.0.0.1:5232/ HTTP/1.1").unwrap().port, 5232);
        assert_eq!(t("CONNECT [::1]:443 HTTP/1.1").unwrap().host, "::1");
        for bad in [
            "GET /relative HTTP/1.1",
            "GET https://a.com/ HTTP/1.1",
            "CONNECT a.com HTTP/1.1",
            "GET http://user@a.com/ HTTP/1.1",
            "CONNECT a.com:443 HTTP/2",
            "CONNECT a.com:443  HTTP/1.1",
            "GET http://a.com:99999/ HTTP/1.1",
            "CONNECT evil\\.a.com:443 HTTP/1.1",
            "CONNECT a_b.com:443 HTTP/1.1",
        ] {
            assert!(t(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_plain_http_request_reaches_its_origin_in_origin_form_for_one_request() {
        let head = b"PROPFIND http://127.0.0.1:5232/alice/cal/?x=1#f HTTP/1.1\r\nHost: other.example\r\n\
                     Proxy-Connection: keep-alive\r\nConnection: keep-alive\r\nDepth: 1\r\n\r\n<body/>";
        let target = target(head).unwrap();
        let sent = String::from_utf8(origin_form(head, &target).unwrap()).unwrap();
        assert_eq!(
            sent,
            "PROPFIND /alice/cal/?x=1 HTTP/1.1\r\nHost: 127.0.0.1:5232\r\nDepth: 1\r\nConnection: close\r\n\r\n<body/>",
            "origin form, Host naming the target whatever the request said, one request per connection"
        );
        let bare = b"GET http://a.com HTTP/1.1\r\n\r\n";
        let sent = String::from_utf8(origin_form(bare, &target_of(bare)).unwrap()).unwrap();
        assert_eq!(sent, "GET / HTTP/1.1\r\nHost: a.com:80\r\nConnection: close\r\n\r\n", "the target's Host");
        let query = b"GET http://a.com?q HTTP/1.1\r\n\r\n";
        assert!(String::from_utf8(origin_form(query, &target_of(query)).unwrap()).unwrap().starts_with("GET /?q "));
        assert!(origin_form(b"GET http://a.com/ HTTP/1.1\r\n\xff\r\n\r\n", &target_of(bare)).is_err());
    }

    fn target_of(head: &[u8]) -> Target {
        target(head).unwrap()
    }

    /// The proxy end to end on this host's loopback: a granted tunnel carries bytes both
    /// ways and is reported; an ungranted target and a malformed request are refused.
    #[tokio::test]
    async fn the_proxy_tunnels_to_a_granted_host_and_refuses_the_rest() {
        let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let up_port = upstream.local_addr().unwrap().port();
        let echo = tokio::spawn(async move {
            let (mut s, _) = upstream.accept().await.unwrap();
            let mut buf = [0u8; 5];
            s.read_exact(&mut buf).await.unwrap();
            s.write_all(b"pong!").await.unwrap();
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let proxy = listener.local_addr().unwrap();
        let (sender, mut records) = tokio::sync::mpsc::unbounded_channel();
        let observer: EgressObserver = Arc::new(move |r| {
            let _ = sender.send(r);
        });
        let grant = EgressGrant {
            hosts: vec![HostGrant::parse(&format!("127.0.0.1:{up_port}")).unwrap()],
            observer: Some(observer),
        };
        let task = serve("t".into(), listener, Vec::new(), None, grant).unwrap();

        let mut s = TcpStream::connect(proxy).await.unwrap();
        s.write_all(format!("CONNECT 127.0.0.1:{up_port} HTTP/1.1\r\n\r\n").as_bytes()).await.unwrap();
        let mut reply = vec![0u8; status(200, "").len()];
        s.read_exact(&mut reply).await.unwrap();
        assert!(reply.starts_with(b"HTTP/1.1 200"));
        s.write_all(b"ping!").await.unwrap();
        let mut pong = [0u8; 5];
        s.read_exact(&mut pong).await.unwrap();
        assert_eq!(&pong, b"pong!");
        drop(s);
        echo.await.unwrap();
        let record = records.recv().await.unwrap();
        assert_eq!((record.port, record.bytes_up, record.bytes_down, record.refused), (up_port, 5, 5, None));

        for (request, code) in [
            (format!("CONNECT 127.0.0.1:{} HTTP/1.1\r\n\r\n", up_port.wrapping_add(1)), "403"),
            (format!("CONNECT localhost:{up_port} HTTP/1.1\r\n\r\n"), "403"),
            ("HELLO\r\n\r\n".to_owned(), "400"),
        ] {
            let mut s = TcpStream::connect(proxy).await.unwrap();
            s.write_all(request.as_bytes()).await.unwrap();
            let mut answer = String::new();
            s.read_to_string(&mut answer).await.unwrap();
            assert!(answer.starts_with(&format!("HTTP/1.1 {code}")), "{request:?}: {answer}");
            assert!(records.recv().await.unwrap().refused.is_some());
        }
        task.abort();
    }

    /// Asks the proxy at `proxy` for `request`; the status line's code, and the body.
    async fn ask(proxy: SocketAddr, request: &str) -> (String, String) {
        let mut s = TcpStream::connect(proxy).await.unwrap();
        s.write_all(request.as_bytes()).await.unwrap();
        let mut status = vec![0u8; 12];
        s.read_exact(&mut status).await.unwrap();
        if status.ends_with(b"200") {
            let mut established = vec![0u8; super::status(200, "").len() - status.len()];
            s.read_exact(&mut established).await.unwrap();
            s.write_all(b"ping!").await.unwrap();
        }
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).await.unwrap();
        (String::from_utf8_lossy(&status[9..]).into_owned(), String::from_utf8_lossy(&rest).into_owned())
    }

    /// Wildcard grants on this host's loopback, with 127.0.0.2 counted as public and test
    /// names resolved without a resolver: a name under the domain reaches its public
    /// address, nothing else under a wildcard does, and a literal grant still wins.
    #[tokio::test]
    async fn a_wildcard_grant_reaches_public_addresses_only_and_a_literal_grant_wins() {
        let public: std::net::IpAddr = "127.0.0.2".parse().unwrap();
        crate::address::test::count_as_public(public);
        let upstream = tokio::net::TcpListener::bind((public, 0)).await.unwrap();
        let port = upstream.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = upstream.accept().await {
                let mut buf = [0u8; 5];
                if s.read_exact(&mut buf).await.is_ok() {
                    let _ = s.write_all(b"pong!").await;
                }
            }
        });
        crate::connect::test::resolve_as("api.example.test", public);
        crate::connect::test::resolve_as("intranet.example.test", "127.0.0.1".parse().unwrap());
        let proxy_with = |hosts: &[String]| {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let address = listener.local_addr().unwrap();
            let hosts = hosts.iter().map(|h| HostGrant::parse(h).unwrap()).collect();
            (address, serve("t".into(), listener, Vec::new(), None, EgressGrant { hosts, observer: None }).unwrap())
        };
        let connect = |host: &str| format!("CONNECT {host}:{port} HTTP/1.1\r\n\r\n");

        let (under, task) = proxy_with(&[format!("*.example.test:{port}")]);
        assert_eq!(ask(under, &connect("api.example.test")).await, ("200".into(), "pong!".into()));
        for (host, why) in [
            ("intranet.example.test", "not public"),
            ("example.test", "not a granted host"),
            ("127.0.0.2", "not a granted host"),
            ("api.example.org", "not a granted host"),
        ] {
            let (code, body) = ask(under, &connect(host)).await;
            assert!(code == "403" && body.contains(why), "{host}: {code} {body}");
        }
        task.abort();

        let (any, task) = proxy_with(&[format!("*:{port}"), format!("127.0.0.3:{port}")]);
        assert_eq!(ask(any, &connect("127.0.0.2")).await, ("200".into(), "pong!".into()));
        assert_eq!(ask(any, &connect("api.example.test")).await.0, "200");
        let (code, body) = ask(any, &connect("127.0.0.1")).await;
        assert!(code == "403" && body.contains("127.0.0.1 is not a public address"), "{code} {body}");
        assert!(body.contains(&format!("`*:{port}` reaches public addresses only")), "{body}");
        let (code, body) = ask(any, &connect("intranet.example.test")).await;
        assert!(code == "403" && body.contains("not public"), "{code} {body}");
        let (code, _) = ask(any, &format!("CONNECT 127.0.0.2:{} HTTP/1.1\r\n\r\n", port.wrapping_add(1))).await;
        assert_eq!(code, "403", "its port only");
        // Listed literally, a loopback address is reached (nothing listens there: 502).
        let (code, body) = ask(any, &connect("127.0.0.3")).await;
        assert!(code == "502" && body.contains("connecting to 127.0.0.3"), "{code} {body}");
        task.abort();
    }

    /// A proxy on loopback granting `port` on 127.0.0.1, and the records it reports.
    fn proxy_for(port: u16) -> (SocketAddr, JoinHandle<()>, tokio::sync::mpsc::UnboundedReceiver<EgressRecord>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let (sender, records) = tokio::sync::mpsc::unbounded_channel();
        let observer: EgressObserver = Arc::new(move |r| {
            let _ = sender.send(r);
        });
        let hosts = vec![HostGrant::parse(&format!("127.0.0.1:{port}")).unwrap()];
        (
            address,
            serve("t".into(), listener, Vec::new(), None, EgressGrant { hosts, observer: Some(observer) }).unwrap(),
            records,
        )
    }

    #[tokio::test]
    async fn bytes_sent_with_the_connect_head_go_down_the_tunnel() {
        let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let up_port = upstream.local_addr().unwrap().port();
        let received = tokio::spawn(async move {
            let (mut s, _) = upstream.accept().await.unwrap();
            let mut first = [0u8; 11];
            s.read_exact(&mut first).await.unwrap();
            first
        });
        let (proxy, task, mut records) = proxy_for(up_port);
        let mut s = TcpStream::connect(proxy).await.unwrap();
        // One write: the head and a client's first bytes, as a TLS client sends them.
        s.write_all(format!("CONNECT 127.0.0.1:{up_port} HTTP/1.1\r\n\r\nclienthello").as_bytes()).await.unwrap();
        let mut reply = vec![0u8; status(200, "").len()];
        s.read_exact(&mut reply).await.unwrap();
        assert!(reply.starts_with(b"HTTP/1.1 200"));
        assert_eq!(&received.await.unwrap(), b"clienthello");
        drop(s);
        let record = records.recv().await.unwrap();
        assert_eq!((record.bytes_up, record.refused), (11, None), "the early bytes are counted up");
        task.abort();
    }

    #[tokio::test]
    async fn a_head_over_the_bound_is_refused_however_its_reads_fall() {
        let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let up_port = upstream.local_addr().unwrap().port();
        let (proxy, task, mut records) = proxy_for(up_port);
        // 20 KB: past the bound, but it ends within the read that crosses it.
        let padding = "a".repeat(MAX_HEAD + 3_000);
        let head = format!("GET http://127.0.0.1:{up_port}/ HTTP/1.1\r\nX-Pad: {padding}\r\n\r\n");
        let mut s = TcpStream::connect(proxy).await.unwrap();
        // The proxy answers 400 and closes with the rest unread, so the answer may be
        // lost to a reset: the record says what it decided.
        let _ = s.write_all(head.as_bytes()).await;
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer).await;
        assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 400"), "{answer}");
        let record = records.recv().await.unwrap();
        assert_eq!(record.refused.as_deref(), Some("a request head over 16384 bytes"), "{record:?}");
        assert_eq!(record.address, None, "nothing was connected");
        // A head just within the bound still passes.
        let within = "a".repeat(MAX_HEAD - 200);
        let head = format!("GET http://127.0.0.1:{up_port}/ HTTP/1.1\r\nX-Pad: {within}\r\n\r\n");
        let served = tokio::spawn(async move {
            let (mut s, _) = upstream.accept().await.unwrap();
            let mut request = Vec::new();
            let mut chunk = [0u8; 4096];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = s.read(&mut chunk).await.unwrap();
                assert!(n > 0);
                request.extend_from_slice(&chunk[..n]);
            }
            s.write_all(b"HTTP/1.1 204 No Content\r\n\r\n").await.unwrap();
        });
        let mut s = TcpStream::connect(proxy).await.unwrap();
        s.write_all(head.as_bytes()).await.unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 204"), "{answer}");
        served.await.unwrap();
        task.abort();
    }
}
