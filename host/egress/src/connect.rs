//! Decisions that resolve a name: the address a granted name is reached at, and
//! whether a component may connect to an address.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use crate::address::is_public;
use crate::grant::HostGrant;

/// How long resolving a name may take.
pub(crate) const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);

/// The address to connect to for a granted `host:port`: a literal as listed, a name
/// resolved here to its first public address.
pub(crate) async fn resolve(host: &str, port: u16, any_address: bool) -> Result<SocketAddr, String> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    let addresses = tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((host, port)))
        .await
        .map_err(|_| format!("resolving {host} timed out"))?
        .map_err(|e| format!("cannot resolve {host}: {e}"))?;
    let all: Vec<SocketAddr> = addresses.collect();
    all.iter().copied().find(|a| any_address || is_public(a.ip())).ok_or_else(|| {
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
                    tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((grant.host.as_str(), grant.port)));
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

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
        assert!(resolve("localhost", 80, false).await.unwrap_err().contains("not public"));
        assert_eq!(resolve("127.0.0.1", 80, false).await.unwrap(), "127.0.0.1:80".parse().unwrap());
        // A grant at any address (an install's registry): the name's own address.
        assert!(resolve("localhost", 80, true).await.unwrap().ip().is_loopback());
    }
}
