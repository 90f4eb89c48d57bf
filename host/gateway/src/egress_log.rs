//! A provider's egress in the audit log, without letting a flood fill it.
//!
//! Every connection and lookup a provider makes is accounted for. While the provider
//! stays under [`RATE`] (after a [`BURST`]), each has a record of its own (`egress`).
//! Beyond it, they are coalesced: one `egress_summary` per kind, host, port and
//! outcome (count, bytes, first and last time), written every [`FLUSH`] and when the
//! provider stops. So a server that opens and closes connections in a loop costs the
//! log a bounded number of records per interval, and nothing is dropped silently.
//!
//! A provider whose refused connections and lookups go over [`REFUSED_RATE`] a second
//! (after [`REFUSED_BURST`]) is probing for a way out, or broken: it is withheld
//! ([`OnFlood`]), with one `warning` record saying why, and its egress is still
//! accounted for until it has stopped.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use wasmgate_audit::{AuditLog, Entry, Event};
use wasmgate_egress::{EgressKind, EgressObserver, EgressRecord};

/// Records a provider writes one by one at once, before the rate applies.
pub(crate) const BURST: f64 = 100.0;
/// Records a provider writes one by one each second, after its burst.
pub(crate) const RATE: f64 = 20.0;
/// How often coalesced records are written.
pub(crate) const FLUSH: Duration = Duration::from_secs(5);
/// Refused connections and lookups a provider may have at once, before the rate applies.
pub(crate) const REFUSED_BURST: f64 = 500.0;
/// Refused connections and lookups a provider may have each second, after its burst.
pub(crate) const REFUSED_RATE: f64 = 10.0;

/// What withholds a provider that goes over the rate of refusals: set once the provider
/// runs, called at most once, with why.
#[derive(Clone, Default)]
pub(crate) struct OnFlood(Arc<OnceLock<Withhold>>);

/// Withholds a provider, saying why.
type Withhold = Box<dyn Fn(&str) + Send + Sync>;

impl OnFlood {
    /// Sets what withholds the provider (the first setting stays).
    pub(crate) fn set(&self, withhold: impl Fn(&str) + Send + Sync + 'static) {
        let _ = self.0.set(Box::new(withhold));
    }

    fn call(&self, why: &str) {
        if let Some(withhold) = self.0.get() {
            withhold(why);
        }
    }
}

impl std::fmt::Debug for OnFlood {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnFlood").field("set", &self.0.get().is_some()).finish()
    }
}

/// A provider's refusals against [`REFUSED_RATE`].
#[derive(Debug)]
struct Refusals {
    tokens: f64,
    at: Instant,
    count: u64,
    since: Instant,
    /// Whether the provider went over the rate (it is withheld once).
    over: bool,
    on_flood: OnFlood,
}

impl Refusals {
    /// Counts one refusal; the reason to withhold the provider, the first time it goes
    /// over the rate.
    fn count(&mut self, provider: &str) -> Option<String> {
        let now = Instant::now();
        self.count += 1;
        self.tokens = (self.tokens + now.duration_since(self.at).as_secs_f64() * REFUSED_RATE).min(REFUSED_BURST);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return None;
        }
        if std::mem::replace(&mut self.over, true) {
            return None;
        }
        Some(format!(
            "provider {provider} is withheld: {} refused connections or lookups in {:.1} s, over the rate of \
             {REFUSED_RATE} a second after {REFUSED_BURST}: it is probing for a way out or broken; it starts again \
             when the gateway is reloaded or restarted (grant what it needs in the policy, or fix it, first)",
            self.count,
            now.duration_since(self.since).as_secs_f64()
        ))
    }
}

/// What is coalesced together.
type Key = (EgressKind, String, u16, bool);

/// Connections (or lookups) of one key, coalesced.
#[derive(Debug)]
struct Coalesced {
    refused: Option<String>,
    count: u64,
    bytes_up: u64,
    bytes_down: u64,
    first_ms: u64,
    last_ms: u64,
}

