//! Staying awake for a moment before `serve`'s runtime sleeps (`--spin-us`).
//!
//! A call through the gateway crosses two more process boundaries than a direct one:
//! the gateway reads the request, forwards it, waits for the upstream, and answers.
//! Each time the runtime runs out of work it sleeps in `epoll_wait`, and on a VM the
//! wake-up that follows (a halted vCPU woken by an interrupt) costs tens of
//! microseconds: most of a small call's time through the gateway (docs/PERFORMANCE.md).
//!
//! So before a worker parks, it may first poll the runtime's epoll descriptors, without
//! taking any event, for up to a short budget. When what it waits for (the client's
//! next request, another thread's wake) arrives within the budget, `epoll_wait` then
//! returns at once and the thread never sleeps. Between polls the thread yields, one
//! thread spins at a time, and on a single core nothing spins at all. `serve` spins only
//! over stdio, on its current-thread runtime (see [`runtime`] for why not on a
//! multi-threaded one).
//!
//! It spins only when that is likely to pay, the way a guest kernel's halt-polling does:
//!
//! - only after a wait that ended within the budget (the last wait it could have spun
//!   in: events come close together, as a client's calls one after another do). After
//!   a longer one (an agent that thinks between calls) it sleeps at once, so an idle or
//!   slow client costs no CPU at all; a spin that runs out turns spinning off until a
//!   wait is short again.
//! - never while a request to an upstream server waits for its answer
//!   ([`wasmgate_client::awaiting_answers`]): the kernel may run that server on the core
//!   the gateway would spin on, and the server would then wait for the spinning thread
//!   to yield.
//!
//! tokio does not expose its epoll descriptor. It is found among the
//! `anon_inode:[eventpoll]` entries of `/proc/self/fd` that building the runtime added
//! (tokio keeps a duplicate of it for its signal driver, so there are two), and every one
//! of them is polled. Without `/proc`, or with none or more than [`MAX_EPOLLS`] new
//! entries, nothing spins and the runtime behaves as without the option.

use std::collections::BTreeSet;
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use tokio::runtime::{Builder, Runtime};

/// The most epoll descriptors building a runtime may add for spinning to be used.
const MAX_EPOLLS: usize = 4;
/// The longest budget. A timer due during a spin fires when the spin ends, so this is
/// also how late a timer can be; 10 ms of spinning already costs more than any wake-up.
pub const MAX_BUDGET: Duration = Duration::from_millis(10);

/// Builds `builder`'s runtime with a park hook that spins for up to `budget` (at most
/// [`MAX_BUDGET`], none on a single core), as the module says, never while `awaiting`
/// says something is awaited from an upstream. The [`Spin`] says whether it found what
/// to poll.
///
/// Call it before any other thread of the process can open or close descriptors (in
/// `main`, before the runtime starts anything): the epoll descriptors are told apart from
/// others by what `/proc/self/fd` lists before and after the build. The spin is meant for
/// a current-thread runtime: a multi-threaded one parks a worker while it still counts as
/// searching, so tasks woken from other threads would wait until the spin ends.
pub fn runtime(builder: Builder, budget: Duration, awaiting: fn() -> usize) -> io::Result<(Runtime, Arc<Spin>)> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    build(builder, effective_budget(budget, cores), awaiting)
}

/// [`runtime`] with exactly `budget`.
fn build(mut builder: Builder, budget: Duration, awaiting: fn() -> usize) -> io::Result<(Runtime, Arc<Spin>)> {
    let before = if budget.is_zero() { BTreeSet::new() } else { eventpolls() };
    let shared = Arc::new(std::sync::OnceLock::<Arc<Spin>>::new());
    let (park, unpark) = (shared.clone(), shared.clone());
    let runtime = builder
        .enable_all()
        .on_thread_park(move || {
            if let Some(spin) = park.get() {
                spin.before_park();
            }
        })
        .on_thread_unpark(move || {
            if let Some(spin) = unpark.get() {
                spin.after_unpark();
            }
        })
        .build()?;
    let epolls = if budget.is_zero() { Vec::new() } else { adopt(&before, &eventpolls()) };
    let spin = Arc::new(Spin::new(epolls, budget, awaiting));
    // Set once, right here; the hook does nothing until then.
    let _ = shared.set(spin.clone());
    Ok((runtime, spin))
}

