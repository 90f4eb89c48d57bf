//! The json-text formatter in the sandbox (fresh instance per call, limits
//! on) against the same rendering code compiled natively, side by side in one
//! run; throughput on one and two threads; and loading a precompiled
//! component against compiling it.
//!
//! Run with `cargo bench -p wasmgate-sandbox --bench formatter`. After
//! criterion's own report, a summary prints the ratios from this run's
//! medians (read back from criterion's estimates).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput};
use serde_json::json;
use wasmgate_guests::{ECHO_TOOLS_PATH, JSON_TEXT};
use wasmgate_sandbox::{CallLimits, FormatRequest, Formatter, Grants, Sandbox, SandboxConfig, ToolProvider};

const SIZES: [(&str, usize); 3] = [("200B", 200), ("10KB", 10_000), ("1MB", 1_000_000)];

/// A calendar-like tool result whose JSON text is about `target` bytes.
fn result_of_size(target: usize) -> FormatRequest {
    let event = |i: usize| json!({"title": format!("Meeting {i}"), "start": "09:00", "attendees": ["ana", "bo"], "room": {"name": "Nord", "floor": 2}});
    let per_event = event(0).to_string().len() + 1;
    let events: Vec<_> = (0..(target / per_event).max(1)).map(event).collect();
    let structured = json!({"date": "2026-12-02", "events": events});
    let structured = structured.to_string();
    FormatRequest {
        tool_name: "calendar_query".into(),
        provider: "calendar".into(),
        content: json!([{"type": "text", "text": "Your agenda"}]).to_string(),
        structured_content: Some(structured),
        is_error: false,
    }
}

fn native(request: &FormatRequest, limits: &CallLimits) -> String {
    json_text::render::render(json_text::render::Input {
        content: &request.content,
        structured: request.structured_content.as_deref(),
        is_error: request.is_error,
        max_output_bytes: limits.output_bytes,
    })
    .unwrap()
}

fn limits() -> CallLimits {
    // The default limits, with room for the 1 MB case's output.
    CallLimits { output_bytes: 4 << 20, ..CallLimits::default() }
}

fn bench_sizes(c: &mut Criterion, formatter: &Formatter) {
    let mut group = c.benchmark_group("format");
    for (label, size) in SIZES {
        let request = result_of_size(size);
        let limits = limits();
        assert_eq!(formatter.format(request.clone()).unwrap(), native(&request, &limits), "sandbox and native differ");
        group.throughput(Throughput::Bytes(request.structured_content.as_ref().map_or(0, String::len) as u64));
        if size >= 1_000_000 {
            group.sample_size(30);
        }
        group.bench_with_input(BenchmarkId::new("native", label), &request, |b, r| b.iter(|| native(r, &limits)));
        group.bench_with_input(BenchmarkId::new("sandboxed", label), &request, |b, r| {
            b.iter_batched(|| r.clone(), |r| formatter.format(r).unwrap(), BatchSize::SmallInput)
        });
    }
    group.finish();
}

fn bench_threads(c: &mut Criterion, formatter: &Formatter) {
    let request = result_of_size(200);
    let mut group = c.benchmark_group("throughput_200B");
    for threads in [1usize, 2] {
        // One iteration = one call; `threads` threads share the iterations.
        group.bench_function(BenchmarkId::new("threads", threads), |b| {
            b.iter_custom(|iters| {
                let per_thread = iters.div_ceil(threads as u64);
                let start = Instant::now();
                std::thread::scope(|scope| {
                    for _ in 0..threads {
                        scope.spawn(|| {
                            for _ in 0..per_thread {
                                formatter.format(request.clone()).unwrap();
                            }
                        });
                    }
                });
                start.elapsed().mul_f64(iters as f64 / (per_thread * threads as u64) as f64)
            })
        });
    }
    group.finish();
}

