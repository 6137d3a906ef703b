#!/usr/bin/env bash
# The test command (README.md, .ci/run): installs what the tests need, starts the real
# services they use on loopback, runs pytest, and stops the services again.
#   - Python deps: the package with its test and dev extras (asyncpg, pytest, ruff, mypy),
#     installed into .venv (created if missing) unless a venv is already active; gcc and
#     Debian's libssl-dev if missing, for the one compiled module (setup.py)
#   - ruff (lint and format) and mypy, before any test
#   - PostgreSQL (Debian's postgresql) on a free loopback port     -> scripts/postgres.sh
#   - a Docker engine (Debian's docker.io) on a private socket,
#     with a local busybox image imported from a rootfs tarball     -> scripts/docker.sh
#   - the MCP servers: @modelcontextprotocol/server-everything (npm) and mcp-server-time
#     (PyPI)                                                         -> scripts/mcp_servers.sh
#   - a headless browser for the web console's tests (tests/ui): Debian's chromium and the
#     playwright Python package from the test extra (no `playwright install`: no download)
# In CI (CI set) a service that cannot be had fails its tests; it never skips them.
set -euo pipefail
cd "$(dirname "$0")/.."
# The venv of the README's install command (.venv), unless one is already active: Debian's
# own python3 refuses `pip install` outside a venv (PEP 668, externally-managed-environment).
# Its bin/ goes first on PATH, so every `python3` below and in the helper scripts is the venv's.
if [ -z "${VIRTUAL_ENV:-}" ]; then
  if [ ! -x .venv/bin/python3 ]; then
    python3 -m venv .venv 2>/dev/null || {
      # Debian ships venv's ensurepip in a package of its own.
      rm -rf .venv
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
      python3 -m venv .venv
    }
  fi
  export VIRTUAL_ENV="$PWD/.venv"
  export PATH="$VIRTUAL_ENV/bin:$PATH"
fi
# The install compiles the hash chain's writer loop (setup.py) against OpenSSL's headers;
# it is optional for users, but the suite checks that it was built (tests/events).
PY_INCLUDE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
if [ ! -f /usr/include/openssl/sha.h ] || ! command -v gcc >/dev/null || [ ! -f "$PY_INCLUDE/Python.h" ]; then
  # python3-dev: the headers of Debian's own python3 (a python built from source has its own)
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc libssl-dev python3-dev >/dev/null
fi
python3 -m pip install -q --disable-pip-version-check -e '.[test,dev]'
# House rule 10: lint, format and type checks are part of the test command.
python3 -m ruff check .
python3 -m ruff format --check clawlog actors events projections tools tests scripts
python3 -m mypy
RUN_DIR=$(mktemp -d /tmp/clawlog-test.XXXXXX)
chmod 755 "$RUN_DIR"
cleanup() {
  scripts/postgres.sh stop "$RUN_DIR/pg" || true
  scripts/docker.sh stop "$RUN_DIR/docker" || true
  rm -rf "$RUN_DIR" 2>/dev/null || true
}
trap cleanup EXIT
export CLAWLOG_TEST_DATABASE_URL CLAWLOG_TEST_PG_DIR="$RUN_DIR/pg" DOCKER_HOST
export MCP_EVERYTHING_JS MCP_SERVER_TIME
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
if [ ! -x /usr/bin/chromium ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
MCP_ENV=$(scripts/mcp_servers.sh install)
MCP_EVERYTHING_JS=$(sed -n 's/^MCP_EVERYTHING_JS=//p' <<<"$MCP_ENV")
MCP_SERVER_TIME=$(sed -n 's/^MCP_SERVER_TIME=//p' <<<"$MCP_ENV")
CLAWLOG_TEST_DATABASE_URL=$(scripts/postgres.sh start "$RUN_DIR/pg" | sed -n 's/^DATABASE_URL=//p')
DOCKER_HOST=$(scripts/docker.sh start "$RUN_DIR/docker" | sed -n 's/^DOCKER_HOST=//p')
echo "PostgreSQL: $CLAWLOG_TEST_DATABASE_URL"
echo "Docker: $DOCKER_HOST"
echo "MCP servers: $MCP_EVERYTHING_JS, $MCP_SERVER_TIME"
python3 -m pytest "$@"