/// One provider's account.
#[derive(Debug)]
struct Account {
    audit: Arc<AuditLog>,
    provider: String,
    tokens: f64,
    at: Instant,
    held: BTreeMap<Key, Coalesced>,
    flushed: Instant,
    refusals: Refusals,
}

impl Account {
    /// Takes `record`: its own record while under the rate, else coalesced.
    fn take(&mut self, record: EgressRecord) {
        if record.refused.is_some()
            && let Some(why) = self.refusals.count(&self.provider)
        {
            self.write(Event::Warning { message: why.clone() });
            self.refusals.on_flood.call(&why);
        }
        let now = Instant::now();
        self.tokens = (self.tokens + now.duration_since(self.at).as_secs_f64() * RATE).min(BURST);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            self.write(one(record));
        } else {
            self.hold(record);
        }
        if !self.held.is_empty() && now.duration_since(self.flushed) >= FLUSH {
            self.flush();
        }
    }

    fn hold(&mut self, record: EgressRecord) {
        let at = unix_ms(SystemTime::now());
        let key = (record.kind, record.host, record.port, record.refused.is_some());
        let held = self.held.entry(key).or_insert_with(|| Coalesced {
            refused: record.refused,
            count: 0,
            bytes_up: 0,
            bytes_down: 0,
            first_ms: at,
            last_ms: at,
        });
        held.count += 1;
        held.bytes_up = held.bytes_up.saturating_add(record.bytes_up);
        held.bytes_down = held.bytes_down.saturating_add(record.bytes_down);
        held.last_ms = at;
    }

    /// Writes what is held, one `egress_summary` per key.
    fn flush(&mut self) {
        self.flushed = Instant::now();
        let held = std::mem::take(&mut self.held);
        let entries = held.into_iter().map(|((kind, host, port, _), c)| Event::EgressSummary {
            kind: kind_of(kind),
            host,
            port,
            refused: c.refused,
            count: c.count,
            bytes_up: c.bytes_up,
            bytes_down: c.bytes_down,
            first_ms: c.first_ms,
            last_ms: c.last_ms,
        });
        for event in entries {
            self.write(event);
        }
    }

    fn write(&self, event: Event) {
        let mut entry = Entry::log(event);
        entry.provider = Some(self.provider.clone());
        if let Err(e) = self.audit.record_later([entry]) {
            tracing::error!(error = %e, provider = %self.provider, "audit log cannot be written");
        }
    }
}

impl Drop for Account {
    /// The provider stopped: what is held is written now.
    fn drop(&mut self) {
        if !self.held.is_empty() {
            self.flush();
        }
    }
}

/// The observer that writes provider `name`'s egress to `audit` and withholds it through
/// `on_flood` (see the module docs). Inside a tokio runtime, a task writes what is held
/// every [`FLUSH`] while the provider lives; the last of it is written when the observer
/// is dropped.
pub(crate) fn observer(audit: &Arc<AuditLog>, name: &str, on_flood: OnFlood) -> EgressObserver {
    let now = Instant::now();
    let refusals = Refusals { tokens: REFUSED_BURST, at: now, count: 0, since: now, over: false, on_flood };
    let account = Arc::new(Mutex::new(Account {
        audit: Arc::clone(audit),
        provider: name.to_owned(),
        tokens: BURST,
        at: Instant::now(),
        held: BTreeMap::new(),
        flushed: Instant::now(),
        refusals,
    }));
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(flusher(Arc::downgrade(&account)));
    }
    Arc::new(move |record: EgressRecord| account.lock().unwrap_or_else(PoisonError::into_inner).take(record))
}

/// Writes what `account` holds every [`FLUSH`], until it is gone.
async fn flusher(account: Weak<Mutex<Account>>) {
    loop {
        tokio::time::sleep(FLUSH).await;
        let Some(account) = account.upgrade() else { return };
        let mut account = account.lock().unwrap_or_else(PoisonError::into_inner);
        if !account.held.is_empty() {
            account.flush();
        }
    }
}

