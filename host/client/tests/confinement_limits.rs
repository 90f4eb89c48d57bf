//! Each resource limit of a confined server trips: CPU time, open files, file size
//! (memory and processes are in confinement_hostile.rs). The server is the hostile
//! fixture, with one limit lowered so the test trips it quickly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod confined;

use confined::hostile;
use serde_json::json;
use wasmgate_client::{ClientError, CloseReason};
use wasmgate_confine::ResourceLimits;

#[tokio::test]
async fn cpu_time_over_the_limit_kills_the_server() {
    let limits = ResourceLimits { cpu_seconds: Some(1), ..ResourceLimits::default() };
    let server = hostile(|c| c.limits(limits)).await;
    // `spin` never answers; the kernel ends it after one CPU second (the call is
    // bounded by the helper's timeout, so a missing limit fails instead of hanging).
    let error = server.call("spin", json!({})).await.unwrap_err();
    let ClientError::TransportClosed { reason: CloseReason::Exited { signal: Some(signal), .. } } = error else {
        panic!("expected a kill by signal, got {error:?}");
    };
    assert!(signal == 24 || signal == 9, "SIGXCPU or SIGKILL, got {signal}");
}

#[tokio::test]
async fn opening_more_files_than_the_limit_fails_with_emfile() {
    let limits = ResourceLimits { open_files: Some(32), ..ResourceLimits::default() };
    let server = hostile(|c| c.limits(limits)).await;
    let (ok, detail, _) = server.attack("open_files", json!({"cap": 10_000})).await;
    assert!(!ok && detail.starts_with("EMFILE"), "{detail}");
    server.assert_still_serving().await;
    server.client.close().await;
}

#[tokio::test]
async fn a_file_larger_than_the_limit_cannot_be_written() {
    let limits = ResourceLimits { file_size_bytes: Some(1 << 20), ..ResourceLimits::default() };
    let server = hostile(|c| c.limits(limits)).await;
    let (ok, detail, _) = server.attack("big_file", json!({"bytes": 4 << 20})).await;
    assert!(!ok && detail == "EFBIG", "{detail}");
    let written = std::fs::metadata(server.workdir().join("big.bin")).unwrap().len();
    assert!(written <= 1 << 20, "{written} bytes written");
    server.assert_still_serving().await;
    server.client.close().await;
}
