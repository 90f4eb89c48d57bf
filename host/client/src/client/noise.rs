//! Counts of what a server sends that the client drops or only notes (duplicate and
//! stray responses, malformed messages, tool-list changes, server requests beyond the
//! limit). Each kind is logged at its 1st, 2nd, 4th, 8th... occurrence with the count
//! so far, so a server cannot make the gateway's log grow with its own output; its
//! stderr has a budget of its own (`transport::stderr`).

use std::sync::atomic::{AtomicU64, Ordering};

/// One kind of noise.
#[derive(Debug, Default)]
pub(crate) struct Tally(AtomicU64);

impl Tally {
    /// Counts one; the count so far when this one is to be logged.
    pub(crate) fn count(&self) -> Option<u64> {
        let n = self.0.fetch_add(1, Ordering::Relaxed).saturating_add(1);
        n.is_power_of_two().then_some(n)
    }
}

/// Every kind, per connection.
#[derive(Debug, Default)]
pub(crate) struct Noise {
    pub(crate) server_requests_dropped: Tally,
    pub(crate) duplicate_responses: Tally,
    pub(crate) stray_responses: Tally,
    pub(crate) idless_errors: Tally,
    pub(crate) malformed: Tally,
    pub(crate) list_changes: Tally,
}

#[cfg(test)]
mod tests {
    use super::Tally;

    #[test]
    fn a_kind_is_logged_at_powers_of_two() {
        let tally = Tally::default();
        let logged: Vec<u64> = (0..1000).filter_map(|_| tally.count()).collect();
        assert_eq!(logged, [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]);
    }
}
