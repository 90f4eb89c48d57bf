//! A stdio server's own connections, without the proxy: in its network namespace every
//! address, IPv4 and (where the namespace has it) IPv6, is routed to the loopback, where
//! a listener on each granted port (`127.0.0.1:5432`, `db.example.com:5432`, `*:443`)
//! accepts the server's connect to any address; the accepted socket's own address is
//! where the server meant to go (`wasmgate-confine`'s `Network::Proxied`, its
//! `transparent` ports). A connect on any other port is refused at once in the namespace,
//! and reported ([`refused_connect`]).
//!
//! The destination must be granted: an address listed literally (loopback and private
//! ones too; an IPv4-mapped IPv6 address is the IPv4 one), public on a port granted to
//! `*`, or an address the server's name service answered for a name granted on that port
//! (the `dns` module: an address alone does not say which name it was looked up by, the
//! name service's answers do). The gateway connects to the address it checked, from its
//! own network; a refused connection is reset before a byte goes anywhere. Every
//! connection is reported once it ends, as the proxy's are ([`EgressKind::Direct`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use tokio::net::TcpStream;

use crate::address::is_public;
use crate::dns::{Answered, grants_name};
use crate::grant::{Granted, HostGrant};
use crate::proxy::{CONNECT_TIMEOUT, EgressGrant, EgressKind, EgressRecord};

/// The ports a server granted `hosts` reaches the gateway on by a plain connect: every
/// grant's, without `skip` (the proxy's own), sorted, at most `most`.
#[must_use]
pub fn transparent_ports(hosts: &[HostGrant], skip: u16, most: usize) -> Vec<u16> {
    let mut ports: Vec<u16> = hosts.iter().filter(|g| g.port != skip).map(|g| g.port).collect();
    ports.sort_unstable();
    ports.dedup();
    ports.truncate(most);
    ports
}

/// The record of a connect to `destination` that the server's connect filter refused: no
/// grant names its port, so no listener of the gateway's is there to hear it.
#[must_use]
pub fn refused_connect(destination: SocketAddr) -> EgressRecord {
    let reason =
        format!("no grant names port {}: the connect was refused in the server's namespace", destination.port());
    EgressRecord {
        kind: EgressKind::Direct,
        host: destination.ip().to_string(),
        port: destination.port(),
        address: Some(destination),
        refused: Some(reason),
        ..EgressRecord::default()
    }
}

/// Whether a server granted `hosts` has a name service: any grant of a name.
#[must_use]
pub fn wants_name_service(hosts: &[HostGrant]) -> bool {
    hosts.iter().any(|g| !matches!(g.granted(), Granted::Address(_)))
}

/// Whether `hosts` let a connect to `destination` through, and why not; `answered` holds
/// what the name service answered.
pub(crate) fn admits(hosts: &[HostGrant], destination: SocketAddr, answered: &Answered) -> Result<(), String> {
    let ip = destination.ip().to_canonical();
    let (mut by_name, mut any) = (false, false);
    let names = answered.names_of(ip);
    for grant in hosts.iter().filter(|g| g.port == destination.port()) {
        match grant.granted() {
            Granted::Address(granted) if granted.to_canonical() == ip => return Ok(()),
            Granted::Any if is_public(ip) => return Ok(()),
            Granted::Any => any = true,
            Granted::Name(_) | Granted::Under(_) if names.iter().any(|n| grants_name(grant, n)) => return Ok(()),
            Granted::Name(_) | Granted::Under(_) => by_name = true,
            Granted::Address(_) => {}
        }
    }
    let hint = if by_name {
        " (a granted name is reached at the addresses its name service answered, or through the proxy)"
    } else {
        ""
    };
    match any {
        true => Err(format!("{ip} is not a public address, and no grant lists it{hint}")),
        false => Err(format!("{} is not a granted address{hint}", SocketAddr::new(ip, destination.port()))),
    }
}

