#!/usr/bin/env bash
# The test command (README.md, .ci/run): installs what the tests need, starts the real
# services they use on loopback, runs pytest, and stops the services again.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --disable-pip-version-check -e '.[test]'
RUN_DIR=$(mktemp -d /tmp/clawlog-test.XXXXXX)
chmod 755 "$RUN_DIR"
cleanup() {
  scripts/postgres.sh stop "$RUN_DIR/pg" || true
  rm -rf "$RUN_DIR"
}
trap cleanup EXIT
# A real PostgreSQL server on loopback for the PostgreSQL suites (installs Debian's
# postgresql if missing); in CI a missing server fails those tests, it does not skip them.
export CLAWLOG_TEST_DATABASE_URL CLAWLOG_TEST_PG_DIR="$RUN_DIR/pg"
CLAWLOG_TEST_DATABASE_URL=$(scripts/postgres.sh start "$RUN_DIR/pg" | sed -n 's/^DATABASE_URL=//p')
echo "PostgreSQL: $CLAWLOG_TEST_DATABASE_URL"
python3 -m pytest "$@"
