//! [`HostGrant`]: one host and port a provider may reach, parsed here and nowhere else
//! (the policy reads `network_hosts` with it), and how a grant matches what a connection
//! asks for.

use std::net::IpAddr;

/// One host a server may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostGrant {
    /// A DNS name (lower case), or an IP address (without brackets).
    pub host: String,
    /// The port.
    pub port: u16,
    /// Whether a name is reached at whatever address it resolves to, private and reserved
    /// ones included ([`HostGrant::at_any_address`]). `false` for every grant a policy
    /// makes: a name must resolve to a public address.
    pub any_address: bool,
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
    /// The host is neither a DNS name nor an IP address.
    #[error("{text:?}: {host:?} is neither a host name nor an IP address")]
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
            return Err(HostGrantError::BadHost { text: text.into(), host: host.into() });
        }
        Ok(Self { host: host.to_ascii_lowercase(), port, any_address: false })
    }

    /// This grant, with its name reached at whatever address it resolves to: for what the
    /// user's own tools are configured with (the registry of an install, often a mirror at
    /// a private address), never for what a policy names.
    #[must_use]
    pub fn at_any_address(self) -> Self {
        Self { any_address: true, ..self }
    }

    /// Whether a connection asked for `host` (a name or an address) and `port` is this
    /// grant's: the same port, and the same address or the same name (without regard to
    /// case or a trailing dot).
    #[cfg(feature = "net")]
    pub(crate) fn matches(&self, host: &str, port: u16) -> bool {
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
        for bad in
            ["example.com", "example.com:0", "example.com:70000", ":443", "a b:1", "-x.com:1", "::1:80", "a..b:1"]
        {
            assert!(HostGrant::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            HostGrant::parse("a b:443").unwrap_err().to_string(),
            "\"a b:443\": \"a b\" is neither a host name nor an IP address"
        );
    }

    #[test]
    fn a_grant_is_shown_as_it_is_written() {
        for text in ["calendar.example.com:443", "[::1]:8080", "127.0.0.1:5232"] {
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
    }
}