/// The budget to spin for: at most [`MAX_BUDGET`], and none on a single core, where the
/// spinning thread would only take time from the process it waits for.
fn effective_budget(asked: Duration, cores: usize) -> Duration {
    if cores < 2 { Duration::ZERO } else { asked.min(MAX_BUDGET) }
}

/// [`Spin::parked_at`] when the wait under way does not count (none, or one while an
/// upstream's answer was awaited).
const NOT_TIMED: u64 = u64::MAX;

/// The park hook's state: what to poll, for how long, whether a thread spins now, and
/// whether the last wait it could have spun in was short.
#[derive(Debug)]
pub struct Spin {
    epolls: Vec<OwnedFd>,
    budget: Duration,
    spinning: AtomicBool,
    /// How many requests to upstream servers wait for an answer.
    awaiting: fn() -> usize,
    /// What [`parked_at`](Self::parked_at) counts from.
    base: Instant,
    /// When the wait under way began, in nanoseconds from `base`, or [`NOT_TIMED`].
    parked_at: AtomicU64,
    /// Whether the last timed wait ended within the budget: only then does the next spin.
    short: AtomicBool,
    /// Spins that ended because the runtime had an event, and that ran out of budget.
    woke_in_time: AtomicU64,
    ran_out: AtomicU64,
}

impl Spin {
    fn new(epolls: Vec<OwnedFd>, budget: Duration, awaiting: fn() -> usize) -> Self {
        Spin {
            epolls,
            budget,
            spinning: AtomicBool::new(false),
            awaiting,
            base: Instant::now(),
            parked_at: AtomicU64::new(NOT_TIMED),
            short: AtomicBool::new(false),
            woke_in_time: AtomicU64::new(0),
            ran_out: AtomicU64::new(0),
        }
    }

    /// Whether parking spins at all.
    pub fn is_on(&self) -> bool {
        !self.epolls.is_empty()
    }

    /// Nanoseconds since `base`.
    fn now(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(NOT_TIMED - 1)
    }

    /// Called before a worker parks: spins, when the last timed wait was short and no
    /// upstream's answer is awaited, until the runtime has an event ready or the budget
    /// is spent; returns at once when another thread is spinning or nothing spins.
    fn before_park(&self) {
        if !self.is_on() {
            return;
        }
        if (self.awaiting)() > 0 {
            self.parked_at.store(NOT_TIMED, Ordering::Relaxed);
            return;
        }
        self.parked_at.store(self.now(), Ordering::Relaxed);
        if !self.short.load(Ordering::Relaxed) || self.spinning.swap(true, Ordering::Acquire) {
            return;
        }
        let zero = Timespec { tv_sec: 0, tv_nsec: 0 };
        let until = Instant::now() + self.budget;
        let mut fds: Vec<_> = self.epolls.iter().map(|fd| PollFd::new(fd, PollFlags::IN)).collect();
        loop {
            match poll(&mut fds, Some(&zero)) {
                Ok(0) if Instant::now() < until => std::thread::yield_now(),
                Ok(0) => {
                    self.ran_out.fetch_add(1, Ordering::Relaxed);
                    break;
                }
                // Ready, or an error (nothing to gain by spinning on).
                _ => {
                    self.woke_in_time.fetch_add(1, Ordering::Relaxed);
                    break;
                }
            }
        }
        self.spinning.store(false, Ordering::Release);
    }

    /// Called when a worker wakes: a timed wait that ended within the budget (spun
    /// through, or slept) lets the next wait spin; a longer one does not.
    fn after_unpark(&self) {
        let began = self.parked_at.swap(NOT_TIMED, Ordering::Relaxed);
        if began != NOT_TIMED {
            let waited = Duration::from_nanos(self.now().saturating_sub(began));
            self.short.store(waited <= self.budget, Ordering::Relaxed);
        }
    }
}

