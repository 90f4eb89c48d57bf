//! The egress proxy of a stdio server granted hosts.
//!
//! A server whose policy lists `network_hosts` runs in a network namespace of its own
//! with nothing but a loopback interface, where the gateway listens
//! ([`Network::Proxied`](wasmgate_confine::Network::Proxied)); its `HTTP_PROXY` and
//! `HTTPS_PROXY` point there. This module serves that listener from the gateway's side:
//!
//! * `CONNECT host:port` (HTTPS, or any TCP) and absolute-form `http://host:port/...`
//!   requests of any method (plain HTTP; sent on in origin form, one request per
//!   connection, with `Host` naming the target) are the two it understands; anything
//!   else is refused;
//! * the target must be one of the grants, host and port exactly (a host name compared
//!   without regard to case);
//! * the gateway resolves a granted name itself and connects to an address it checked:
//!   the server never resolves, so it cannot rebind, and a name that resolves to a
//!   loopback, private, link-local or otherwise non-public address is refused; such an
//!   address is reached only when the grant lists it literally;
//! * every connection, refused or not, is reported once it ends ([`EgressRecord`]: host,
//!   port, address, bytes each way, duration) for the audit log.
//!
//! Bounds: a request head of 16 KiB read within 10 s, a connect within 10 s, and 32
//! connections at once per server; the excess is refused.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

/// The port of the proxy inside a server's network namespace (the namespace is the
/// server's alone, so any port will do).
pub const PROXY_PORT: u16 = 3128;

const MAX_HEAD: usize = 16 * 1024;
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_CONNECTIONS: usize = 32;

/// One host a server may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostGrant {
    /// A DNS name, or an IP address (without brackets).
    pub host: String,
    /// The port.
    pub port: u16,
}

impl HostGrant {
    /// Parses `host:port` (`[v6]:port` for an IPv6 address).
    ///
    /// # Errors
    ///
    /// A message saying what is wrong: no port, port 0, an empty or malformed host.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (host, port) = split_authority(text).ok_or_else(|| format!("{text:?} is not host:port"))?;
        let port: u16 = port.parse().map_err(|_| format!("{text:?}: the port is not a number from 1 to 65535"))?;
        if port == 0 {
            return Err(format!("{text:?}: port 0"));
        }
        let valid_name = |h: &str| {
            !h.is_empty()
                && h.len() <= 253
                && h.split('.').all(|label| {
                    !label.is_empty()
                        && label.len() <= 63
                        && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                        && !label.starts_with('-')
                })
        };
        if host.parse::<IpAddr>().is_err() && !valid_name(host) {
            return Err(format!("{text:?}: {host:?} is neither a host name nor an IP address"));
        }
        Ok(Self { host: host.to_ascii_lowercase(), port })
    }

    fn matches(&self, host: &str, port: u16) -> bool {
        if self.port != port {
            return false;
        }
        match (self.host.parse::<IpAddr>(), host.parse::<IpAddr>()) {
            (Ok(granted), Ok(asked)) => granted == asked,
            (Err(_), Err(_)) => self.host.eq_ignore_ascii_case(host.trim_end_matches('.')),
            _ => false,
        }
    }
}

/// `host:port` or `[v6]:port`, split.
fn split_authority(text: &str) -> Option<(&str, &str)> {
    if let Some(rest) = text.strip_prefix('[') {
        let (host, port) = rest.split_once("]:")?;
        return Some((host, port));
    }
    let (host, port) = text.rsplit_once(':')?;
    (!host.contains(':')).then_some((host, port))
}

/// One connection a server asked the proxy for, as it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EgressRecord {
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

/// Serves `listener` (inside server `name`'s namespace) until the task is aborted.
pub(crate) fn serve(name: String, listener: std::net::TcpListener, grant: EgressGrant) -> Option<JoinHandle<()>> {
    listener.set_nonblocking(true).ok()?;
    let listener = TcpListener::from_std(listener).ok()?;
    let grant = Arc::new(grant);
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    Some(tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                // Out of descriptors, say: the server's connections wait.
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            };
            let (grant, name) = (grant.clone(), name.clone());
            let Ok(slot) = slots.clone().try_acquire_owned() else {
                tokio::spawn(refuse(stream, "too many connections at once".into(), grant));
                continue;
            };
            tokio::spawn(async move {
                let record = connection(stream, &grant).await;
                tracing::debug!(server = %name, host = %record.host, port = record.port, refused = ?record.refused, "egress");
                drop(slot);
                if let Some(observer) = &grant.observer {
                    observer(record);
                }
            });
        }
    }))
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
    Ok(Target { host: host.to_ascii_lowercase(), port, tunnel })
}

/// Whether `ip` is an address of the public internet: not loopback, private,
/// link-local, shared (CGNAT), documentation, multicast, unspecified or reserved.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 192 && b == 0)
                || (a == 198 && (18..20).contains(&b))
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || first == 0x2001 && v6.segments()[1] == 0x0db8
                || first == 0x0064 && v6.segments()[1] == 0xff9b)
        }
    }
}

/// The address to connect to for a granted `host:port`: a literal as listed, a name
/// resolved here to its first public address.
async fn resolve(host: &str, port: u16) -> Result<SocketAddr, String> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    let addresses = tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::lookup_host((host, port)))
        .await
        .map_err(|_| format!("resolving {host} timed out"))?
        .map_err(|e| format!("cannot resolve {host}: {e}"))?;
    let all: Vec<SocketAddr> = addresses.collect();
    all.iter().copied().find(|a| is_public(a.ip())).ok_or_else(|| {
        format!("{host} resolves only to addresses that are not public ({all:?}); list the address itself to grant it")
    })
}

