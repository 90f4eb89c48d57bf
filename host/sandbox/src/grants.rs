//! What a tool call may use beyond computing: the grants of its policy.
//!
//! A tool-provider call gets a WASI context with exactly these grants and
//! nothing else: no environment, no arguments, no sockets unless
//! [`Grants::network`] says which addresses (UDP, listening and accepting stay
//! off even then), stdin empty, stdout discarded, stderr captured.
//! [`Grants::default`] grants nothing at all.
//! Formatters never see grants: they always run in the empty context.

use std::collections::HashSet;
use std::net::IpAddr;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use wasmgate_egress::{EgressObserver, EgressRecord, Granted, HostGrant};

use crate::error::GrantError;

/// The capabilities one tool call gets, from its policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    /// Host directories preopened for the guest.
    pub dirs: Vec<DirGrant>,
    /// The real wall clock and monotonic clock. Off by default: the clocks
    /// then read zero, as for formatters, and the guest has no timer with
    /// which to measure the host. Grant it only to a tool that must know the
    /// time (the calendar does not: every time it handles comes in its
    /// arguments).
    pub clock: bool,
    /// Outgoing TCP connections, to the addresses its check lets through. `None`
    /// (the default): no sockets at all.
    pub network: Option<NetworkGrant>,
}

/// Outgoing TCP for a tool call: `wasi:sockets`, with every connection's address judged
/// by `wasmgate_egress::permits` against the hosts granted, and a name looked up only
/// when it is one of theirs (a lookup is itself a message out, to whoever answers for
/// the name). UDP, binding an address of its own, listening and accepting stay refused.
#[derive(Clone)]
pub struct NetworkGrant {
    /// The hosts it may connect to (a name's public addresses, or a literal address).
    pub hosts: Arc<[HostGrant]>,
    /// Told of every connection and every lookup, allowed or refused, as it is decided
    /// (the gateway's audit log).
    pub observer: Option<EgressObserver>,
}

impl NetworkGrant {
    /// `hosts`, reported to nobody.
    #[must_use]
    pub fn new(hosts: impl Into<Arc<[HostGrant]>>) -> Self {
        Self { hosts: hosts.into(), observer: None }
    }

    /// Whether the guest may resolve names at all (`wasi:sockets/ip-name-lookup`):
    /// only when a host is granted by name, and then only those names
    /// ([`may_look_up`](Self::may_look_up)).
    #[must_use]
    pub fn name_lookup(&self) -> bool {
        self.hosts.iter().any(|h| matches!(h.granted(), Granted::Name(_) | Granted::Any))
    }

    /// Whether `name` may be looked up: an address literal (no lookup is made), the name
    /// of a granted host, in any case and with or without a trailing dot, or any name
    /// when any public address is granted (`*`).
    #[must_use]
    pub fn may_look_up(&self, name: &str) -> bool {
        let name = name.strip_suffix('.').unwrap_or(name);
        name.parse::<IpAddr>().is_ok()
            || self.hosts.iter().any(|h| match h.granted() {
                Granted::Name(granted) => granted.eq_ignore_ascii_case(name),
                Granted::Any => true,
                Granted::Address(_) | Granted::Under(_) => false,
            })
    }

    /// Tells the observer, if any.
    pub(crate) fn report(&self, record: EgressRecord) {
        if let Some(observer) = &self.observer {
            observer(record);
        }
    }
}

impl PartialEq for NetworkGrant {
    /// The same hosts: who hears of the connections is not part of what is granted.
    fn eq(&self, other: &Self) -> bool {
        self.hosts == other.hosts
    }
}

impl Eq for NetworkGrant {}

impl std::fmt::Debug for NetworkGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetworkGrant").field("hosts", &self.hosts).finish_non_exhaustive()
    }
}

/// One host directory, preopened for the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirGrant {
    /// The directory on the host; it must exist and be absolute.
    pub host_path: PathBuf,
    /// Where the guest sees it: an absolute path such as `/data`, without
    /// `.` or `..`, not `/` itself, and not inside another grant's path.
    pub guest_path: String,
    /// Read, list and stat only: opening for write, creating, renaming and
    /// removing are refused by WASI (the guest sees "not permitted").
    pub read_only: bool,
}

impl DirGrant {
    /// `host_path` as `guest_path`, readable but not writable.
    pub fn read_only(host_path: impl Into<PathBuf>, guest_path: &str) -> Self {
        DirGrant { host_path: host_path.into(), guest_path: guest_path.to_owned(), read_only: true }
    }

    /// `host_path` as `guest_path`, readable and writable.
    pub fn read_write(host_path: impl Into<PathBuf>, guest_path: &str) -> Self {
        DirGrant { host_path: host_path.into(), guest_path: guest_path.to_owned(), read_only: false }
    }
}

