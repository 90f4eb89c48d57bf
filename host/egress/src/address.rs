//! The address decisions that need no lookup: which addresses count as public, and
//! which URLs may carry credentials.

use std::net::IpAddr;

use url::Url;

/// Whether `ip` is an address of the public internet: not loopback, private,
/// link-local, shared (CGNAT), documentation, multicast, unspecified or reserved.
#[must_use]
pub fn is_public(ip: IpAddr) -> bool {
    #[cfg(test)]
    if test::PUBLIC.with(|public| public.borrow().contains(&ip)) {
        return true;
    }
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
            let [first, second, ..] = v6.segments();
            // Ranges that carry an IPv4 address or lead nowhere public: IPv4-compatible
            // (::/96), 6to4 (2002::/16), Teredo (2001::/32), NAT64 (64:ff9b::/96 and
            // 64:ff9b:1::/48), discard (100::/64), ORCHID (2001:10::/28, 2001:20::/28).
            let embeds_or_reserved = v6.segments()[..6].iter().all(|s| *s == 0)
                || first == 0x2002
                || first == 0x2001 && (second == 0 || (second & 0xfff0) == 0x0010 || (second & 0xfff0) == 0x0020)
                || first == 0x0100 && v6.segments()[1..4].iter().all(|s| *s == 0);
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || first == 0x2001 && second == 0x0db8
                || first == 0x0064 && second == 0xff9b
                || embeds_or_reserved)
        }
    }
}

/// Whether `url`'s host is `localhost` or a loopback address.
#[must_use]
pub fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Whether `url` may carry credentials, or be trusted for what it answers: `https`, or
/// plain `http` to a loopback host only.
#[must_use]
pub fn is_secure(url: &Url) -> bool {
    url.scheme() == "https" || (url.scheme() == "http" && is_loopback(url))
}

/// What the crate's own tests make public on their thread, so that a wildcard grant can
/// be tried on loopback without any outside address.
#[cfg(test)]
pub(crate) mod test {
    use std::cell::RefCell;
    use std::net::IpAddr;

    thread_local! {
        pub(crate) static PUBLIC: RefCell<Vec<IpAddr>> = const { RefCell::new(Vec::new()) };
    }

    /// Counts `ip` as public on this thread.
    pub(crate) fn count_as_public(ip: IpAddr) {
        PUBLIC.with(|public| public.borrow_mut().push(ip));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn only_public_addresses_count_as_public() {
        for private in
            ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0"]
        {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for private in [
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::",
            "::a9fe:a9fe",
            "2002:a9fe:a9fe::1",
            "2001:0:4136:e378::1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::a9fe:a9fe",
            "100::1",
            "2001:10::1",
            "2001:20::1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in ["93.184.216.34", "1.1.1.1", "2606:4700::1111"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn only_https_or_loopback_http_urls_are_secure() {
        let secure = |url: &str| is_secure(&Url::parse(url).unwrap());
        assert!(secure("https://as.example/jwks"));
        assert!(secure("http://127.0.0.1:8080/jwks") && secure("http://[::1]/x") && secure("http://LOCALHOST/jwks"));
        assert!(
            !secure("http://as.example/jwks") && !secure("ftp://as.example") && !secure("http://127.0.0.1.nip.io/")
        );
    }
}
