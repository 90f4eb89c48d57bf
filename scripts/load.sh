#!/usr/bin/env bash
# The load tests and their figures: 64 concurrent HTTP clients of four callers against
# `wasmgate serve --http` on loopback (3,200 calls, a budget that trips for one caller,
# a reload halfway; p50, p99, calls/s, the gateway's memory and open files before and
# after; also part of the test suite), and 10,000 sequential calls over stdio (no
# growth in memory or open files; `#[ignore]`d, too long for the suite). Both are in
# host/cli/tests/load.rs; they print their figures, which go in docs/PERFORMANCE.md
# ("Load").
#
#   scripts/load.sh              # debug build
#   LOAD_RELEASE=1 scripts/load.sh   # release build (faster figures, longer build)
set -euo pipefail
cd "$(dirname "$0")/.."

profile=()
if [[ -n "${LOAD_RELEASE:-}" ]]; then
    profile=(--release)
fi

cargo test -p wasmgate-cli "${profile[@]}" --test load -- --include-ignored --nocapture --test-threads 1
