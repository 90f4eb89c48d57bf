//! The per-client concurrency limit: requests open at once per client, a client being
//! its peer address as [`client_key`] groups them: every loopback address is one
//! client (on Linux all of 127.0.0.0/8 reaches the machine, so counting 127.0.0.2 apart
//! from 127.0.0.1 would give one local process as many budgets as it likes), and an
//! IPv6 peer is its /64.
//!
//! A permit is taken before the request is handled and released when its response body
//! is finished or dropped, so a long-lived stream holds its permit for as long as it is
//! open: streams are the cheapest way to pin server resources, and they count.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::ConnectInfo;
use bytes::Bytes;
use http_body::{Frame, SizeHint};

/// Open requests per client.
#[derive(Debug, Default)]
pub(crate) struct ClientLimits {
    open: Mutex<HashMap<IpAddr, usize>>,
}

impl ClientLimits {
    /// A permit for the client at `peer`, or `None` when it already has `max` requests open.
    pub(crate) fn acquire(self: &Arc<Self>, peer: IpAddr, max: usize) -> Option<Permit> {
        let ip = client_key(peer);
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let count = open.entry(ip).or_default();
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(Permit { limits: Arc::clone(self), ip })
    }
}

/// The client a peer address belongs to: all loopback addresses (IPv4, IPv6 and
/// IPv4-mapped) are one, an IPv6 address counts as its /64, an IPv4 address as itself.
/// The address a request came from, or `0.0.0.0` when the listener does not say.
pub(crate) fn peer_ip(connected: Option<&ConnectInfo<SocketAddr>>) -> IpAddr {
    connected.map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |ConnectInfo(peer)| peer.ip())
}

/// The client a request counts as from ([`client_ip`]), as the guard found it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Client(pub(crate) IpAddr);

/// The most `X-Forwarded-For` addresses looked at, from the right.
const MAX_FORWARDED: usize = 32;

/// The client a request is from: its peer address, or, when the peer is one of
/// `trusted` proxies, the right-most address of its `X-Forwarded-For` headers that is
/// not a trusted proxy itself. Each proxy appends the address it was reached from, so
/// what lies left of that address is the client's own say and is never read: the walk
/// from the right stops there, or at the first entry that is not an address (then the
/// last trusted address it passed is the client).
pub(crate) fn client_ip(peer: IpAddr, headers: &axum::http::HeaderMap, trusted: &[ipnet::IpNet]) -> IpAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(ip));
    if !is_trusted(&peer) {
        return peer;
    }
    // Header values in the order received; their size is bounded by the header limit.
    let values: Vec<&str> = headers.get_all("x-forwarded-for").iter().filter_map(|v| v.to_str().ok()).collect();
    let mut client = peer;
    for item in values.iter().rev().flat_map(|value| value.rsplit(',')).take(MAX_FORWARDED) {
        let Ok(ip) = item.trim().parse::<IpAddr>() else { break };
        client = ip;
        if !is_trusted(&ip) {
            break;
        }
    }
    client
}

pub(crate) fn client_key(peer: IpAddr) -> IpAddr {
    let peer = match peer {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(peer, IpAddr::V4),
        IpAddr::V4(_) => peer,
    };
    match peer {
        ip if ip.is_loopback() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(v6.to_bits() & !u128::from(u64::MAX))),
        IpAddr::V4(_) => peer,
    }
}

/// One open request; dropping it frees the slot.
#[derive(Debug)]
pub(crate) struct Permit {
    limits: Arc<ClientLimits>,
    ip: IpAddr,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut open = self.limits.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.ip) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// A response body that holds a [`Permit`] until it is finished or dropped.
pub(crate) struct PermitBody {
    inner: Body,
    _permit: Permit,
}

impl PermitBody {
    pub(crate) fn wrap(inner: Body, permit: Permit) -> Body {
        Body::new(Self { inner, _permit: permit })
    }
}

