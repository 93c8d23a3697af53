#!/usr/bin/env bash
# make chaos: the fault scenarios, on real binaries and real databases —
# the specs labelled "chaos" in cmd/bbs (the board SIGKILLed at random
# moments of rollouts, 20 times; a private Postgres and a private MariaDB
# frozen and stopped under a board; two boards with skewed clocks; 1,100
# slow request bodies and 100 slow whole-list readers against a board
# with two presence TTLs of 10 s on every dialect; with simulated cells)
# and in
# e2e (real reps running hello behind a router-like client: a rep
# SIGKILLed mid-rollout, a rep partitioned from the board and healed, the
# board's private Postgres restarted and frozen under rollouts; the
# writer of a private Galera cluster and of a private Patroni pair
# SIGKILLed mid-rollout, 10 times each: e2e/chaos_ha_test.go; 20 clean
# rollouts judged by a real Prometheus in a row, and versions with errors,
# a slowdown and a regression in the bake: e2e/analysis_e2e_test.go; 200
# LRPs updated at once under max_rollouts_in_flight 10:
# e2e/governor_e2e_test.go). Prints
# each scenario's figures (Ginkgo report entries) and each suite's
# summary; the whole output, board and rep logs included, stays in the
# log file named at the end. Exits non-zero when a scenario fails.
# CORKBOARD_CHAOS=full runs every variant with its full iteration counts;
# make test (CI) runs a bounded part of them (cmd/bbs/chaos_test.go).
set -uo pipefail
cd "$(dirname "$0")/.."
log="${CHAOS_LOG:-$(mktemp -t corkboard-chaos.XXXXXX)}"
: >"$log"
status=0
for suite in "./cmd/bbs/ TestBBS" "./e2e/ TestE2E"; do
  read -r pkg run <<<"$suite"
  echo "== $pkg" | tee -a "$log"
  part="$(mktemp -t corkboard-chaos-part.XXXXXX)"
  CORKBOARD_CHAOS=full "${GO:-go}" test -count=1 -timeout 60m -v "$pkg" -run "$run" -args -ginkgo.label-filter=chaos -ginkgo.v -ginkgo.no-color >"$part" 2>&1 || status=1
  # A report entry is "  name - file:line @ time" and its value the line after.
  grep -E -A1 '^  [^ {].* - /.*_test\.go:[0-9]+ @ ' "$part" | grep -v -E '^--'
  grep -E '^(Ran |SUCCESS|FAIL|ok |--- FAIL)' "$part"
  cat "$part" >>"$log"
  rm -f "$part"
done
echo "full output: $log"
exit "$status"
