//! [`HostGrant`]: one host and port a provider may reach, parsed here and nowhere else
//! (the policy reads `network_hosts` with it), and how a grant matches what a connection
//! asks for.
//!
//! A grant names one host (`calendar.example.com:443`, `[::1]:8080`), any name under a
//! domain (`*.example.com:443`), or any public address (`*:443`). A wildcard never
//! reaches a loopback, private, link-local or reserved address: such an address is
//! reached only when a grant lists it literally.

use std::net::IpAddr;

/// One host a server may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostGrant {
    /// A DNS name (lower case), an IP address (without brackets), `*.` and a DNS name
    /// (any name under it), or `*` (any public address): see [`HostGrant::granted`].
    pub host: String,
    /// The port.
    pub port: u16,
    /// Whether a name is reached at whatever address it resolves to, private and reserved
    /// ones included ([`HostGrant::at_any_address`]). `false` for every grant a policy
    /// makes: a name must resolve to a public address.
    pub any_address: bool,
}

/// What a grant's host names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Granted<'a> {
    /// This address, whatever kind it is.
    Address(IpAddr),
    /// This name, at its public addresses (at any address for
    /// [`HostGrant::at_any_address`]).
    Name(&'a str),
    /// Any name under this domain (not the domain itself), at its public addresses.
    Under(&'a str),
    /// Any public address, by name or literally.
    Any,
}

/// Why a text is not a grant. Each says what is wrong with the text it quotes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostGrantError {
    /// No `host:port` shape at all.
    #[error("{text:?} is not host:port")]
    NotHostPort {
        /// The text.
        text: String,
    },
    /// The port is not a number from 1 to 65535.
    #[error("{text:?}: the port is not a number from 1 to 65535")]
    BadPort {
        /// The text.
        text: String,
    },
    /// Port 0.
    #[error("{text:?}: port 0")]
    PortZero {
        /// The text.
        text: String,
    },
    /// The host is neither a DNS name nor an IP address of one host.
    #[error("{text:?}: {host:?} is neither a host name nor the IP address of one host")]
    BadHost {
        /// The text.
        text: String,
        /// Its host part.
        host: String,
    },
}

impl HostGrant {
    /// Parses `host:port` (`[v6]:port` for an IPv6 address).
    ///
    /// # Errors
    ///
    /// A [`HostGrantError`] saying what is wrong: no port, port 0, an empty or malformed
    /// host.
    pub fn parse(text: &str) -> Result<Self, HostGrantError> {
        let (host, port) = split_authority(text).ok_or_else(|| HostGrantError::NotHostPort { text: text.into() })?;
        let port: u16 = port.parse().map_err(|_| HostGrantError::BadPort { text: text.into() })?;
        if port == 0 {
            return Err(HostGrantError::PortZero { text: text.into() });
        }
        // Brackets hold an IPv6 address, and nothing else.
        if text.starts_with('[') && host.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(HostGrantError::BadHost { text: text.into(), host: host.into() });
        }
        let wildcard = host == "*" || host.strip_prefix("*.").is_some_and(is_host_name);
        match host.parse::<IpAddr>() {
            // No one host: a connection to it reaches whatever listens on the gateway's own.
            Ok(ip) if ip.is_unspecified() || ip.is_multicast() || ip == IpAddr::from([255, 255, 255, 255]) => {
                return Err(HostGrantError::BadHost { text: text.into(), host: host.into() });
            }
            Ok(_) => {}
            Err(_) if wildcard || is_host_name(host) => {}
            Err(_) => return Err(HostGrantError::BadHost { text: text.into(), host: host.into() }),
        }
        Ok(Self { host: host.to_ascii_lowercase(), port, any_address: false })
    }

    /// What the host names: an address, a name, any name under a domain, or any public
    /// address.
    #[must_use]
    pub fn granted(&self) -> Granted<'_> {
        if self.host == "*" {
            return Granted::Any;
        }
        if let Some(domain) = self.host.strip_prefix("*.") {
            return Granted::Under(domain);
        }
        match self.host.parse::<IpAddr>() {
            Ok(ip) => Granted::Address(ip),
            Err(_) => Granted::Name(&self.host),
        }
    }

    /// Whether it names more than one host (`*.example.com`, `*`): what it reaches must
    /// be public, whatever a name resolves to.
    #[must_use]
    pub fn is_wildcard(&self) -> bool {
        matches!(self.granted(), Granted::Under(_) | Granted::Any)
    }

    /// This grant, with its name reached at whatever address it resolves to: for what the
    /// user's own tools are configured with (the registry of an install, often a mirror at
    /// a private address), never for what a policy names.
    #[must_use]
    pub fn at_any_address(self) -> Self {
        Self { any_address: true, ..self }
    }

    /// Whether a connection asked for `host` (a name or an address) and `port` is this
    /// grant's: the same port, and the same address, the same name, a name under the
    /// domain, or anything for `*` (names without regard to case or a trailing dot).
    /// Whether the address it comes to may be reached is decided when it is resolved.
    #[cfg(feature = "net")]
    pub(crate) fn matches(&self, host: &str, port: u16) -> bool {
        if self.port != port {
            return false;
        }
        let asked = host.parse::<IpAddr>();
        let name = host.trim_end_matches('.');
        match self.granted() {
            Granted::Any => true,
            Granted::Address(granted) => asked.is_ok_and(|asked| asked == granted),
            Granted::Name(granted) => asked.is_err() && granted.eq_ignore_ascii_case(name),
            Granted::Under(domain) => {
                asked.is_err()
                    && name.len() > domain.len() + 1
                    && name.is_char_boundary(name.len() - domain.len() - 1)
                    && name[name.len() - domain.len() - 1..].eq_ignore_ascii_case(&format!(".{domain}"))
            }
        }
    }
}

