//! Where wasmgate lets anything connect: the one place that parses a grant and decides
//! an address, for the egress proxy of a confined stdio server, for WebAssembly tool
//! components, and for the gateway's own requests.
//!
//! A grant is a host and a port ([`HostGrant`]), never a port alone: the policy's
//! `network_hosts` are read with [`HostGrant::parse`]. Its host is a name, an address,
//! any name under a domain (`*.example.com`) or any public address (`*`). A granted name
//! is resolved by the gateway, and only to a public address ([`is_public`]); an address
//! that is not public is reached only when a grant lists it literally. A component's connection is allowed
//! by [`permits`]; a stdio server's goes through the proxy ([`serve`]), which reports each
//! connection ([`EgressRecord`]) for the audit log. A URL that carries credentials must
//! be secure ([`is_secure`]: `https`, or `http` to a loopback host).
//!
//! # Layout
//!
//! * `grant`: [`HostGrant`] and [`HostGrantError`];
//! * `address`: the decisions that need no lookup, [`is_public`], [`is_loopback`],
//!   [`is_secure`];
//! * `connect` (feature `net`): [`permits`] and the resolution of a granted name;
//! * `proxy` (feature `net`): the egress proxy ([`serve`], [`EgressGrant`],
//!   [`PROXY_PORT`]) and what every egress path reports ([`EgressRecord`],
//!   [`EgressKind`], [`EgressObserver`]);
//! * `transparent` (feature `net`): a stdio server's own connects, caught in its
//!   namespace ([`transparent_ports`]), and `dns`: its name service
//!   ([`wants_name_service`]); `splice`: the copying both kinds of connection share;
//! * `reach` (feature `net`): where the gateway's own requests may go ([`Reach`]): what
//!   the configuration names, and what a server names at run time only over `https` to
//!   a public address or a granted host, checked by the resolver it connects with;
//! * `http` (feature `http`): what the gateway's own HTTP requests share,
//!   `read_bounded`.
//!
//! Without features the crate is parsing and pure decisions only (what the policy
//! needs), so a crate that reads grants gains no network code and no runtime.

mod address;
#[cfg(feature = "net")]
mod connect;
#[cfg(feature = "net")]
mod dns;
mod grant;
#[cfg(feature = "http")]
mod http;
#[cfg(feature = "net")]
mod proxy;
#[cfg(feature = "net")]
mod reach;
#[cfg(feature = "net")]
mod splice;
#[cfg(feature = "net")]
mod transparent;

pub use address::{is_loopback, is_public, is_secure};
#[cfg(feature = "net")]
pub use connect::permits;
pub use grant::{Granted, HostGrant, HostGrantError, is_host_name};
#[cfg(feature = "http")]
pub use http::{BodyError, read_bounded};
#[cfg(feature = "net")]
pub use proxy::{EgressGrant, EgressKind, EgressObserver, EgressRecord, PROXY_PORT, serve};
#[cfg(feature = "net")]
pub use reach::{Reach, ReachError};
#[cfg(feature = "net")]
pub use transparent::{refused_connect, transparent_ports, wants_name_service};
