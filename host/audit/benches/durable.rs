//! What a durable audit record costs beside its fsync: a call's `requested` and `started`
//! records submitted together to a log under `every-call` (the default) and waited for,
//! against `write` and `fdatasync` of the very bytes that log writes for them, by this
//! thread, to a file in the same directory; and the same records under `off` (no fsync).
//! Interleaved rounds; each figure is the median of the rounds' medians.
//!
//! `cargo bench -p wasmgate-audit --bench durable` (`WASMGATE_BENCH_DIR=/path` measures
//! on another file system; the default is a directory under cargo's target directory).

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;
use wasmgate_audit::{AuditLog, Durability, Entry, Event, Options};

const ROUNDS: usize = 7;
const CALLS: usize = 200;

/// A call's first two records, as the guard submits them.
fn records(call: usize) -> [Entry; 2] {
    let id = format!("c{call}");
    let arguments = json!({"text": "hello from the bench", "n": call});
    let requested = Event::Requested { verdict: "allow".into(), reason: "the policy allows `echo`".into(), arguments };
    [Entry::call(&id, "echo", "echo", requested), Entry::call(&id, "echo", "echo", Event::Started)]
}

fn median(mut samples: Vec<Duration>) -> f64 {
    samples.sort_unstable();
    samples[samples.len() / 2].as_secs_f64() * 1e6
}

fn main() {
    let base = std::env::var_os("WASMGATE_BENCH_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")), PathBuf::from);
    std::fs::create_dir_all(&base).unwrap_or_else(|e| panic!("{}: {e}", base.display()));
    let dir = tempfile::tempdir_in(&base).unwrap_or_else(|e| panic!("{}: {e}", base.display()));
    let open = |name: &str, durability| {
        AuditLog::open(&dir.path().join(name), Options { durability, ..Options::default() })
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let durable = open("every-call.jsonl", Durability::EveryCall);
    let off = open("off.jsonl", Durability::Off);
    // The bytes one submission writes: what `off` wrote for it.
    off.submit(records(0)).and_then(|p| p.wait()).unwrap_or_else(|e| panic!("{e}"));
    let payload = std::fs::read(dir.path().join("off.jsonl")).unwrap_or_else(|e| panic!("{e}"));
    let mut raw = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.path().join("raw.jsonl"))
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("{} bytes a submission, in {}", payload.len(), dir.path().display());

    let (mut fsync, mut every_call, mut unsynced, mut beside) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut call = 1;
    for _ in 0..ROUNDS {
        let (mut f, mut e, mut o) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..CALLS {
            let began = Instant::now();
            raw.write_all(&payload).and_then(|()| raw.sync_data()).unwrap_or_else(|e| panic!("{e}"));
            f.push(began.elapsed());
            let began = Instant::now();
            durable.submit(records(call)).and_then(|p| p.wait()).unwrap_or_else(|e| panic!("{e}"));
            e.push(began.elapsed());
            let began = Instant::now();
            off.submit(records(call)).and_then(|p| p.wait()).unwrap_or_else(|e| panic!("{e}"));
            o.push(began.elapsed());
            call += 1;
        }
        let (f, e) = (median(f), median(e));
        beside.push(e - f);
        fsync.push(f);
        every_call.push(e);
        unsynced.push(median(o));
    }
    // The median of the rounds' medians, and their range.
    let line = |what: &str, mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        println!("  {what:<52} {:.1} ({:.1}-{:.1})", v[v.len() / 2], v[0], v[v.len() - 1]);
    };
    println!("median µs per call, {ROUNDS} interleaved rounds of {CALLS} (range of the rounds' medians):");
    line("write + fdatasync of the same bytes, by this thread:", fsync);
    line("requested + started, every-call, waited for:", every_call);
    line("the same under off:", unsynced);
    line("every-call beside its fsync (target at most 60):", beside);
    println!("  fsyncs of the every-call log: {} for {} submissions", durable.fsyncs(), ROUNDS * CALLS);
    drop(durable);
    drop(off);
}
