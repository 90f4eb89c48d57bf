#!/usr/bin/env bash
# Runs each cargo-fuzz target for a fixed time (default 180 s each) and
# leaves any crash in fuzz/artifacts/<target>/. Not part of CI: a crash found
# here becomes a regression test in the crate it hit, and the figures of a run
# go in docs/FUZZING.md.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# With no TARGET, every target runs in turn: classify, stdio_framing,
# policy_parser, formatter, values, detect. Each starts from its corpus (fuzz/corpus/<target>,
# kept between runs, not in git) and its seeds (see seeds_for below).
# libFuzzer's output goes to fuzz/target/logs/<target>.log; a summary of every
# target is printed at the end, and the script fails if any target found a crash.
#
# cargo-fuzz needs nightly compiler flags; RUSTC_BOOTSTRAP=1 lets the stable
# toolchain accept them.
set -euo pipefail
cd "$(dirname "$0")/.."

all_targets=(classify stdio_framing policy_parser formatter values detect)

seeds_for() {
    case "$1" in
        classify) echo host/protocol/tests/golden ;; # the protocol's golden messages
        stdio_framing | policy_parser | formatter | values | detect) echo "fuzz/seeds/$1" ;;
        *)
            echo "unknown target $1 (known: ${all_targets[*]})" >&2
            return 1
            ;;
    esac
}

seconds="${1:-180}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for target in "${targets[@]}"; do seeds_for "$target" >/dev/null; done

command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz

mkdir -p fuzz/target/logs
failed=()
for target in "${targets[@]}"; do
    echo "== fuzzing $target for ${seconds}s" >&2
    mkdir -p "fuzz/corpus/$target"
    log="fuzz/target/logs/$target.log"
    if ! RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir fuzz "$target" "fuzz/corpus/$target" "$(seeds_for "$target")" -- \
        -max_total_time="$seconds" -max_len=65536 -timeout=10 -print_final_stats=1 2>&1 | tee "$log" >&2; then
        failed+=("$target")
    fi
done

echo "== summary (${seconds}s each)" >&2
for target in "${targets[@]}"; do
    log="fuzz/target/logs/$target.log"
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]* ft: [0-9]* corp: [0-9]*/[0-9]*[a-zA-Z]*' "$log" | tail -1)
    echo "$target: ${runs:-?} executions, ${rate:-?} exec/s, ${cov:-no coverage line}" >&2
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "crash or error in: ${failed[*]} (inputs in fuzz/artifacts/<target>/)" >&2
    exit 1
fi