fn bench_load(c: &mut Criterion, cache_dir: &Path) {
    let mut group = c.benchmark_group("load");
    group.sample_size(10);
    let compiling = Sandbox::new(SandboxConfig { max_concurrent_calls: 2, ..SandboxConfig::default() }).unwrap();
    group.bench_function("compile", |b| {
        b.iter(|| compiling.load_formatter("json-text", JSON_TEXT, CallLimits::default()).unwrap())
    });
    let cached = Sandbox::new(SandboxConfig {
        max_concurrent_calls: 2,
        cache_dir: Some(cache_dir.to_owned()),
        ..SandboxConfig::default()
    })
    .unwrap();
    cached.load_formatter("json-text", JSON_TEXT, CallLimits::default()).unwrap(); // fill the cache
    group.sample_size(50);
    group.bench_function("precompiled", |b| {
        b.iter(|| cached.load_formatter("json-text", JSON_TEXT, CallLimits::default()).unwrap())
    });
    // The raw wasmtime steps behind the two paths, without the cache's checksum,
    // the import linking and the trial instantiation that `load_formatter` adds.
    let engine = wasmtime::Engine::default();
    group.sample_size(10);
    group
        .bench_function("raw_compile", |b| b.iter(|| wasmtime::component::Component::new(&engine, JSON_TEXT).unwrap()));
    let artifact = wasmtime::component::Component::new(&engine, JSON_TEXT).unwrap().serialize().unwrap();
    group.sample_size(50);
    group.bench_function("raw_deserialize", |b| {
        // SAFETY: the artifact was serialized just above by this same engine.
        #[allow(unsafe_code)]
        b.iter(|| unsafe { wasmtime::component::Component::deserialize(&engine, &artifact) }.unwrap())
    });
    group.finish();
}

fn criterion_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/criterion")
}

/// The median of one benchmark in this run, from criterion's estimates file.
fn median(id: &str) -> Option<Duration> {
    let path = criterion_dir().join(id).join("new/estimates.json");
    let estimates: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    let nanos = estimates["median"]["point_estimate"].as_f64()?;
    Some(Duration::from_secs_f64(nanos / 1e9))
}

/// Native and sandboxed calls interleaved round by round, so that drift in
/// the machine's speed (this runs on a shared VM) hits both sides alike; the
/// ratio reported is the median of the per-round ratios.
fn interleaved(formatter: &Formatter) {
    println!("\n== interleaved rounds (median of per-round figures)");
    let limits = limits();
    for (label, size) in SIZES {
        let request = result_of_size(size);
        let (rounds, reps) = if size >= 1_000_000 { (40, 2) } else { (300, 20) };
        let mut ratios = Vec::with_capacity(rounds);
        let mut overheads = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let start = Instant::now();
            for _ in 0..reps {
                std::hint::black_box(native(&request, &limits));
            }
            let native_time = start.elapsed() / reps;
            let copies: Vec<FormatRequest> = (0..reps).map(|_| request.clone()).collect();
            let start = Instant::now();
            for copy in copies {
                std::hint::black_box(formatter.format(copy).unwrap());
            }
            let sandboxed_time = start.elapsed() / reps;
            ratios.push(sandboxed_time.as_secs_f64() / native_time.as_secs_f64());
            overheads.push(sandboxed_time.saturating_sub(native_time));
        }
        ratios.sort_by(f64::total_cmp);
        overheads.sort();
        println!(
            "format {label:>5} ({} B): sandboxed/native {:.2}x, overhead {:.1?} (p10 {:.1?}, p90 {:.1?})",
            request.structured_content.as_ref().map_or(0, String::len),
            ratios[rounds / 2],
            overheads[rounds / 2],
            overheads[rounds / 10],
            overheads[rounds * 9 / 10],
        );
    }
}

fn print_summary() {
    println!("\n== summary (criterion medians of this run)");
    for (label, _) in SIZES {
        let (Some(native), Some(sandboxed)) =
            (median(&format!("format/native/{label}")), median(&format!("format/sandboxed/{label}")))
        else {
            continue;
        };
        println!(
            "format {label:>5}: native {native:>10.2?}  sandboxed {sandboxed:>10.2?}  ratio {:.2}x  overhead {:?}",
            sandboxed.as_secs_f64() / native.as_secs_f64(),
            sandboxed.saturating_sub(native)
        );
    }
    if let (Some(one), Some(two)) = (median("throughput_200B/threads/1"), median("throughput_200B/threads/2")) {
        println!(
            "throughput 200B: 1 thread {:.0} calls/s, 2 threads {:.0} calls/s, scaling {:.2}x",
            1.0 / one.as_secs_f64(),
            1.0 / two.as_secs_f64(),
            one.as_secs_f64() / two.as_secs_f64()
        );
    }
    for (what, slow, fast) in [
        ("load_formatter", "load/compile", "load/precompiled"),
        ("wasmtime alone", "load/raw_compile", "load/raw_deserialize"),
    ] {
        if let (Some(compile), Some(load)) = (median(slow), median(fast)) {
            println!(
                "load ({what}): compile {compile:.2?}, precompiled {load:.2?}, precompiled is {:.0}x faster",
                compile.as_secs_f64() / load.as_secs_f64()
            );
        }
    }
}