impl http_body::Body for PermitBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::net::Ipv4Addr;

    use super::*;

    fn forwarded(values: &[&str]) -> axum::http::HeaderMap {
        let mut headers = axum::http::HeaderMap::new();
        for value in values {
            headers.append("x-forwarded-for", value.parse().unwrap());
        }
        headers
    }

    #[test]
    fn x_forwarded_for_is_believed_only_from_a_trusted_proxy_and_only_right_of_the_client() {
        let ip = |text: &str| text.parse::<IpAddr>().unwrap();
        let trusted: Vec<ipnet::IpNet> = vec!["127.0.0.1/32".parse().unwrap(), "10.0.0.0/8".parse().unwrap()];
        let (proxy, stranger) = (ip("127.0.0.1"), ip("203.0.113.9"));
        // From a proxy: the address it appended.
        assert_eq!(client_ip(proxy, &forwarded(&["198.51.100.7"]), &trusted), ip("198.51.100.7"));
        // A client's own entry left of it is not read, however it reads.
        assert_eq!(client_ip(proxy, &forwarded(&["1.2.3.4, 198.51.100.7"]), &trusted), ip("198.51.100.7"));
        assert_eq!(client_ip(proxy, &forwarded(&["not-an-ip, 198.51.100.7"]), &trusted), ip("198.51.100.7"));
        assert_eq!(client_ip(proxy, &forwarded(&["1.2.3.4", "198.51.100.7"]), &trusted), ip("198.51.100.7"));
        // Through two trusted proxies: the first untrusted address from the right.
        assert_eq!(client_ip(proxy, &forwarded(&["198.51.100.7, 10.1.2.3"]), &trusted), ip("198.51.100.7"));
        // Nothing believable: the last trusted address passed, or the proxy itself.
        assert_eq!(client_ip(proxy, &forwarded(&["garbage, 10.1.2.3"]), &trusted), ip("10.1.2.3"));
        assert_eq!(client_ip(proxy, &forwarded(&["garbage"]), &trusted), proxy);
        assert_eq!(client_ip(proxy, &forwarded(&[]), &trusted), proxy);
        // From anyone else, or with no proxy trusted, the header is ignored.
        assert_eq!(client_ip(stranger, &forwarded(&["198.51.100.7"]), &trusted), stranger);
        assert_eq!(client_ip(proxy, &forwarded(&["198.51.100.7"]), &[]), proxy);
        // Only so many entries are read.
        let long = vec!["10.0.0.1"; 100].join(", ");
        assert_eq!(client_ip(proxy, &forwarded(&[&format!("198.51.100.7, {long}")]), &trusted), ip("10.0.0.1"));
    }

    #[test]
    fn permits_are_counted_per_address_and_freed_on_drop() {
        let limits = Arc::new(ClientLimits::default());
        let (a, b) = (IpAddr::from(Ipv4Addr::LOCALHOST), IpAddr::from(Ipv4Addr::new(10, 0, 0, 1)));
        let first = limits.acquire(a, 2).unwrap();
        let _second = limits.acquire(a, 2).unwrap();
        assert!(limits.acquire(a, 2).is_none());
        assert!(limits.acquire(b, 2).is_some(), "another client has its own count");
        drop(first);
        assert!(limits.acquire(a, 2).is_some());
    }

    #[test]
    fn every_loopback_address_is_one_client_and_an_ipv6_peer_is_its_64() {
        let limits = Arc::new(ClientLimits::default());
        let local = ["127.0.0.1", "127.0.0.2", "127.255.0.9", "::1", "::ffff:127.0.0.3"];
        let held: Vec<Permit> = local.iter().map(|ip| limits.acquire(ip.parse().unwrap(), 5).unwrap()).collect();
        for ip in local {
            assert!(limits.acquire(ip.parse().unwrap(), 5).is_none(), "{ip} shares the local budget");
        }
        assert!(limits.acquire("10.0.0.1".parse().unwrap(), 5).is_some());
        assert!(limits.acquire("::ffff:10.0.0.2".parse().unwrap(), 1).is_some(), "mapped IPv4 counts as IPv4");
        let _one = limits.acquire("2001:db8:1:2::1".parse().unwrap(), 1).unwrap();
        assert!(limits.acquire("2001:db8:1:2:ffff::9".parse().unwrap(), 1).is_none(), "the same /64");
        assert!(limits.acquire("2001:db8:1:3::1".parse().unwrap(), 1).is_some(), "another /64");
        drop(held);
        assert!(limits.acquire("127.0.0.7".parse().unwrap(), 5).is_some());
    }
}
