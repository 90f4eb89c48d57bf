//! Keeping an instance's set-up and tear-down off its call's path, on the async API.
//!
//! A fresh instance per call costs an instantiation before the call and a store teardown
//! after it (the pool slot's memory reset). On a small call through `wasmgate serve` the
//! two instances of a WASM tool's call (the tool's and the formatter's) would take about
//! a fifth of the gateway's time (docs/PERFORMANCE.md). Both happen when the thread has
//! nothing more urgent to do:
//!
//! - a finished call's store is handed to a task that first yields ([`retire`]), so the
//!   answer goes out before the store is torn down;
//! - after a call, the component's next instance is made the same way and kept, at most
//!   one per component ([`Spare`]), so the next call starts with the call itself.
//!
//! A prepared instance is as fresh as one made on the call's path: it comes from the same
//! linked component under the same limits (and, for a tool, the same grants), nothing has
//! called into it, and it serves exactly one call. Its deadline starts again when a call
//! takes it, less what its start-up code took when it was made, so a call gets the same
//! deadline as one that made its instance on its path, whenever the instance was made.
//!
//! Both hold pool slots, so both draw on a [`Reserve`] the pool is sized for on top of
//! `max_concurrent_calls` ([`SandboxConfig::prepared_instances`](crate::SandboxConfig)):
//! they never take a slot from a call. Instances made ahead leave a quarter of it to
//! teardowns. With the reserve spent, or outside a tokio runtime, a store is torn down on
//! its call's path and no spare is made, exactly as before. On a multi-threaded runtime
//! another worker may run these tasks at once with the answer's write.

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use wasmtime::Store;

use crate::state::StoreState;

/// The pool slots set aside for prepared instances and stores waiting to be torn down.
#[derive(Debug)]
pub(crate) struct Reserve {
    free: AtomicU32,
    /// Slots instances made ahead leave to stores waiting for teardown: a quarter, so
    /// components that were called once and then sat idle, each keeping an instance
    /// ready, cannot put every teardown back on its call's path.
    for_teardown: u32,
}

impl Reserve {
    pub fn new(slots: u32) -> Arc<Self> {
        Arc::new(Reserve { free: AtomicU32::new(slots), for_teardown: slots / 4 })
    }

    /// One slot of the reserve, given back when the [`Held`] is dropped; `None` when
    /// every slot is held.
    pub fn hold(self: &Arc<Self>) -> Option<Held> {
        self.hold_leaving(0)
    }

    /// One slot for an instance made ahead: `None` also when only the slots left for
    /// teardown are free.
    pub fn hold_for_spare(self: &Arc<Self>) -> Option<Held> {
        self.hold_leaving(self.for_teardown)
    }

    fn hold_leaving(self: &Arc<Self>, left: u32) -> Option<Held> {
        let taken = self.free.fetch_update(Ordering::AcqRel, Ordering::Acquire, |free| {
            if free > left { free.checked_sub(1) } else { None }
        });
        taken.ok().map(|_| Held(Arc::clone(self)))
    }

    /// Slots not held now.
    #[cfg(test)]
    pub fn free(&self) -> u32 {
        self.free.load(Ordering::Acquire)
    }
}

/// One held slot of a [`Reserve`]. Drop it only after the store it stands for.
#[derive(Debug)]
pub(crate) struct Held(Arc<Reserve>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.free.fetch_add(1, Ordering::AcqRel);
    }
}

/// Tears `store` down after whatever the runtime has ready to run now (the answer the
/// call produced, above all): on a task that yields once before it drops the store. On
/// the spot when there is no runtime or the reserve is spent.
pub(crate) fn retire(reserve: &Arc<Reserve>, store: Store<StoreState>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
    let Some(held) = reserve.hold() else { return };
    let retired = Retired { _store: store, _held: held };
    after_ready(&runtime, async move { drop(retired) });
}

/// Runs `work` on `runtime` after what is ready there now: on a task that yields once
/// before it starts.
fn after_ready(runtime: &tokio::runtime::Handle, work: impl Future<Output = ()> + Send + 'static) {
    runtime.spawn(async move {
        tokio::task::yield_now().await;
        work.await;
    });
}

/// A store waiting to be torn down, and its slot of the reserve, dropped in this order
/// however the task holding them ends (even unpolled, when its runtime shuts down).
struct Retired {
    _store: Store<StoreState>,
    _held: Held,
}

/// A store and its instance, made before the call that will use them.
pub(crate) type Ready<I> = (Store<StoreState>, I);

/// At most one instance of a component, made ahead for its next call. `K` is what the
/// instance was made for (a tool call's grants and limits); only a call with the same
/// `K` takes it.
pub(crate) struct Spare<K, I> {
    slot: Mutex<Slot<K, I>>,
}

enum Slot<K, I> {
    Empty,
    /// A task is making it.
    Making,
    Ready {
        made_for: K,
        store: Store<StoreState>,
        instance: I,
        held: Held,
    },
}

