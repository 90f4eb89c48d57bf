#!/usr/bin/env bash
# Refreshes the console's screenshots in docs/console/ (docs/CONSOLE.md shows them): runs
# the console's browser test with WASMGATE_SCREENSHOTS pointing there. The test suite
# runs the same test with its screenshots in a temporary directory, so a test run never
# rewrites tracked files.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/install-peers.sh console
WASMGATE_SCREENSHOTS="$PWD/docs/console" cargo test --locked -p wasmgate-cli --test console_browser
echo "screenshots: docs/console/*.png refreshed" >&2