/// Handles one direct connection of the server, and says how it went.
pub(crate) async fn connection(
    mut stream: TcpStream,
    grant: &EgressGrant,
    answered: &Answered,
    alive: &mut tokio::sync::watch::Receiver<()>,
) -> EgressRecord {
    let started = Instant::now();
    let mut record = EgressRecord { kind: EgressKind::Direct, ..EgressRecord::default() };
    let outcome = async {
        let destination =
            stream.local_addr().map_err(|e| format!("the connection's destination cannot be read: {e}"))?;
        // A listener of both families sees an IPv4 destination as a mapped IPv6 one.
        let destination = SocketAddr::new(destination.ip().to_canonical(), destination.port());
        record.host = destination.ip().to_string();
        record.port = destination.port();
        admits(&grant.hosts, destination, answered)?;
        record.address = Some(destination);
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(destination)).await {
            Ok(Ok(upstream)) => Ok(upstream),
            Ok(Err(e)) => Err(format!("connecting to {destination}: {e}")),
            Err(_) => Err(format!("connecting to {destination} timed out")),
        }
    }
    .await;
    match outcome {
        Ok(mut upstream) => {
            let (up, down) = crate::splice::splice(&mut stream, &mut upstream, alive).await;
            (record.bytes_up, record.bytes_down) = (up, down);
        }
        Err(reason) => {
            record.refused = Some(reason);
            reset(stream);
        }
    }
    record.duration = started.elapsed();
    record
}

/// Refuses a connection beyond the bound on connections at once.
pub(crate) async fn refuse(stream: TcpStream, grant: Arc<EgressGrant>) {
    let mut record = EgressRecord { kind: EgressKind::Direct, ..EgressRecord::default() };
    if let Ok(destination) = stream.local_addr() {
        record.host = destination.ip().to_canonical().to_string();
        record.port = destination.port();
    }
    record.refused = Some("too many connections at once".into());
    reset(stream);
    if let Some(observer) = &grant.observer {
        observer(record);
    }
}

/// Closes `stream` with a reset, so the server's side fails at once.
fn reset(stream: TcpStream) {
    let _ = stream.set_zero_linger();
    drop(stream);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn grants(hosts: &[&str]) -> Vec<HostGrant> {
        hosts.iter().map(|h| HostGrant::parse(h).unwrap()).collect()
    }

    #[test]
    fn a_direct_connect_is_admitted_by_address_or_by_what_the_name_service_answered() {
        crate::address::test::count_as_public("127.0.0.2".parse().unwrap());
        let hosts = grants(&["127.0.0.1:5432", "*:443", "db.example.com:6379", "*.example.org:8443"]);
        let answered = Answered::default();
        let admits = |to: &str| admits(&hosts, to.parse().unwrap(), &answered);
        assert_eq!(admits("127.0.0.1:5432"), Ok(()));
        assert_eq!(admits("[::ffff:127.0.0.1]:5432"), Ok(()), "the same address, mapped");
        assert_eq!(admits("127.0.0.2:443"), Ok(()), "public, on a port granted to `*`");
        assert_eq!(admits("127.0.0.1:443").unwrap_err(), "127.0.0.1 is not a public address, and no grant lists it");
        assert_eq!(admits("10.0.0.1:5432").unwrap_err(), "10.0.0.1:5432 is not a granted address");
        assert_eq!(admits("127.0.0.2:5433").unwrap_err(), "127.0.0.2:5433 is not a granted address");
        let by_name = admits("127.0.0.2:6379").unwrap_err();
        assert!(by_name.ends_with("at the addresses its name service answered, or through the proxy)"), "{by_name}");
        // Once the name service has answered a granted name with an address, that
        // address is the name's, on the name's port only.
        answered.remember("127.0.0.2".parse().unwrap(), "db.example.com");
        answered.remember("127.0.0.2".parse().unwrap(), "api.example.org");
        assert_eq!(admits("127.0.0.2:6379"), Ok(()));
        assert_eq!(admits("127.0.0.2:8443"), Ok(()), "a name under a granted domain");
        assert!(admits("127.0.0.2:5432").is_err(), "not a port of the name's");
    }

    #[test]
    fn the_ports_of_direct_connects_are_every_grants_but_the_proxys() {
        let hosts = grants(&["127.0.0.1:5432", "*:443", "10.0.0.1:5432", "db.example.com:6379", "127.0.0.1:3128"]);
        assert_eq!(transparent_ports(&hosts, 3128, 32), [443, 5432, 6379]);
        assert_eq!(transparent_ports(&hosts, 3128, 1), [443], "at most `most`");
        assert!(wants_name_service(&hosts) && !wants_name_service(&grants(&["127.0.0.1:5432"])));
    }
}
