#!/usr/bin/env bash
# The main job: format an untrusted tool result through the WebAssembly
# sandbox and show what a model would read. Installs what it needs first.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
cargo build --quiet --locked -p wasmgate-cli

sample=examples/sample-result.json
printf '\n== A tool result as an untrusted provider sent it (%s):\n\n' "$sample"
cat "$sample"
printf '\n== What the model reads after the json-text formatter ran in a fresh sandbox instance:\n\n'
target/debug/wasmgate format --tool calendar_query --provider calendar "$sample"
printf '\n(ANSI escapes, a bidi override, a zero-width space and a BEL were removed; the image became a placeholder.)\n'