/// One record's own event.
fn one(record: EgressRecord) -> Event {
    Event::Egress {
        kind: kind_of(record.kind),
        host: record.host,
        port: record.port,
        address: record.address.map(|a| a.to_string()),
        refused: record.refused,
        bytes_up: record.bytes_up,
        bytes_down: record.bytes_down,
        duration_ms: u64::try_from(record.duration.as_millis()).unwrap_or(u64::MAX),
    }
}

/// `connect` or `lookup`; nothing for the proxy, as its records always were.
fn kind_of(kind: EgressKind) -> Option<String> {
    (kind != EgressKind::Proxied).then(|| kind.as_str().to_owned())
}

fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use wasmgate_audit::Options;

    use super::*;

    fn refused(n: u16) -> EgressRecord {
        EgressRecord {
            kind: EgressKind::Proxied,
            host: "evil.example".into(),
            port: 443 + n % 2,
            refused: Some("evil.example is not a granted host".into()),
            ..EgressRecord::default()
        }
    }

    #[test]
    fn a_flood_of_connections_writes_a_bounded_number_of_records_and_counts_every_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let audit = Arc::new(AuditLog::open(&path, Options::default()).unwrap());
        let flood = OnFlood::default();
        let withheld = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&withheld);
        flood.set(move |why| seen.lock().unwrap().push(why.to_owned()));
        let observer = observer(&audit, "churn", flood);
        for n in 0..10_000 {
            observer(refused(n));
        }
        drop(observer);
        Arc::try_unwrap(audit).unwrap().close().unwrap();
        let records: Vec<serde_json::Value> =
            std::fs::read_to_string(&path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let own = records.iter().filter(|r| r["event"] == "egress").count();
        let summaries: Vec<_> = records.iter().filter(|r| r["event"] == "egress_summary").collect();
        // The burst, a few more as the rate refills while the loop runs, then summaries:
        // one per host, port and outcome for what was held when the observer was dropped.
        assert!((100..200).contains(&own), "{own} records of their own");
        assert!(!summaries.is_empty() && summaries.len() <= 4, "{summaries:?}");
        let counted: u64 = summaries.iter().map(|s| s["count"].as_u64().unwrap()).sum();
        assert_eq!(own as u64 + counted, 10_000, "every connection accounted for");
        assert!(summaries.iter().all(|s| s["provider"] == "churn" && s["refused"].is_string()), "{summaries:?}");

        // Over the rate of refusals: withheld once, and one record says so.
        let withheld = withheld.lock().unwrap().clone();
        assert_eq!(withheld.len(), 1, "{withheld:?}");
        assert!(withheld[0].starts_with("provider churn is withheld: 5"), "{withheld:?}");
        assert!(withheld[0].contains("refused connections or lookups in"), "{withheld:?}");
        let warnings: Vec<_> = records.iter().filter(|r| r["event"] == "warning").collect();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(warnings[0]["message"], withheld[0].as_str());
        assert_eq!(warnings[0]["provider"], "churn");
    }

    #[test]
    fn refusals_under_the_rate_withhold_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let audit = Arc::new(AuditLog::open(&dir.path().join("audit.jsonl"), Options::default()).unwrap());
        let flood = OnFlood::default();
        let withheld = Arc::new(Mutex::new(0));
        let seen = Arc::clone(&withheld);
        flood.set(move |_| *seen.lock().unwrap() += 1);
        let observer = observer(&audit, "retrying", flood);
        for n in 0..REFUSED_BURST as u16 {
            observer(refused(n));
        }
        assert_eq!(*withheld.lock().unwrap(), 0, "the burst is allowed");
        // Past it at once, the provider is over the rate within a few (the rate refills
        // one for each 100 ms the loop takes).
        for n in 0..100 {
            observer(refused(n));
        }
        assert_eq!(*withheld.lock().unwrap(), 1, "over the rate, withheld once");
    }
}
