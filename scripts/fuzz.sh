#!/usr/bin/env bash
# Runs each cargo-fuzz target for a fixed time (default 180 s each) and
# leaves any crash in fuzz/artifacts/<target>/. Not part of CI: a crash found
# here becomes a regression test in the crate it hit.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# cargo-fuzz needs nightly compiler flags; RUSTC_BOOTSTRAP=1 lets the stable
# toolchain accept them.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-180}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(classify)

command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz

for target in "${targets[@]}"; do
    echo "== fuzzing $target for ${seconds}s" >&2
    mkdir -p "fuzz/corpus/$target"
    RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir fuzz "$target" "fuzz/corpus/$target" host/protocol/tests/golden -- \
        -max_total_time="$seconds" -max_len=65536 -print_final_stats=1
done
