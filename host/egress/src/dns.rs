//! The name service of a stdio server granted hosts: in its network namespace, a DNS
//! query to any address arrives at a UDP socket the gateway holds (`wasmgate-confine`'s
//! `Network::Proxied`, `dns`), whatever name server the server is configured with.
//!
//! A name is answered only when a grant names it (`db.example.com:5432`, a name under
//! `*.example.com`, any name under `*`): the gateway resolves it itself and answers its
//! public IPv4 addresses, and remembers which name each address was answered for, so
//! that a direct connect to that address on a port granted to the name is admitted
//! ([`Answered`]; the connection goes to the address the gateway checked, so a
//! rebinding answer gains nothing). Any other name is refused (`REFUSED`), a name that
//! resolves to no public address too, and a query for another type of record than `A`
//! gets no record (a name is reached at its IPv4 addresses). Every query is reported
//! ([`EgressKind::Lookup`]).
//!
//! Bounds: a query of at most 1,232 bytes (the DNS flag day's), one question, 32 queries
//! at once, a lookup not yet returned by the C library included (more are dropped, as a
//! loaded name server's are), an answer within 10 s.

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use hickory_proto::op::{Message, MessageType, OpCode, ResponseCode};
use hickory_proto::rr::{RData, Record, RecordType, rdata::A};
use tokio::net::UdpSocket;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::address::is_public;
use crate::connect::RESOLVE_TIMEOUT;
use crate::grant::{Granted, HostGrant, is_host_name};
use crate::proxy::{EgressGrant, EgressKind, EgressRecord};

/// The largest query read.
const MAX_QUERY: usize = 1232;
/// Queries answered at once.
const MAX_QUERIES: usize = 32;
/// How long an answered address admits a direct connect, and the TTL it is answered with.
const ANSWER_LIFE: Duration = Duration::from_secs(600);
const TTL: u32 = 60;
/// Answered addresses remembered per server.
const MAX_ANSWERED: usize = 1024;

/// The addresses the name service answered, with the name each was answered for.
#[derive(Debug, Default)]
pub(crate) struct Answered {
    entries: Mutex<VecDeque<(IpAddr, String, Instant)>>,
}

impl Answered {
    pub(crate) fn remember(&self, ip: IpAddr, name: &str) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.retain(|(kept, kept_name, _)| !(*kept == ip && kept_name == name));
        if entries.len() >= MAX_ANSWERED {
            entries.pop_front();
        }
        entries.push_back((ip, name.to_owned(), Instant::now()));
    }

    /// The names `ip` was answered for, not long ago.
    pub(crate) fn names_of(&self, ip: IpAddr) -> Vec<String> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let fresh = |at: &Instant| at.elapsed() < ANSWER_LIFE;
        entries.iter().filter(|(kept, _, at)| *kept == ip && fresh(at)).map(|(_, name, _)| name.clone()).collect()
    }
}

/// Whether `grant` names `name` (lower case, without a trailing dot), on any port.
pub(crate) fn grants_name(grant: &HostGrant, name: &str) -> bool {
    match grant.granted() {
        Granted::Name(granted) => granted == name,
        Granted::Under(domain) => name.strip_suffix(domain).is_some_and(|head| head.len() > 1 && head.ends_with('.')),
        Granted::Any => true,
        Granted::Address(_) => false,
    }
}

/// Answers the queries arriving at `socket` until the task is aborted.
pub(crate) async fn serve(socket: UdpSocket, grant: Arc<EgressGrant>, answered: Arc<Answered>) {
    serve_with(socket, grant, answered, MAX_QUERIES).await;
}

/// [`serve`] with `at_once` queries answered at once: past that, a query is dropped.
async fn serve_with(socket: UdpSocket, grant: Arc<EgressGrant>, answered: Arc<Answered>, at_once: usize) {
    let socket = Arc::new(socket);
    let slots = Arc::new(Semaphore::new(at_once));
    let mut buffer = vec![0u8; MAX_QUERY];
    loop {
        let Ok((read, peer)) = socket.recv_from(&mut buffer).await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else { continue };
        let query = buffer[..read].to_vec();
        let (socket, grant, answered) = (socket.clone(), grant.clone(), answered.clone());
        tokio::spawn(async move {
            let started = Instant::now();
            let (reply, record) = answer(&query, &grant.hosts, &answered, slot).await;
            if let Some(reply) = reply {
                let _ = socket.send_to(&reply, peer).await;
            }
            if let (Some(mut record), Some(observer)) = (record, &grant.observer) {
                record.duration = started.elapsed();
                observer(record);
            }
        });
    }
}