impl Grants {
    /// Nothing granted (the same as `Grants::default()`).
    pub fn none() -> Self {
        Grants::default()
    }

    /// These grants plus `dir`.
    pub fn with_dir(mut self, dir: DirGrant) -> Self {
        self.dirs.push(dir);
        self
    }

    /// Checks the paths of every grant, without touching the filesystem.
    /// The error names the grant and says what is wrong.
    ///
    /// # Errors
    ///
    /// A [`GrantError`] naming the grant that is malformed.
    pub fn check(&self) -> Result<(), GrantError> {
        let mut seen: HashSet<&str> = HashSet::new();
        for dir in &self.dirs {
            let guest = dir.guest_path.as_str();
            if !dir.host_path.is_absolute() {
                return Err(GrantError::HostPathNotAbsolute {
                    host_path: dir.host_path.clone(),
                    guest_path: guest.to_owned(),
                });
            }
            check_guest_path(guest)?;
            for other in &seen {
                if inside(guest, other) || inside(other, guest) {
                    return Err(GrantError::Overlap { first: (*other).to_owned(), second: guest.to_owned() });
                }
            }
            seen.insert(guest);
        }
        Ok(())
    }
}

fn check_guest_path(guest: &str) -> Result<(), GrantError> {
    let path = Path::new(guest);
    let normal = path.components().skip(1).all(|c| matches!(c, Component::Normal(_)));
    let reconstructed = path.components().skip(1).count() == guest.split('/').skip(1).count();
    if !guest.starts_with('/') || guest == "/" || !normal || !reconstructed || guest.len() > 256 || guest.contains('\0')
    {
        return Err(GrantError::GuestPath { guest_path: guest.to_owned() });
    }
    Ok(())
}

/// Whether `path` is `dir` or lies under it.
fn inside(path: &str, dir: &str) -> bool {
    path == dir || path.strip_prefix(dir).is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::{DirGrant, Grants, NetworkGrant};
    use wasmgate_egress::HostGrant;

    fn network(hosts: &[&str]) -> NetworkGrant {
        NetworkGrant::new(
            hosts.iter().map(|h| HostGrant::parse(h).unwrap_or_else(|e| panic!("{e}"))).collect::<Vec<_>>(),
        )
    }

    #[test]
    fn a_component_looks_up_granted_names_or_any_name_under_any_public_address() {
        let named = network(&["calendar.example.com:443", "127.0.0.1:9"]);
        assert!(named.name_lookup() && named.may_look_up("Calendar.Example.com.") && !named.may_look_up("x.example"));
        let literal = network(&["127.0.0.1:9"]);
        assert!(!literal.name_lookup() && literal.may_look_up("127.0.0.1"), "a literal needs no lookup");
        // Names under a domain open nothing to a component, so no lookup either.
        let under = network(&["*.example.com:443"]);
        assert!(!under.name_lookup() && !under.may_look_up("api.example.com"));
        let any = network(&["*:443"]);
        assert!(any.name_lookup() && any.may_look_up("anything.example.net"));
    }

    #[test]
    fn well_formed_grants_pass() {
        let grants = Grants::none()
            .with_dir(DirGrant::read_write("/srv/a", "/data"))
            .with_dir(DirGrant::read_only("/srv/b", "/config/app"));
        assert_eq!(grants.check(), Ok(()));
        assert_eq!(Grants::default().check(), Ok(()));
    }

    #[test]
    fn malformed_guest_paths_are_refused_naming_them() {
        for guest in ["data", "/", "/data/", "/data/../etc", "/./data", "//data", "/da\0ta", "/data//x", ""] {
            let err = Grants::none().with_dir(DirGrant::read_only("/srv", guest)).check().unwrap_err().to_string();
            assert!(err.contains(&format!("{guest:?}")), "{guest:?}: {err}");
        }
    }

    #[test]
    fn relative_host_paths_and_overlapping_guest_paths_are_refused() {
        let err = Grants::none().with_dir(DirGrant::read_only("data", "/data")).check().unwrap_err().to_string();
        assert!(err.contains("not absolute"), "{err}");
        let overlap =
            Grants::none().with_dir(DirGrant::read_only("/a", "/data")).with_dir(DirGrant::read_only("/b", "/data/x"));
        assert!(overlap.check().unwrap_err().to_string().contains("overlap"));
        let same =
            Grants::none().with_dir(DirGrant::read_only("/a", "/data")).with_dir(DirGrant::read_only("/b", "/data"));
        assert!(same.check().unwrap_err().to_string().contains("overlap"));
        let siblings = Grants::none()
            .with_dir(DirGrant::read_only("/a", "/data"))
            .with_dir(DirGrant::read_only("/b", "/database"));
        assert_eq!(siblings.check(), Ok(()));
    }
}
