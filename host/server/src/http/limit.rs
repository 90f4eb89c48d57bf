//! The per-client concurrency limit: requests open at once per peer IP address.
//!
//! A permit is taken before the request is handled and released when its response body
//! is finished or dropped, so a long-lived stream holds its permit for as long as it is
//! open: streams are the cheapest way to pin server resources, and they count.

use std::collections::HashMap;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use axum::body::Body;
use bytes::Bytes;
use http_body::{Frame, SizeHint};

/// Open requests per client.
#[derive(Debug, Default)]
pub(crate) struct ClientLimits {
    open: Mutex<HashMap<IpAddr, usize>>,
}

impl ClientLimits {
    /// A permit for `ip`, or `None` when it already has `max` requests open.
    pub(crate) fn acquire(self: &Arc<Self>, ip: IpAddr, max: usize) -> Option<Permit> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let count = open.entry(ip).or_default();
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(Permit { limits: Arc::clone(self), ip })
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
}