impl<K, I> std::fmt::Debug for Spare<K, I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match &*self.slot.lock().unwrap_or_else(PoisonError::into_inner) {
            Slot::Empty => "empty",
            Slot::Making => "making",
            Slot::Ready { .. } => "ready",
        };
        f.debug_struct("Spare").field("slot", &state).finish()
    }
}

impl<K, I> Default for Spare<K, I> {
    fn default() -> Self {
        Spare { slot: Mutex::new(Slot::Empty) }
    }
}

impl<K: PartialEq + Send + 'static, I: Send + 'static> Spare<K, I> {
    /// The instance ready, if it was made for what `fits` accepts. One made for something
    /// else is dropped: it cannot serve this call, and the next one is made for this call's.
    pub fn take(&self, fits: impl FnOnce(&K) -> bool) -> Option<Ready<I>> {
        let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        if !matches!(&*slot, Slot::Ready { .. }) {
            return None;
        }
        let taken = std::mem::replace(&mut *slot, Slot::Empty);
        // Whatever is not handed out is torn down after the lock is let go.
        drop(slot);
        match taken {
            // The slot goes from the reserve to the call: `held` is given back.
            Slot::Ready { made_for, store, instance, held } if fits(&made_for) => {
                drop(held);
                Some((store, instance))
            }
            _ => None,
        }
    }

    /// Whether an instance is ready.
    #[cfg(test)]
    pub fn is_ready(&self) -> bool {
        matches!(&*self.slot.lock().unwrap_or_else(PoisonError::into_inner), Slot::Ready { .. })
    }

    /// Makes the next instance, on a task that yields first, when none is ready or being
    /// made, a runtime is at hand and the reserve has a slot: `make` is called only then,
    /// and gives what the instance is for and the future that makes it. An instance that
    /// fails to be made is not kept: the next call makes its own, on its path, and reports
    /// what went wrong.
    pub fn refill<F>(self: &Arc<Self>, reserve: &Arc<Reserve>, make: impl FnOnce() -> (K, F))
    where
        F: Future<Output = Option<Ready<I>>> + Send + 'static,
    {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        if !matches!(&*slot, Slot::Empty) {
            return;
        }
        let Some(held) = reserve.hold_for_spare() else { return };
        *slot = Slot::Making;
        drop(slot);
        // Made before the task, and moved into it: however the task ends (making fails,
        // or the runtime drops it, polled or not), the slot does not stay `Making`, or no
        // instance would ever be made again.
        let mut making = Making { spare: Arc::clone(self), ready: None };
        let (key, make) = make();
        // Boxed: an instantiation's future is kilobytes, which the runtime would copy
        // each time it moves the task's future or its stage.
        let make = Box::pin(make);
        after_ready(&runtime, async move {
            let began = Instant::now();
            if let Some((mut store, instance)) = make.await {
                // What start-up took counts against the call's deadline, as it does when
                // the instance is made on the call's path.
                store.data_mut().startup = began.elapsed();
                making.ready = Some(Slot::Ready { made_for: key, store, instance, held });
            }
            drop(making);
        });
    }
}

/// Puts the spare's slot back to empty, or to the instance made, when the making task
/// ends, even by being dropped.
struct Making<K, I> {
    spare: Arc<Spare<K, I>>,
    ready: Option<Slot<K, I>>,
}

impl<K, I> Drop for Making<K, I> {
    fn drop(&mut self) {
        let mut slot = self.spare.slot.lock().unwrap_or_else(PoisonError::into_inner);
        *slot = self.ready.take().unwrap_or(Slot::Empty);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
#[path = "prepared_tests.rs"]
mod component_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_hands_out_its_slots_once_and_takes_them_back() {
        let reserve = Reserve::new(2);
        let (a, b) = (reserve.hold(), reserve.hold());
        assert!(a.is_some() && b.is_some());
        assert!(reserve.hold().is_none(), "a third slot was handed out of two");
        drop(a);
        assert_eq!(reserve.free(), 1);
        assert!(reserve.hold().is_some());
        drop(b);
        assert_eq!(reserve.free(), 2);
        assert!(Reserve::new(0).hold().is_none());
    }

    #[test]
    fn instances_made_ahead_leave_a_quarter_of_the_reserve_to_teardowns() {
        let reserve = Reserve::new(8);
        let spares: Vec<_> = std::iter::from_fn(|| reserve.hold_for_spare()).collect();
        assert_eq!(spares.len(), 6);
        let teardowns: Vec<_> = std::iter::from_fn(|| reserve.hold()).collect();
        assert_eq!(teardowns.len(), 2);
        assert!(reserve.hold_for_spare().is_none() && reserve.hold().is_none());
        drop(teardowns);
        assert!(reserve.hold_for_spare().is_none(), "a spare took a slot left for teardowns");
        // A reserve too small to split leaves nothing aside.
        let small = Reserve::new(3);
        let held: Vec<_> = std::iter::from_fn(|| small.hold_for_spare()).collect();
        assert_eq!(held.len(), 3);
    }
}
