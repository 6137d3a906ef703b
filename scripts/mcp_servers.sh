#!/usr/bin/env bash
# Install the real MCP servers the tests and scripts/bench_mcp.py talk to (loopback only):
#   - @modelcontextprotocol/server-everything (npm) into .mcp-peers/ (gitignored)
#   - mcp-server-time (PyPI) into the current Python environment
# Idempotent and fast when both are already there. Prints the paths as KEY=VALUE lines:
#   MCP_EVERYTHING_JS=/abs/.mcp-peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js
#   MCP_SERVER_TIME=/abs/path/to/mcp-server-time
# Usage: scripts/mcp_servers.sh [install|check]   (check: install nothing, exit 1 if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
EVERYTHING_VERSION=${MCP_EVERYTHING_VERSION:-2026.8.31}
PEERS=${MCP_PEERS_DIR:-$PWD/.mcp-peers}
JS="$PEERS/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
mode=${1:-install}

installed_version() {
  node -p "require('$PEERS/node_modules/@modelcontextprotocol/server-everything/package.json').version" \
    2>/dev/null || true
}

if [ "$(installed_version)" != "$EVERYTHING_VERSION" ] || [ ! -f "$JS" ]; then
  if [ "$mode" = check ]; then echo "server-everything is not installed in $PEERS" >&2; exit 1; fi
  command -v npm >/dev/null || { echo "npm is missing (apt-get install nodejs npm)" >&2; exit 1; }
  mkdir -p "$PEERS"
  [ -f "$PEERS/package.json" ] || echo '{"name": "clawlog-mcp-peers", "private": true}' > "$PEERS/package.json"
  npm install --prefix "$PEERS" --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" >&2
fi

if ! python3 -c 'import importlib.util as u, sys; sys.exit(u.find_spec("mcp_server_time") is None)' 2>/dev/null; then
  if [ "$mode" = check ]; then echo "mcp-server-time is not installed" >&2; exit 1; fi
  python3 -m pip install -q --disable-pip-version-check mcp-server-time >&2
fi
TIME_BIN=$(python3 -c 'import shutil, sys, os; print(shutil.which("mcp-server-time") or os.path.join(os.path.dirname(sys.executable), "mcp-server-time"))')

echo "MCP_EVERYTHING_JS=$JS"
echo "MCP_SERVER_TIME=$TIME_BIN"
