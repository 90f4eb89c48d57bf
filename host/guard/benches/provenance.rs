//! The data-flow memory's two costs on a call's path: remembering the values of a 4 KB
//! result (a dense listing, a value every 32 bytes, and prose), and checking a call with
//! 4 KB of arguments against a context holding 4,096 remembered values; and what one
//! full conversation takes in memory.
//!
//! Run with `cargo bench -p wasmgate-guard --bench provenance`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{BatchSize, Criterion};
use serde_json::json;
use wasmgate_guard::{Marks, Provenance, ProvenanceLimits, Source};

/// A calendar result of about 4 KB: events with titles, links, addresses and a room.
fn result_4kb() -> String {
    let event = |i: usize| {
        format!(
            "- 2026-12-0{} 09:00 Meeting {i} with ana{i}@example.com in room {i}, notes at https://wiki.example/m/{i}\n",
            i % 7 + 1
        )
    };
    let mut text = String::new();
    let mut i = 0;
    while text.len() < 4_000 {
        text.push_str(&event(i));
        i += 1;
    }
    text
}

/// A result of about 4 KB of prose with a few values: a message body.
fn prose_4kb() -> String {
    let mut text = String::new();
    let mut i = 0;
    while text.len() < 4_000 {
        text.push_str("The minutes of the weekly sync are attached; please review the action items before Friday ");
        text.push_str("and tell the team what you think of the new roadmap, which moves the launch by a week. ");
        if i % 8 == 0 {
            text.push_str(&format!("Questions go to pat{i}@example.com or https://wiki.example/sync/{i}.\n\n"));
        }
        i += 1;
    }
    text
}

/// Arguments of about 4 KB: a message body with a few addresses, and fields.
fn arguments_4kb() -> serde_json::Value {
    let body = "Dear team, the minutes are attached; please review the action items before Friday. ".repeat(50);
    json!({"to": ["bob@example.com", "carol@example.org"], "subject": "Minutes of the weekly sync", "body": body, "url": "https://docs.example/minutes/42"})
}

fn main() {
    let result = result_4kb();
    // As the guard remembers it: located only when the detector flagged it.
    let marks = Marks { detected: !wasmgate_policy::detect(&result).is_empty(), ..Marks::default() };
    if let Some(calls) = std::env::var("WASMGATE_BENCH_CALLS").ok().and_then(|n| n.parse::<u64>().ok()) {
        count_instructions(&result, marks, calls);
        return;
    }
    let mut criterion = Criterion::default().configure_from_args();
    criterion.bench_function("extract the values of a 4 KB result", |b| b.iter(|| wasmgate_policy::extract(&result)));
    criterion.bench_function("locate the findings of a 4 KB result", |b| b.iter(|| wasmgate_policy::locate(&result)));
    criterion.bench_function("detect in a 4 KB result", |b| b.iter(|| wasmgate_policy::detect(&result)));
    let accented = prose_4kb().replace("review", "révisez — ");
    criterion
        .bench_function("detect in 4 KB of prose, not all ASCII", |b| b.iter(|| wasmgate_policy::detect(&accented)));
    criterion.bench_function("remember a 4 KB result", |b| {
        b.iter_batched(
            Provenance::default,
            // The memory is returned, so that freeing it is not timed: a conversation's
            // memory outlives its calls.
            |memory| {
                let source = Source { provider: "cal".into(), tool: "list".into(), record: Some(1) };
                let remembered = memory.remember("ctx", source, &result, None, marks);
                (memory, remembered)
            },
            BatchSize::SmallInput,
        );
    });
    let prose = prose_4kb();
    criterion.bench_function("remember a 4 KB result of prose", |b| {
        b.iter_batched(
            Provenance::default,
            |memory| {
                let source = Source { provider: "mail".into(), tool: "read".into(), record: Some(1) };
                let remembered = memory.remember("ctx", source, &prose, None, Marks::default());
                (memory, remembered)
            },
            BatchSize::SmallInput,
        );
    });
    let memory = Provenance::default();
    let mut batch = 0;
    while memory.len("ctx") < 4_096 {
        let text: String =
            (0..64).map(|i| format!("user{batch}x{i}@example.com https://x{batch}.example/{i} ")).collect();
        memory.remember(
            "ctx",
            Source { provider: "cal".into(), tool: "list".into(), record: Some(batch) },
            &text,
            None,
            Marks::default(),
        );
        batch += 1;
    }
    let arguments = arguments_4kb();
    assert!(arguments.to_string().len() > 4_000);
    criterion.bench_function("check 4 KB of arguments against 4,096 values", |b| {
        b.iter(|| memory.carried("ctx", &arguments));
    });
    criterion.final_summary();
    memory_per_context();
}

/// Remembers the 4 KB listing `calls` times, each in a new memory, and nothing else: run
/// under `valgrind --tool=callgrind` with two counts, the difference of the instructions
/// over the difference of the counts is what one costs, a figure the VM's drifting speed
/// does not move.
fn count_instructions(result: &str, marks: Marks, calls: u64) {
    for record in 0..calls {
        let memory = Provenance::default();
        let source = Source { provider: "cal".into(), tool: "list".into(), record: Some(record) };
        std::hint::black_box(memory.remember("ctx", source, result, None, marks));
    }
}

/// The system allocator, counting the bytes allocated and not yet freed, so that what a
/// conversation's memory holds is measured exactly (the growth of resident memory hides
/// what the allocator reuses).
struct Counting;

static LIVE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

// SAFETY: every call goes to the system allocator with the caller's layout unchanged;
// the counter is bookkeeping only.
#[allow(unsafe_code)]
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), std::sync::atomic::Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is the system allocator's.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        LIVE.fetch_sub(layout.size(), std::sync::atomic::Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` above, that is from the system allocator.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Prints what one conversation full of values (the default 16,384) holds: the bytes
/// allocated while it is filled and still held after.
fn memory_per_context() {
    let limits = ProvenanceLimits::default();
    let memory = Provenance::new(limits);
    let before = LIVE.load(std::sync::atomic::Ordering::Relaxed);
    for batch in 0..limits.values / 64 {
        let text: String = (0..64).map(|i| format!("user{batch}x{i}@example.com ")).collect();
        let source = Source { provider: "cal".into(), tool: "list".into(), record: Some(batch as u64) };
        memory.remember("full", source, &text, None, Marks::default());
    }
    assert_eq!(memory.len("full"), limits.values);
    let held = LIVE.load(std::sync::atomic::Ordering::Relaxed).saturating_sub(before);
    println!(
        "memory of one conversation holding {} values: {:.2} MB ({} bytes a value)",
        limits.values,
        held as f64 / 1e6,
        held / limits.values
    );
}
