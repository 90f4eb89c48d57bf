//! The data-flow memory's two costs on a call's path: remembering the values of a 4 KB
//! result, and checking a call with 4 KB of arguments against a context holding 4,096
//! remembered values.
//!
//! Run with `cargo bench -p wasmgate-guard --bench provenance`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{BatchSize, Criterion};
use serde_json::json;
use wasmgate_guard::{Marks, Provenance, Source};

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

/// Arguments of about 4 KB: a message body with a few addresses, and fields.
fn arguments_4kb() -> serde_json::Value {
    let body = "Dear team, the minutes are attached; please review the action items before Friday. ".repeat(50);
    json!({"to": ["bob@example.com", "carol@example.org"], "subject": "Minutes of the weekly sync", "body": body, "url": "https://docs.example/minutes/42"})
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    let result = result_4kb();
    criterion.bench_function("extract the values of a 4 KB result", |b| b.iter(|| wasmgate_policy::extract(&result)));
    criterion.bench_function("locate the findings of a 4 KB result", |b| b.iter(|| wasmgate_policy::locate(&result)));
    criterion.bench_function("detect in a 4 KB result", |b| b.iter(|| wasmgate_policy::detect(&result)));
    // As the guard remembers it: located only when the detector flagged it.
    let marks = Marks { detected: !wasmgate_policy::detect(&result).is_empty(), ..Marks::default() };
    criterion.bench_function("remember a 4 KB result", |b| {
        b.iter_batched(
            Provenance::default,
            |memory| {
                memory.remember(
                    "ctx",
                    Source { provider: "cal".into(), tool: "list".into(), record: Some(1) },
                    &result,
                    None,
                    marks,
                )
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
}