/// The reply to `query` (none to what is not a DNS query at all), and the record of it.
/// `slot` is held until the lookup is over, whenever the answer goes: a lookup the
/// resolver has not finished still counts against the queries at once.
pub(crate) async fn answer(
    query: &[u8],
    hosts: &[HostGrant],
    answered: &Answered,
    slot: OwnedSemaphorePermit,
) -> (Option<Vec<u8>>, Option<EgressRecord>) {
    let Ok(query) = Message::from_vec(query) else {
        // Nothing to answer by: not even a readable header.
        return (None, None);
    };
    let mut reply = Message::response(query.metadata.id, query.metadata.op_code);
    reply.metadata.recursion_desired = query.metadata.recursion_desired;
    reply.metadata.recursion_available = true;
    let question = match (query.metadata.message_type, query.metadata.op_code, query.queries.as_slice()) {
        (MessageType::Query, OpCode::Query, [question]) => question.clone(),
        _ => {
            reply.metadata.response_code = ResponseCode::FormErr;
            return (reply.to_vec().ok(), None);
        }
    };
    reply.add_query(question.clone());
    let name = question.name().to_ascii().trim_end_matches('.').to_ascii_lowercase();
    let mut record = EgressRecord { kind: EgressKind::Lookup, host: name.clone(), ..EgressRecord::default() };
    // A label with a dot or anything else a host name has not (hickory writes it
    // escaped) would be looked up as another name than the one judged.
    if !is_host_name(&name) || !hosts.iter().any(|grant| grants_name(grant, &name)) {
        record.refused = Some(format!("{name} is not a granted name"));
        reply.metadata.response_code = ResponseCode::Refused;
        return (reply.to_vec().ok(), Some(record));
    }
    if question.query_type() != RecordType::A {
        // Granted, but only IPv4 addresses are reached: no record of another type.
        return (reply.to_vec().ok(), None);
    }
    match resolve(&name, slot).await {
        Ok(addresses) => {
            record.address = addresses.first().map(|ip| SocketAddr::new(IpAddr::V4(*ip), 0));
            for ip in addresses {
                answered.remember(IpAddr::V4(ip), &name);
                reply.add_answer(Record::from_rdata(question.name().clone(), TTL, RData::A(A(ip))));
            }
        }
        Err(why) => {
            record.refused = Some(why);
            reply.metadata.response_code = ResponseCode::Refused;
        }
    }
    (reply.to_vec().ok(), Some(record))
}