/// A duplicate of each epoll descriptor in `after` that is not in `before`; none when
/// there are more than [`MAX_EPOLLS`] or one cannot be duplicated.
fn adopt(before: &BTreeSet<RawFd>, after: &BTreeSet<RawFd>) -> Vec<OwnedFd> {
    let added: Vec<RawFd> = after.difference(before).copied().collect();
    if added.len() > MAX_EPOLLS {
        return Vec::new();
    }
    let mut owned = Vec::with_capacity(added.len());
    for fd in added {
        // SAFETY: `fd` was listed as open just now by this thread, right after the runtime
        // that owns it was built and before anything could close it; it is borrowed only
        // to duplicate it, and the duplicate is ours.
        #[allow(unsafe_code)]
        let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
        match borrowed.try_clone_to_owned() {
            Ok(fd) => owned.push(fd),
            Err(_) => return Vec::new(),
        }
    }
    owned
}

/// The epoll descriptors this process has open, by `/proc/self/fd`; none without it.
fn eventpolls() -> BTreeSet<RawFd> {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else { return BTreeSet::new() };
    entries
        .filter_map(Result::ok)
        .filter(|e| std::fs::read_link(e.path()).is_ok_and(|target| target.as_os_str() == "anon_inode:[eventpoll]"))
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::io::Write as _;

    use tokio::io::AsyncReadExt as _;

    use super::*;

    fn current_thread(budget: Duration) -> (Runtime, Arc<Spin>) {
        build(Builder::new_current_thread(), budget, nothing_awaited).unwrap()
    }

    fn nothing_awaited() -> usize {
        0
    }

    fn one_awaited() -> usize {
        1
    }

    /// A spin on a descriptor that never becomes readable, whose last wait was short.
    fn never_ready(budget: Duration, awaiting: fn() -> usize) -> (Spin, std::io::PipeWriter) {
        let (never_readable, writer) = std::io::pipe().unwrap();
        let spin = Spin::new(vec![OwnedFd::from(never_readable)], budget, awaiting);
        spin.short.store(true, Ordering::Relaxed);
        (spin, writer)
    }

    fn counts(spin: &Spin) -> (u64, u64) {
        (spin.woke_in_time.load(Ordering::Relaxed), spin.ran_out.load(Ordering::Relaxed))
    }

    // Only this test builds runtimes, so no other test's runtime can appear in its
    // before-and-after listing of /proc/self/fd.
    #[test]
    fn the_runtime_stops_spinning_when_an_event_arrives_and_sleeps_when_none_does() {
        // A budget no test run comes near: the byte is written only once the runtime is
        // spinning, so a spin that ended did so because it saw the byte arrive.
        let (rt, spin) = current_thread(Duration::from_secs(120));
        assert!(spin.is_on(), "the runtime's epoll descriptors were not found");
        // A wait of a tenth of a second is short against two minutes: the runtime's
        // wake-up hook times it, and lets the next wait spin.
        let (tx, rx) = tokio::sync::oneshot::channel();
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            tx.send(()).unwrap();
        });
        rt.block_on(rx).unwrap();
        sender.join().unwrap();
        assert!(spin.short.load(Ordering::Relaxed), "the wait was not timed");
        let (mut mine, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let watched = spin.clone();
        let writer = std::thread::spawn(move || {
            while !watched.spinning.load(Ordering::Acquire) {
                std::hint::spin_loop();
            }
            mine.write_all(b"x").unwrap();
            mine
        });
        let got = rt.block_on(async move {
            theirs.set_nonblocking(true).unwrap();
            let mut theirs = tokio::net::UnixStream::from_std(theirs).unwrap();
            let mut byte = [0u8];
            theirs.read_exact(&mut byte).await.unwrap();
            byte[0]
        });
        let _mine = writer.join().unwrap();
        assert_eq!(got, b'x');
        let (woke, ran_out) = counts(&spin);
        assert!(woke >= 1 && ran_out == 0, "{woke} spins saw an event, {ran_out} ran out");

        // Nothing comes: the spin runs out and the runtime sleeps until its timer.
        let (rt, spin) = current_thread(Duration::from_micros(200));
        spin.short.store(true, Ordering::Relaxed);
        rt.block_on(async { tokio::time::sleep(Duration::from_millis(20)).await });
        assert!(counts(&spin).1 >= 1);

        // A zero budget (asked for, or on a single core) never looks for the descriptors
        // and never spins.
        let (rt, spin) = runtime(Builder::new_current_thread(), Duration::ZERO, nothing_awaited).unwrap();
        assert!(!spin.is_on());
        rt.block_on(async { tokio::time::sleep(Duration::from_millis(1)).await });
        assert_eq!(counts(&spin), (0, 0));
    }

    #[test]
    fn a_second_thread_does_not_spin_while_one_does() {
        let (spin, _writer) = never_ready(Duration::from_millis(10), nothing_awaited);
        spin.spinning.store(true, Ordering::Release);
        spin.before_park();
        assert_eq!(counts(&spin), (0, 0), "spun while another thread held the turn");
        spin.spinning.store(false, Ordering::Release);
        spin.before_park();
        assert_eq!(counts(&spin), (0, 1), "nothing was ready, so the spin ran out");
    }

    #[test]
    fn a_wait_within_the_budget_lets_the_next_spin_and_a_longer_one_does_not() {
        let (mut spin, _writer) = never_ready(Duration::from_secs(60), nothing_awaited);
        // The wait began two minutes ago: longer than the budget.
        spin.base = Instant::now().checked_sub(Duration::from_secs(180)).unwrap();
        spin.parked_at.store(0, Ordering::Relaxed);
        spin.after_unpark();
        assert!(!spin.short.load(Ordering::Relaxed));
        // So the next park sleeps at once (a spin would run out: nothing is readable).
        spin.before_park();
        assert_eq!(counts(&spin), (0, 0), "spun after a long wait");
        // That wait, ended at once, is short: the next one spins.
        spin.after_unpark();
        assert!(spin.short.load(Ordering::Relaxed));
        spin.budget = Duration::from_millis(1);
        spin.before_park();
        assert_eq!(counts(&spin), (0, 1), "did not spin after a short wait");
    }

    #[test]
    fn no_wait_for_an_upstreams_answer_spins_or_counts() {
        let (spin, _writer) = never_ready(Duration::from_millis(1), one_awaited);
        spin.before_park();
        assert_eq!(counts(&spin), (0, 0), "spun while an upstream's answer was awaited");
        // However long that wait, it says nothing of the next.
        assert_eq!(spin.parked_at.load(Ordering::Relaxed), NOT_TIMED);
        spin.short.store(false, Ordering::Relaxed);
        spin.after_unpark();
        assert!(!spin.short.load(Ordering::Relaxed));
    }

    #[test]
    fn the_budget_is_capped_and_a_single_core_never_spins() {
        let asked = Duration::from_micros(300);
        assert_eq!(effective_budget(asked, 2), asked);
        assert_eq!(effective_budget(Duration::from_secs(5), 8), MAX_BUDGET);
        assert_eq!(MAX_BUDGET, Duration::from_millis(10));
        assert_eq!(effective_budget(asked, 1), Duration::ZERO);
        assert_eq!(effective_budget(asked, 0), Duration::ZERO);
    }

    #[test]
    fn too_many_new_descriptors_turn_spinning_off() {
        let before = BTreeSet::from([0]);
        let after: BTreeSet<RawFd> = (0..=RawFd::try_from(MAX_EPOLLS).unwrap() + 1).collect();
        assert!(adopt(&before, &after).is_empty());
        assert!(adopt(&before, &before).is_empty());
    }
}
