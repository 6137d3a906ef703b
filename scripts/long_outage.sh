#!/usr/bin/env bash
# A PostgreSQL outage of several minutes under a running agent (issue 17): the store is
# stopped mid-turn and started again after OUTAGE_S seconds (default 180). Every send
# during the outage must fail at once with a typed error, the agent must not vanish or
# escalate, and the same session must serve the next message once the server is back.
# The suite runs the same test with a 2 s outage; this runs the long one by hand:
#   scripts/long_outage.sh [OUTAGE_S]
set -euo pipefail
cd "$(dirname "$0")/.."
OUTAGE_S=${1:-180}
RUN_DIR=$(mktemp -d /tmp/clawlog-outage.XXXXXX)
chmod 755 "$RUN_DIR"
trap 'scripts/postgres.sh stop "$RUN_DIR/pg" || true; rm -rf "$RUN_DIR"' EXIT
CLAWLOG_TEST_DATABASE_URL=$(scripts/postgres.sh start "$RUN_DIR/pg" | sed -n 's/^DATABASE_URL=//p')
export CLAWLOG_TEST_DATABASE_URL CLAWLOG_TEST_PG_DIR="$RUN_DIR/pg" CLAWLOG_TEST_OUTAGE_S="$OUTAGE_S"
echo "PostgreSQL: $CLAWLOG_TEST_DATABASE_URL; outage: $OUTAGE_S s"
python3 -m pytest -q -p no:cacheprovider -o log_cli=true -o log_cli_level=WARNING \
  tests/agents/test_never_wedged.py -k outage
