//! Where the gateway's own requests may go: what the configuration names, and for a URL a
//! remote server names at run time (an authorization server, its token endpoint), only
//! `https` to a public address, or a host the provider's policy grants.
//!
//! A request to a configured origin (a provider's URL: written by the person who runs the
//! gateway, loopback included) keeps the rule for credentials ([`is_secure`]). A URL
//! named at run time comes from a server the gateway does not trust, so it must be
//! `https`, and its name must resolve to public addresses ([`is_public`]), unless the
//! provider's `network_hosts` grant its host and port. The check of a name's addresses
//! is made by the resolver that the gateway's HTTP client connects with, so the address
//! checked is the address connected to: a name that answers the check with a public
//! address and the connection with a private one gains nothing.

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, PoisonError, RwLock};

use url::Url;

use crate::address::{is_public, is_secure};
use crate::grant::HostGrant;

/// Why the gateway does not send a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReachError {
    /// A URL named at run time over plain `http`.
    #[error(
        "{url} was named by the server and is not https: grant its host in the provider's network_hosts to reach it"
    )]
    NotHttps {
        /// The URL.
        url: String,
    },
    /// A URL named at run time whose address is not a public one.
    #[error(
        "{url} was named by the server and its address is not public: grant its host in the provider's \
         network_hosts to reach it"
    )]
    NotPublic {
        /// The URL.
        url: String,
    },
    /// A URL that would carry credentials in clear text.
    #[error("{url} is not https: credentials go only over TLS (plain http only to a loopback host)")]
    Insecure {
        /// The URL.
        url: String,
    },
    /// A URL without a host.
    #[error("{url} names no host")]
    NoHost {
        /// The URL.
        url: String,
    },
}

/// Where one provider's gateway-side requests may go (see the module docs). Clones share
/// the configured origins.
#[derive(Debug, Clone, Default)]
pub struct Reach {
    /// The provider's grants (`network_hosts`).
    granted: Arc<[HostGrant]>,
    /// Origins the configuration names: scheme, host (lowercased) and port.
    configured: Arc<RwLock<BTreeSet<(String, String, u16)>>>,
}

impl Reach {
    /// Run-time URLs may reach `granted` besides public `https` addresses.
    #[must_use]
    pub fn new(granted: impl Into<Arc<[HostGrant]>>) -> Self {
        Self { granted: granted.into(), configured: Arc::default() }
    }

    /// `url`'s origin is configured (the provider's own URL): requests to it follow the
    /// rule for credentials only.
    pub fn configure(&self, url: &Url) {
        if let Some(key) = origin_key(url) {
            self.configured.write().unwrap_or_else(PoisonError::into_inner).insert(key);
        }
    }

    /// Whether a request to `url` may be sent.
    ///
    /// # Errors
    ///
    /// [`ReachError`] saying why not and what grants it.
    pub fn check(&self, url: &Url) -> Result<(), ReachError> {
        let text = || url.as_str().to_owned();
        let Some(key) = origin_key(url) else { return Err(ReachError::NoHost { url: text() }) };
        let configured = self.configured.read().unwrap_or_else(PoisonError::into_inner).contains(&key);
        if configured || self.grants(url) {
            return if is_secure(url) { Ok(()) } else { Err(ReachError::Insecure { url: text() }) };
        }
        if url.scheme() != "https" {
            return Err(ReachError::NotHttps { url: text() });
        }
        match url.host() {
            // A literal reaches no resolver: its address is checked here.
            Some(url::Host::Ipv4(ip)) if !is_public(IpAddr::V4(ip)) => Err(ReachError::NotPublic { url: text() }),
            Some(url::Host::Ipv6(ip)) if !is_public(IpAddr::V6(ip)) => Err(ReachError::NotPublic { url: text() }),
            // The resolver lets a configured or granted name reach every address of its,
            // whatever the port: on another origin than the one configured or granted it
            // is refused here (`https://localhost:6379` beside a provider on localhost:4000).
            Some(url::Host::Domain(name)) if self.trusts_name(name) => Err(ReachError::NotPublic { url: text() }),
            _ => Ok(()),
        }
    }

    /// Whether the provider's grants name `url`'s host and port.
    fn grants(&self, url: &Url) -> bool {
        let (Some(host), Some(port)) = (host_of(url), url.port_or_known_default()) else { return false };
        self.granted.iter().any(|g| g.port == port && g.host.eq_ignore_ascii_case(&host))
    }

    /// Whether the addresses of `name` may all be used: a configured or granted name.
    /// Any other name is reached at its public addresses only.
    fn trusts_name(&self, name: &str) -> bool {
        let name = name.trim_end_matches('.');
        let configured = self.configured.read().unwrap_or_else(PoisonError::into_inner);
        configured.iter().any(|(_, host, _)| host.eq_ignore_ascii_case(name))
            || self.granted.iter().any(|g| g.host.eq_ignore_ascii_case(name))
    }

