#!/usr/bin/env bash
# The test command (README.md, .ci/run): installs what the tests need, starts the real
# services they use on loopback, runs pytest, and stops the services again.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --disable-pip-version-check -e '.[test]'
RUN_DIR=$(mktemp -d /tmp/clawlog-test.XXXXXX)
chmod 755 "$RUN_DIR"
cleanup() {
  if [ -n "${CLAWLOG_WITH_POSTGRES:-}" ]; then scripts/postgres.sh stop "$RUN_DIR/pg" || true; fi
  rm -rf "$RUN_DIR"
}
trap cleanup EXIT
# The PostgreSQL suites (issue 11) need a real server; set CLAWLOG_WITH_POSTGRES=1 to start
# one on loopback for them (scripts/postgres.sh installs Debian's postgresql if missing).
if [ -n "${CLAWLOG_WITH_POSTGRES:-}" ]; then
  export CLAWLOG_TEST_DATABASE_URL
  CLAWLOG_TEST_DATABASE_URL=$(scripts/postgres.sh start "$RUN_DIR/pg" | sed -n 's/^DATABASE_URL=//p')
  echo "PostgreSQL: $CLAWLOG_TEST_DATABASE_URL"
fi
python3 -m pytest "$@"
