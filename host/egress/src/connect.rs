//! Decisions that resolve a name: the address a granted name is reached at, and
//! whether a component may connect to an address.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use crate::address::is_public;
use crate::grant::{Granted, HostGrant};

/// How long resolving a name may take.
pub(crate) const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);

/// The address to connect to for a granted `host:port`: a literal as listed, a name
/// resolved here to its first public address.
pub(crate) async fn resolve(host: &str, port: u16, any_address: bool) -> Result<SocketAddr, String> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    #[cfg(test)]
    if let Some(ip) = test::resolved(host) {
        let address = SocketAddr::new(ip, port);
        return (any_address || is_public(ip)).then_some(address).ok_or_else(|| format!("{host}: not public"));
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
///
/// `*` on the port permits any public address. A grant of the names under a domain
/// (`*.example.com`) permits a component nothing: an address does not say which name
/// the guest resolved to reach it (a stdio server's proxy sees the name).
pub async fn permits(hosts: &[HostGrant], address: SocketAddr) -> bool {
    let ip = address.ip().to_canonical();
    for grant in hosts.iter().filter(|g| g.port == address.port()) {
        match grant.granted() {
            Granted::Address(granted) if granted.to_canonical() == ip => return true,
            Granted::Any if is_public(ip) => return true,
            Granted::Name(name) if is_public(ip) => {
                let lookup = tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((name, grant.port)));
                if let Ok(Ok(mut found)) = lookup.await
                    && found.any(|a| a.ip().to_canonical() == ip)
                {
                    return true;
                }
            }
            Granted::Address(_) | Granted::Any | Granted::Name(_) | Granted::Under(_) => {}
        }
    }
    false
}

/// Names the crate's own tests resolve on their thread without any resolver.
#[cfg(test)]
pub(crate) mod test {
    use std::cell::RefCell;
    use std::net::IpAddr;

    thread_local! {
        pub(crate) static NAMES: RefCell<Vec<(String, IpAddr)>> = const { RefCell::new(Vec::new()) };
    }

    /// Resolves `name` to `ip` on this thread.
    pub(crate) fn resolve_as(name: &str, ip: IpAddr) {
        NAMES.with(|names| names.borrow_mut().push((name.to_owned(), ip)));
    }

    /// What `name` resolves to on this thread, if a test said.
    pub(crate) fn resolved(name: &str) -> Option<IpAddr> {
        NAMES.with(|names| names.borrow().iter().find(|(n, _)| n == name).map(|(_, ip)| *ip))
    }
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
    async fn a_component_granted_any_public_address_reaches_public_ones_on_its_port_only() {
        crate::address::test::count_as_public("127.0.0.2".parse().unwrap());
        let hosts = [HostGrant::parse("*:443").unwrap(), HostGrant::parse("*.example.com:80").unwrap()];
        assert!(permits(&hosts, "127.0.0.2:443".parse().unwrap()).await, "public, on the port");
        assert!(!permits(&hosts, "127.0.0.2:444".parse().unwrap()).await, "another port");
        assert!(!permits(&hosts, "127.0.0.1:443".parse().unwrap()).await, "loopback is never any address");
        assert!(!permits(&hosts, "10.0.0.1:443".parse().unwrap()).await, "nor a private one");
        assert!(!permits(&hosts, "127.0.0.2:80".parse().unwrap()).await, "names under a domain: no address says so");
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_loopback_is_refused_and_a_literal_is_not() {
        assert!(resolve("localhost", 80, false).await.unwrap_err().contains("not public"));
        assert_eq!(resolve("127.0.0.1", 80, false).await.unwrap(), "127.0.0.1:80".parse().unwrap());
        // A grant at any address (an install's registry): the name's own address.
        assert!(resolve("localhost", 80, true).await.unwrap().ip().is_loopback());
    }
}