fn main() {
    let mut c = Criterion::default().output_directory(&criterion_dir()).configure_from_args();
    let sandbox = Sandbox::new(SandboxConfig::default()).unwrap();
    println!("pooling allocator: {}", sandbox.is_pooled());
    let formatter = sandbox.load_formatter("json-text", JSON_TEXT, limits()).unwrap();
    bench_sizes(&mut c, &formatter);
    bench_threads(&mut c, &formatter);
    let cache = tempfile::tempdir().unwrap();
    bench_load(&mut c, &cache.path().join("components"));
    c.final_summary();
    print_summary();
    interleaved(&formatter);
    resident();
}

/// Small calls before and after one large call in the same pool slot, for
/// several `SandboxConfig::keep_resident_bytes`: the pages a slot keeps
/// resident are reset after every later call, so a large result can slow down
/// every small call after it. The sandboxes are timed round by round, so
/// drift hits them alike. Covers json-text (no WASI) and echo-tools (a wasip2
/// component with the WASI adapter, two memories).
fn resident() {
    println!("\n== small calls before and after one large call, by keep_resident_bytes (median per call)");
    let sizes = [4 << 20, 256 << 10, 128 << 10, 64 << 10];
    let setups: Vec<(Formatter, ToolProvider)> = sizes
        .iter()
        .map(|&keep_resident_bytes| {
            let sandbox = Sandbox::new(SandboxConfig {
                keep_resident_bytes,
                max_concurrent_calls: 4,
                ..SandboxConfig::default()
            })
            .unwrap();
            let formatter = sandbox.load_formatter("json-text", JSON_TEXT, limits()).unwrap();
            let echo = sandbox.load_tool_provider_file("echo", Path::new(ECHO_TOOLS_PATH), limits()).unwrap();
            (formatter, echo)
        })
        .collect();
    let small = result_of_size(200);
    let large = result_of_size(1_000_000);
    let echo_args = |text: &str| json!({ "text": text }).to_string();
    let (small_echo, large_echo) = (echo_args("hello"), echo_args(&"x".repeat(1_000_000)));
    let calls = |(formatter, echo): &(Formatter, ToolProvider), reps: u32| {
        let start = Instant::now();
        for _ in 0..reps {
            std::hint::black_box(formatter.format(small.clone()).unwrap());
        }
        let format = start.elapsed() / reps;
        let start = Instant::now();
        for _ in 0..reps {
            std::hint::black_box(echo.call("echo", &small_echo, &Grants::none(), echo.limits()).unwrap());
        }
        (format, start.elapsed() / reps)
    };
    let mut phases = Vec::new();
    for phase in ["before", "after"] {
        if phase == "after" {
            for (formatter, echo) in &setups {
                formatter.format(large.clone()).unwrap();
                echo.call("echo", &large_echo, &Grants::none(), echo.limits()).unwrap();
            }
        }
        let mut times = vec![(Vec::new(), Vec::new()); setups.len()];
        for _ in 0..100 {
            for (setup, (format, echo)) in setups.iter().zip(&mut times) {
                let (f, e) = calls(setup, 10);
                format.push(f);
                echo.push(e);
            }
        }
        let medians: Vec<(Duration, Duration)> = times
            .into_iter()
            .map(|(mut f, mut e)| {
                f.sort();
                e.sort();
                (f[f.len() / 2], e[e.len() / 2])
            })
            .collect();
        phases.push(medians);
    }
    println!("keep_resident | json-text 200B: before, after a 1 MB result | echo-tools: before, after a 1 MB echo");
    for (i, size) in sizes.iter().enumerate() {
        let ((fb, eb), (fa, ea)) = (phases[0][i], phases[1][i]);
        println!("{:>9} KiB | {fb:>9.1?} {fa:>9.1?} | {eb:>9.1?} {ea:>9.1?}", size >> 10);
    }
}
