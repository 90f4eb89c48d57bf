//! Staying awake for a moment before `serve`'s runtime sleeps (`--spin-us`).
//!
//! A call through the gateway crosses two more process boundaries than a direct one:
//! the gateway reads the request, forwards it, waits for the upstream, and answers.
//! Each time the runtime runs out of work it sleeps in `epoll_wait`, and on a VM the
//! wake-up that follows (a halted vCPU woken by an interrupt) costs tens of
//! microseconds: most of a small call's time through the gateway (docs/PERFORMANCE.md).
//!
//! So before a worker parks, it first polls the runtime's epoll descriptors, without
//! taking any event, for up to a short budget. When what it waits for (the upstream's
//! answer, the client's next request, another thread's wake) arrives within the budget,
//! `epoll_wait` then returns at once and the thread never sleeps. It costs CPU only
//! right after work: an idle gateway spins once, for the budget, and then sleeps as
//! before. Between polls the thread yields, one thread spins at a time, and on a single
//! core nothing spins at all. `serve` spins only over stdio, on its current-thread
//! runtime (see [`runtime`] for why not on a multi-threaded one).
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
/// [`MAX_BUDGET`], none on a single core). The [`Spin`] says whether it found what to poll.
///
/// Call it before any other thread of the process can open or close descriptors (in
/// `main`, before the runtime starts anything): the epoll descriptors are told apart from
/// others by what `/proc/self/fd` lists before and after the build. The spin is meant for
/// a current-thread runtime: a multi-threaded one parks a worker while it still counts as
/// searching, so tasks woken from other threads would wait until the spin ends.
pub fn runtime(builder: Builder, budget: Duration) -> io::Result<(Runtime, Arc<Spin>)> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    build(builder, effective_budget(budget, cores))
}

/// [`runtime`] with exactly `budget`.
fn build(mut builder: Builder, budget: Duration) -> io::Result<(Runtime, Arc<Spin>)> {
    let before = if budget.is_zero() { BTreeSet::new() } else { eventpolls() };
    let shared = Arc::new(std::sync::OnceLock::<Arc<Spin>>::new());
    let hook = shared.clone();
    let runtime = builder
        .enable_all()
        .on_thread_park(move || {
            if let Some(spin) = hook.get() {
                spin.before_park();
            }
        })
        .build()?;
    let epolls = if budget.is_zero() { Vec::new() } else { adopt(&before, &eventpolls()) };
    let spin = Arc::new(Spin {
        epolls,
        budget,
        spinning: AtomicBool::new(false),
        woke_in_time: AtomicU64::new(0),
        ran_out: AtomicU64::new(0),
    });
    // Set once, right here; the hook does nothing until then.
    let _ = shared.set(spin.clone());
    Ok((runtime, spin))
}

/// The budget to spin for: at most [`MAX_BUDGET`], and none on a single core, where the
/// spinning thread would only take time from the process it waits for.
fn effective_budget(asked: Duration, cores: usize) -> Duration {
    if cores < 2 { Duration::ZERO } else { asked.min(MAX_BUDGET) }
}

/// The park hook's state: what to poll, for how long, and whether a thread spins now.
#[derive(Debug)]
pub struct Spin {
    epolls: Vec<OwnedFd>,
    budget: Duration,
    spinning: AtomicBool,
    /// Spins that ended because the runtime had an event, and that ran out of budget.
    woke_in_time: AtomicU64,
    ran_out: AtomicU64,
}

impl Spin {
    /// Whether parking spins at all.
    pub fn is_on(&self) -> bool {
        !self.epolls.is_empty()
    }

    /// Called before a worker parks: returns when the runtime has an event ready, when
    /// the budget is spent, or at once when another thread is spinning or nothing spins.
    fn before_park(&self) {
        if !self.is_on() || self.spinning.swap(true, Ordering::Acquire) {
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
        build(Builder::new_current_thread(), budget).unwrap()
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
        rt.block_on(async { tokio::time::sleep(Duration::from_millis(20)).await });
        assert!(counts(&spin).1 >= 1);

        // A zero budget (asked for, or on a single core) never looks for the descriptors
        // and never spins.
        let (rt, spin) = runtime(Builder::new_current_thread(), Duration::ZERO).unwrap();
        assert!(!spin.is_on());
        rt.block_on(async { tokio::time::sleep(Duration::from_millis(1)).await });
        assert_eq!(counts(&spin), (0, 0));
    }

    #[test]
    fn a_second_thread_does_not_spin_while_one_does() {
        let (never_readable, _writer) = std::io::pipe().unwrap();
        let spin = Spin {
            epolls: vec![OwnedFd::from(never_readable)],
            budget: Duration::from_millis(10),
            spinning: AtomicBool::new(true),
            woke_in_time: AtomicU64::new(0),
            ran_out: AtomicU64::new(0),
        };
        spin.before_park();
        assert_eq!(counts(&spin), (0, 0), "spun while another thread held the turn");
        spin.spinning.store(false, Ordering::Release);
        spin.before_park();
        assert_eq!(counts(&spin), (0, 1), "nothing was ready, so the spin ran out");
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