/// The public IPv4 addresses of `name`, as this gateway resolves it, on a thread of the
/// blocking pool that holds `slot` until the C library's lookup returns.
async fn resolve(name: &str, slot: OwnedSemaphorePermit) -> Result<Vec<std::net::Ipv4Addr>, String> {
    #[cfg(test)]
    if let Some(ip) = crate::connect::test::resolved(name) {
        return match ip {
            IpAddr::V4(v4) if is_public(ip) => Ok(vec![v4]),
            _ => Err(format!("{name} resolves to no public IPv4 address")),
        };
    }
    let host = (name.to_owned(), 0u16);
    let lookup = tokio::task::spawn_blocking(move || {
        let _slot = slot;
        std::net::ToSocketAddrs::to_socket_addrs(&host).map(Iterator::collect::<Vec<_>>)
    });
    let found = tokio::time::timeout(RESOLVE_TIMEOUT, lookup)
        .await
        .map_err(|_| format!("resolving {name} timed out"))?
        .map_err(|_| format!("resolving {name} failed"))?
        .map_err(|e| format!("cannot resolve {name}: {e}"))?;
    let public: Vec<std::net::Ipv4Addr> = found
        .into_iter()
        .filter_map(|address| match address.ip() {
            IpAddr::V4(v4) if is_public(address.ip()) => Some(v4),
            _ => None,
        })
        .collect();
    if public.is_empty() {
        return Err(format!("{name} resolves to no public IPv4 address"));
    }
    Ok(public)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use hickory_proto::op::Query;

    use super::*;

    fn query(name: &str, kind: RecordType) -> Vec<u8> {
        let mut message = Message::query();
        message.metadata.id = 7;
        message.metadata.recursion_desired = true;
        message.add_query(Query::query(name.parse().unwrap(), kind));
        message.to_vec().unwrap()
    }

    fn permit() -> OwnedSemaphorePermit {
        Arc::new(Semaphore::new(1)).try_acquire_owned().unwrap()
    }

    fn hosts(hosts: &[&str]) -> Vec<HostGrant> {
        hosts.iter().map(|h| HostGrant::parse(h).unwrap()).collect()
    }

    #[tokio::test]
    async fn a_granted_name_is_answered_with_its_public_addresses_and_any_other_is_refused() {
        let public: IpAddr = "127.0.0.2".parse().unwrap();
        crate::address::test::count_as_public(public);
        crate::connect::test::resolve_as("db.example.test", public);
        crate::connect::test::resolve_as("api.example.org", public);
        crate::connect::test::resolve_as("intranet.example.test", "10.0.0.1".parse().unwrap());
        let grants = hosts(&["db.example.test:5432", "intranet.example.test:80", "*.example.org:443"]);
        let answered = Answered::default();
        let ask = |name: &str, kind| {
            let query = query(name, kind);
            let (grants, answered) = (&grants, &answered);
            async move {
                let (reply, record) = answer(&query, grants, answered, permit()).await;
                (Message::from_vec(&reply.unwrap()).unwrap(), record)
            }
        };

        let (reply, record) = ask("DB.example.test.", RecordType::A).await;
        assert_eq!((reply.metadata.id, reply.metadata.response_code), (7, ResponseCode::NoError));
        assert!(reply.metadata.recursion_available && reply.metadata.message_type == MessageType::Response);
        assert_eq!(reply.answers.len(), 1);
        assert_eq!(reply.answers[0].data, RData::A(A::new(127, 0, 0, 2)));
        let record = record.unwrap();
        assert_eq!((record.kind, record.host.as_str(), record.refused), (EgressKind::Lookup, "db.example.test", None));
        assert_eq!(answered.names_of(public), ["db.example.test"]);
        let (under, _) = ask("api.example.org", RecordType::A).await;
        assert_eq!(under.answers.len(), 1, "a name under a granted domain");

        for (name, why) in [
            ("exfil.attacker.test", "exfil.attacker.test is not a granted name"),
            ("evil\\.example.org", "is not a granted name"),
            ("example.org", "example.org is not a granted name"),
            ("intranet.example.test", "resolves to no public IPv4 address"),
        ] {
            let (reply, record) = ask(name, RecordType::A).await;
            assert_eq!((reply.metadata.response_code, reply.answers.len()), (ResponseCode::Refused, 0), "{name}");
            assert!(record.unwrap().refused.unwrap().contains(why), "{name}");
        }
        // Granted, but a name is reached at its IPv4 addresses: no record, nothing to report.
        let (reply, record) = ask("db.example.test", RecordType::AAAA).await;
        assert_eq!((reply.metadata.response_code, reply.answers.len(), record), (ResponseCode::NoError, 0, None));
    }

    #[tokio::test]
    async fn what_is_not_one_plain_query_gets_no_answer_or_a_format_error() {
        let (grants, answered) = (hosts(&["*:443"]), Answered::default());
        assert_eq!(answer(b"\x00\x07", &grants, &answered, permit()).await, (None, None), "no header to answer by");
        let mut two = Message::query();
        two.add_query(Query::query("a.example.".parse().unwrap(), RecordType::A));
        two.add_query(Query::query("b.example.".parse().unwrap(), RecordType::A));
        let (reply, record) = answer(&two.to_vec().unwrap(), &grants, &answered, permit()).await;
        let reply = Message::from_vec(&reply.unwrap()).unwrap();
        assert_eq!((reply.metadata.response_code, record), (ResponseCode::FormErr, None));
    }

    #[tokio::test]
    async fn a_query_past_the_bound_on_queries_at_once_is_dropped() {
        let grant = Arc::new(EgressGrant { hosts: hosts(&["db.example.test:5432"]), observer: None });
        let ask = |at_once: usize| {
            let grant = grant.clone();
            async move {
                let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
                let address = socket.local_addr().unwrap();
                let server = tokio::spawn(serve_with(socket, grant, Arc::default(), at_once));
                let client = UdpSocket::bind("127.0.0.1:0").await.unwrap();
                client.send_to(&query("other.example.test", RecordType::A), address).await.unwrap();
                let mut reply = [0u8; 512];
                let answered = tokio::time::timeout(Duration::from_millis(300), client.recv(&mut reply)).await;
                server.abort();
                answered.ok().and_then(Result::ok).map(|n| Message::from_vec(&reply[..n]).unwrap())
            }
        };
        let answered = ask(1).await.unwrap();
        assert_eq!(answered.metadata.response_code, ResponseCode::Refused);
        assert!(ask(0).await.is_none(), "no slot free: dropped, as a loaded name server drops it");
    }

    #[test]
    fn the_answered_addresses_are_bounded_and_the_newest_kept() {
        let answered = Answered::default();
        for i in 0..(MAX_ANSWERED as u32 + 10) {
            answered.remember(IpAddr::V4(std::net::Ipv4Addr::from(i)), "n.example");
        }
        assert_eq!(answered.entries.lock().unwrap().len(), MAX_ANSWERED);
        assert!(answered.names_of(IpAddr::V4(std::net::Ipv4Addr::from(0))).is_empty(), "the oldest are gone");
        assert_eq!(answered.names_of(IpAddr::V4(std::net::Ipv4Addr::from(MAX_ANSWERED as u32 + 9))), ["n.example"]);
    }
}