/// Whether a WebAssembly tool granted `hosts` may connect to `address`: a literal
/// grant's own address, or a public address that a granted name resolves to now (the
/// guest resolved it itself; resolving again here means a rebinding answer gains it
/// nothing). The port must be the grant's.
pub async fn permits(hosts: &[HostGrant], address: SocketAddr) -> bool {
    let ip = address.ip().to_canonical();
    for grant in hosts.iter().filter(|g| g.port == address.port()) {
        match grant.host.parse::<IpAddr>() {
            Ok(granted) if granted.to_canonical() == ip => return true,
            Ok(_) => {}
            Err(_) if is_public(ip) => {
                let lookup =
                    tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::lookup_host((grant.host.as_str(), grant.port)));
                if let Ok(Ok(mut found)) = lookup.await
                    && found.any(|a| a.ip().to_canonical() == ip)
                {
                    return true;
                }
            }
            Err(_) => {}
        }
    }
    false
}

/// Handles one connection from the server, and says how it went.
async fn connection(mut stream: TcpStream, grant: &EgressGrant) -> EgressRecord {
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
        if !grant.hosts.iter().any(|g| g.matches(&target.host, target.port)) {
            return Err((403, format!("{}:{} is not a granted host", target.host, target.port)));
        }
        let address = resolve(&target.host, target.port).await.map_err(|reason| (403, reason))?;
        record.address = Some(address);
        let mut upstream = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await {
            Ok(Ok(upstream)) => upstream,
            Ok(Err(e)) => return Err((502, format!("connecting to {address}: {e}"))),
            Err(_) => return Err((502, format!("connecting to {address} timed out"))),
        };
        if target.tunnel {
            stream.write_all(&status(200, "")).await.map_err(|e| (0, e.to_string()))?;
        } else {
            let head = origin_form(&head, &target).map_err(|reason| (400, reason))?;
            upstream.write_all(&head).await.map_err(|e| (0, e.to_string()))?;
            record.bytes_up = head.len() as u64;
        }
        let (up, down) = tokio::io::copy_bidirectional(&mut stream, &mut upstream).await.unwrap_or((0, 0));
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
    let end = head.windows(4).position(|w| w == b"\r\n\r\n").ok_or("a request head without its end")? + 4;
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

/// Reads up to the end of the request head (an empty line), at most [`MAX_HEAD`] bytes.
/// What follows the head in the same reads (a body's start) is kept with it.
async fn read_head(stream: &mut TcpStream) -> Result<Vec<u8>, String> {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the connection closed before a request".into());
        }
        head.extend_from_slice(&chunk[..n]);
        if head.windows(4).any(|w| w == b"\r\n\r\n") {
            return Ok(head);
        }
        if head.len() > MAX_HEAD {
            return Err(format!("a request head over {MAX_HEAD} bytes"));
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn grants_parse_strictly() {
        assert_eq!(HostGrant::parse("Calendar.Example.com:443").unwrap().host, "calendar.example.com");
        assert_eq!(HostGrant::parse("[::1]:8080").unwrap(), HostGrant { host: "::1".into(), port: 8080 });
        assert_eq!(HostGrant::parse("127.0.0.1:5232").unwrap().port, 5232);
        for bad in
            ["example.com", "example.com:0", "example.com:70000", ":443", "a b:1", "-x.com:1", "::1:80", "a..b:1"]
        {
            assert!(HostGrant::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_grant_matches_its_host_and_port_only() {
        let grant = HostGrant::parse("calendar.example.com:443").unwrap();
        assert!(grant.matches("CALENDAR.example.com", 443) && grant.matches("calendar.example.com.", 443));
        assert!(!grant.matches("calendar.example.com", 80));
        assert!(!grant.matches("evil.calendar.example.com", 443) && !grant.matches("example.com", 443));
        let literal = HostGrant::parse("[::1]:80").unwrap();
        assert!(literal.matches("0:0:0:0:0:0:0:1", 80) && !literal.matches("127.0.0.1", 80));
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

    #[test]
    fn only_public_addresses_count_as_public() {
        for private in
            ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0"]
        {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for private in ["::1", "fe80::1", "fd00::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::"] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in ["93.184.216.34", "1.1.1.1", "2606:4700::1111"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[tokio::test]
    async fn a_component_may_connect_to_a_literal_grant_and_to_nothing_a_name_resolves_privately() {
        let hosts = [HostGrant::parse("127.0.0.1:5232").unwrap(), HostGrant::parse("localhost:8080").unwrap()];
        assert!(permits(&hosts, "127.0.0.1:5232".parse().unwrap()).await);
        assert!(permits(&hosts, "[::ffff:127.0.0.1]:5232".parse().unwrap()).await, "the same address, mapped");
        assert!(!permits(&hosts, "127.0.0.1:5233".parse().unwrap()).await, "another port");
        assert!(!permits(&hosts, "127.0.0.1:8080".parse().unwrap()).await, "localhost is granted by name only");
        assert!(!permits(&hosts, "10.0.0.1:5232".parse().unwrap()).await);
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_loopback_is_refused_and_a_literal_is_not() {
        assert!(resolve("localhost", 80).await.unwrap_err().contains("not public"));
        assert_eq!(resolve("127.0.0.1", 80).await.unwrap(), "127.0.0.1:80".parse().unwrap());
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
        let task = serve("t".into(), listener, grant).unwrap();

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
}
