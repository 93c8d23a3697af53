#!/usr/bin/env bash
# make chaos: the fault scenarios (specs labelled "chaos" in cmd/bbs: the
# board SIGKILLed at random moments of rollouts, alone on SQLite and as the
# lease holder of two; a private Postgres and a private MariaDB frozen and
# stopped under a board), on real binaries and real databases, with 20
# kills per board-kill scenario (CORKBOARD_CHAOS_KILLS; make test runs 6).
# Prints each scenario and its figures (Ginkgo report entries) and the
# summary; the whole output, board logs included, stays in the log file
# named at the end. Exits non-zero when a scenario fails.
set -uo pipefail
cd "$(dirname "$0")/.."
log="${CHAOS_LOG:-$(mktemp -t corkboard-chaos.XXXXXX)}"
CORKBOARD_CHAOS_KILLS="${CORKBOARD_CHAOS_KILLS:-20}" "${GO:-go}" test -count=1 -v ./cmd/bbs/ -run TestBBS -args -ginkgo.label-filter=chaos -ginkgo.v -ginkgo.no-color >"$log" 2>&1
status=$?
# A report entry is "  name - file:line @ time" and its value the line after.
grep -E -A1 '^  [^ {].* - /.*_test\.go:[0-9]+ @ ' "$log" | grep -v -E '^--'
grep -E '^(Ran |SUCCESS|FAIL|ok |--- FAIL)' "$log"
echo "full output: $log"
exit "$status"