    /// The addresses of `name` the gateway may connect to: every one for a configured or
    /// granted name, the public ones for any other (an error when there are none).
    ///
    /// # Errors
    ///
    /// The lookup failed, or `name` has no address the gateway may connect to.
    pub async fn resolve(&self, name: &str) -> Result<Vec<SocketAddr>, std::io::Error> {
        let found: Vec<SocketAddr> = tokio::net::lookup_host((name, 0)).await?.collect();
        if self.trusts_name(name) {
            return Ok(found);
        }
        let public: Vec<SocketAddr> = found.iter().copied().filter(|a| is_public(a.ip())).collect();
        if public.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "{name} was named by the server and resolves to no public address: grant it in the provider's \
                     network_hosts to reach it"
                ),
            ));
        }
        Ok(public)
    }
}

/// `url`'s host, lowercased, without IPv6 brackets.
fn host_of(url: &Url) -> Option<String> {
    Some(match url.host()? {
        url::Host::Domain(domain) => domain.trim_end_matches('.').to_ascii_lowercase(),
        url::Host::Ipv4(ip) => ip.to_string(),
        url::Host::Ipv6(ip) => ip.to_string(),
    })
}

/// `url`'s origin: scheme, host and port.
fn origin_key(url: &Url) -> Option<(String, String, u16)> {
    Some((url.scheme().to_owned(), host_of(url)?, url.port_or_known_default()?))
}

/// The resolver of the gateway's HTTP client for one provider: [`Reach::resolve`].
#[cfg(feature = "http")]
impl reqwest::dns::Resolve for Reach {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let reach = self.clone();
        Box::pin(async move {
            let found = reach.resolve(name.as_str()).await?;
            Ok(Box::new(found.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn a_url_named_at_run_time_must_be_https_to_a_public_address_or_granted() {
        let reach = Reach::new(vec![HostGrant::parse("127.0.0.1:9000").unwrap()]);
        reach.configure(&url("http://127.0.0.1:4000/mcp"));
        // The configured origin: the rule for credentials only.
        assert_eq!(reach.check(&url("http://127.0.0.1:4000/.well-known/x")), Ok(()));
        // A granted host and port.
        assert_eq!(reach.check(&url("http://127.0.0.1:9000/token")), Ok(()));
        // Anything else the server names.
        let refused = |text: &str| reach.check(&url(text)).unwrap_err();
        assert!(matches!(refused("http://127.0.0.1:4001/token"), ReachError::NotHttps { .. }));
        assert!(matches!(refused("http://as.example/token"), ReachError::NotHttps { .. }));
        assert!(matches!(refused("https://127.0.0.1:4000/token"), ReachError::NotPublic { .. }), "another origin");
        assert!(matches!(refused("https://10.0.0.1/token"), ReachError::NotPublic { .. }));
        assert!(matches!(refused("https://[::1]/token"), ReachError::NotPublic { .. }));
        assert!(matches!(refused("https://169.254.169.254/latest"), ReachError::NotPublic { .. }));
        assert_eq!(reach.check(&url("https://93.184.216.34/token")), Ok(()));
        assert_eq!(reach.check(&url("https://as.example/token")), Ok(()), "a name: its resolver decides");
        // A configured or granted name, whose every address the resolver lets through, on
        // another port or scheme than configured or granted.
        let named = Reach::new(vec![HostGrant::parse("as.internal:8443").unwrap()]);
        named.configure(&url("http://localhost:4000/mcp"));
        assert!(matches!(named.check(&url("https://localhost:6379/")).unwrap_err(), ReachError::NotPublic { .. }));
        assert!(matches!(named.check(&url("https://as.internal/token")).unwrap_err(), ReachError::NotPublic { .. }));
        assert_eq!(named.check(&url("https://as.internal:8443/token")), Ok(()));
        let said = refused("http://127.0.0.1:4001/token").to_string();
        assert!(said.contains("network_hosts"), "{said}");
    }

    #[test]
    fn a_granted_or_configured_host_still_carries_credentials_only_securely() {
        let reach = Reach::new(vec![HostGrant::parse("as.internal:80").unwrap()]);
        reach.configure(&url("http://mcp.internal/mcp"));
        assert!(matches!(reach.check(&url("http://as.internal/token")).unwrap_err(), ReachError::Insecure { .. }));
        assert!(matches!(reach.check(&url("http://mcp.internal/x")).unwrap_err(), ReachError::Insecure { .. }));
    }

    #[tokio::test]
    async fn a_name_named_at_run_time_resolves_to_public_addresses_only() {
        let reach = Reach::new(Vec::new());
        let refused = reach.resolve("localhost").await.unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::PermissionDenied);
        assert!(refused.to_string().contains("network_hosts"), "{refused}");
        reach.configure(&url("http://localhost:4000/mcp"));
        assert!(!reach.resolve("localhost").await.unwrap().is_empty(), "the configured name reaches all of its");
        let granted = Reach::new(vec![HostGrant::parse("localhost:9").unwrap()]);
        assert!(!granted.resolve("LOCALHOST").await.unwrap().is_empty(), "a granted name too, in any case");
    }
}
