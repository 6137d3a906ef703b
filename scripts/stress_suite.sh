#!/usr/bin/env bash
# The test suite on a busy machine: runs the README's test command (scripts/test.sh, which
# installs and starts PostgreSQL, Docker and the MCP servers, then runs pytest) several
# times in a row while another process keeps one core busy, and stops at the first run that
# fails, saying which one. A test that passes here waits on outcomes, not on the clock.
#   scripts/stress_suite.sh                      3 runs of the whole suite
#   scripts/stress_suite.sh -n 5 tests/mcp -x    5 runs; arguments after -n go to pytest
# Environment: STRESS_RUNS (default 3, as -n), STRESS_BUSY_CORES (default 1),
# STRESS_BUSY_MAX_S (default 7200: the busy loop ends by itself after that many seconds,
# even if this script is killed in a way its trap cannot see).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${STRESS_RUNS:-3}
if [ "${1:-}" = "-n" ]; then
  runs=${2:?"-n needs a number of runs"}
  shift 2
fi
busy_cores=${STRESS_BUSY_CORES:-1}
busy_max_s=${STRESS_BUSY_MAX_S:-7200}
for value in "$runs" "$busy_cores" "$busy_max_s"; do
  [[ "$value" =~ ^[1-9][0-9]*$ ]] || { echo "not a positive number: $value" >&2; exit 2; }
done

busy_pids=()
start_busy() {
  local i
  for ((i = 0; i < busy_cores; i++)); do
    # A bounded busy loop in a process of its own (a subshell): one core's worth of load.
    (
      end=$((SECONDS + busy_max_s))
      while ((SECONDS < end)); do :; done
    ) &
    busy_pids+=("$!")
  done
}
stop_busy() {
  local pid
  for pid in "${busy_pids[@]}"; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  busy_pids=()
}
busy_running() {
  local pid
  for pid in "${busy_pids[@]}"; do
    kill -0 "$pid" 2>/dev/null || return 1
  done
  [ "${#busy_pids[@]}" -gt 0 ]
}
trap stop_busy EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "stress: $runs run(s) of scripts/test.sh $*, $busy_cores of $(nproc) core(s) kept busy" >&2
for ((run = 1; run <= runs; run++)); do
  busy_running || { stop_busy; start_busy; }
  echo "stress: run $run of $runs starts (busy loop: ${busy_pids[*]})" >&2
  status=0
  scripts/test.sh "$@" || status=$?
  if [ "$status" -ne 0 ]; then
    echo "stress: run $run of $runs FAILED (exit $status); $((run - 1)) run(s) before it passed" >&2
    exit "$status"
  fi
  echo "stress: run $run of $runs passed" >&2
done
echo "stress: all $runs runs passed with $busy_cores core(s) busy" >&2