/// Whether `text` is a DNS host name: dot-separated labels of 1 to 63 letters, digits and
/// hyphens, not starting with a hyphen, 253 bytes at most (without a trailing dot).
#[must_use]
pub fn is_host_name(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 253
        && text.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
        })
}

/// `host:port`, `[v6]:port` for an IPv6 address: as a grant is written.
impl std::fmt::Display for HostGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// `host:port` or `[v6]:port`, split.
pub(crate) fn split_authority(text: &str) -> Option<(&str, &str)> {
    if let Some(rest) = text.strip_prefix('[') {
        let (host, port) = rest.split_once("]:")?;
        return Some((host, port));
    }
    let (host, port) = text.rsplit_once(':')?;
    (!host.contains(':')).then_some((host, port))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn grants_parse_strictly() {
        assert_eq!(HostGrant::parse("Calendar.Example.com:443").unwrap().host, "calendar.example.com");
        assert_eq!(
            HostGrant::parse("[::1]:8080").unwrap(),
            HostGrant { host: "::1".into(), port: 8080, any_address: false }
        );
        assert_eq!(HostGrant::parse("127.0.0.1:5232").unwrap().port, 5232);
        for bad in [
            "example.com",
            "example.com:0",
            "example.com:70000",
            ":443",
            "a b:1",
            "-x.com:1",
            "::1:80",
            "a..b:1",
            "a.*.com:443",
            "*example.com:443",
            "**.example.com:443",
            "*.:443",
            "[*]:443",
            "*.*:443",
            "[example.com]:443",
            "0.0.0.0:5432",
            "[::]:5432",
            "255.255.255.255:80",
            "224.0.0.1:80",
        ] {
            assert!(HostGrant::parse(bad).is_err(), "{bad}");
        }
        let under = HostGrant::parse("*.Example.com:443").unwrap();
        assert_eq!((under.granted(), under.is_wildcard()), (Granted::Under("example.com"), true));
        assert_eq!(HostGrant::parse("*:443").unwrap().granted(), Granted::Any);
        let name = HostGrant::parse("example.com:443").unwrap();
        assert_eq!((name.granted(), name.is_wildcard()), (Granted::Name("example.com"), false));
        assert_eq!(
            HostGrant::parse("a b:443").unwrap_err().to_string(),
            "\"a b:443\": \"a b\" is neither a host name nor the IP address of one host"
        );
    }

    #[test]
    fn a_grant_is_shown_as_it_is_written() {
        for text in ["calendar.example.com:443", "[::1]:8080", "127.0.0.1:5232", "*.example.com:443", "*:443"] {
            assert_eq!(HostGrant::parse(text).unwrap().to_string(), text);
        }
    }

    #[cfg(feature = "net")]
    #[test]
    fn a_grant_matches_its_host_and_port_only() {
        let grant = HostGrant::parse("calendar.example.com:443").unwrap();
        assert!(grant.matches("CALENDAR.example.com", 443) && grant.matches("calendar.example.com.", 443));
        assert!(!grant.matches("calendar.example.com", 80));
        assert!(!grant.matches("evil.calendar.example.com", 443) && !grant.matches("example.com", 443));
        let literal = HostGrant::parse("[::1]:80").unwrap();
        assert!(literal.matches("0:0:0:0:0:0:0:1", 80) && !literal.matches("127.0.0.1", 80));
        assert!(!grant.matches("93.184.216.34", 443), "a name grant is no address grant");
    }

    #[cfg(feature = "net")]
    #[test]
    fn a_wildcard_matches_names_under_its_domain_or_anything_on_its_port() {
        let under = HostGrant::parse("*.example.com:443").unwrap();
        for name in ["api.example.com", "A.B.Example.COM", "x.example.com."] {
            assert!(under.matches(name, 443), "{name}");
        }
        for name in ["example.com", "evilexample.com", "example.com.evil.net", "api.example.org", "93.184.216.34"] {
            assert!(!under.matches(name, 443), "{name}");
        }
        assert!(!under.matches("api.example.com", 80), "its port only");
        let any = HostGrant::parse("*:443").unwrap();
        assert!(any.matches("example.net", 443) && any.matches("10.0.0.1", 443) && any.matches("::1", 443));
        assert!(!any.matches("example.net", 80));
        assert!(!under.matches("éexample.com", 443), "a name whose cut falls inside a character");
    }
}
