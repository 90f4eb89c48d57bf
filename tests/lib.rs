//! End-to-end tests of wasmgate: hostile formatter components against the sandbox
//! (`hostile_formatters.rs`), the one text screening against the host's and the guests'
//! uses (`text_safety.rs`), and the checks that keep the workspace's seams as
//! docs/ARCHITECTURE.md describes them (`seams.rs`). The library itself is empty: what
//! tests share is `wasmgate-testing`.
