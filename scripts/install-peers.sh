#!/usr/bin/env bash
# Installs the interop peers of the tests into <workspace>/target/peers/:
#   target/peers/venv   Python venv with the `mcp` SDK (the servers in host/gate/tests/fixtures/*.py)
#   target/peers/npm    @modelcontextprotocol/server-everything
# Idempotent: a peer whose pinned version is already installed is left alone.
# Needs python3 (>= 3.10) and npm, and the PyPI and npm registries.
set -euo pipefail

MCP_VERSION="2.3.0"
EVERYTHING_VERSION="2026.8.31"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
workspace="$(cd "$here/.." && pwd)"
peers="${WASMGATE_PEERS_DIR:-$workspace/target/peers}"
mkdir -p "$peers"

venv="$peers/venv"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$MCP_VERSION')" 2>/dev/null; then
    echo "install-peers: mcp $MCP_VERSION already in $venv"
else
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==$MCP_VERSION"
    echo "install-peers: installed mcp $MCP_VERSION into $venv"
fi

npm_dir="$peers/npm"
pkg_json="$npm_dir/node_modules/@modelcontextprotocol/server-everything/package.json"
if [ -f "$pkg_json" ] && grep -q "\"version\": \"$EVERYTHING_VERSION\"" "$pkg_json"; then
    echo "install-peers: server-everything $EVERYTHING_VERSION already in $npm_dir"
else
    mkdir -p "$npm_dir"
    npm install --silent --no-audit --no-fund --prefix "$npm_dir" "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION"
    echo "install-peers: installed server-everything $EVERYTHING_VERSION into $npm_dir"
fi
