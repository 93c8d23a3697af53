#!/usr/bin/env bash
# make ha-galera: the writer-kill scenario of e2e/chaos_ha_test.go on a
# three-node Galera cluster behind HAProxy (internal/testdb/galera.go:
# private nodes on loopback ports and temporary directories, never the
# machine's shared MariaDB), in its full size (CORKBOARD_CHAOS=full: the
# writer SIGKILLed under 10 rollouts in sequence). Runs it verbosely into a
# log file, prints its figures (Ginkgo report entries) and the verdict, and
# exits non-zero unless the spec passed: a new writer every time, no
# acknowledged write lost, no failed router request, no index lost or
# doubled, no gap in the event stream. Missing packages (galera-4, rsync,
# haproxy) fail it rather than skip it.
set -uo pipefail
cd "$(dirname "$0")/.."
log="${HA_GALERA_LOG:-$(mktemp -t corkboard-ha-galera.XXXXXX)}"
status=0
CORKBOARD_CHAOS=full CORKBOARD_REQUIRE_DBS=1 "${GO:-go}" test -count=1 -timeout 60m -v ./e2e/ -run TestE2E \
  -args -ginkgo.label-filter=ha-galera -ginkgo.v -ginkgo.no-color >"$log" 2>&1 || status=1
# A report entry is "  name - file:line @ time" and its value the line after.
grep -E -A1 '^  [^ {].* - /.*_test\.go:[0-9]+ @ ' "$log" | grep -v -E '^--'
grep -E -A12 '^  \[FAILED\] [^i]' "$log" | grep -v '{"timestamp'
grep -E '^(Ran |SUCCESS|FAIL|ok |--- FAIL)' "$log"
echo "full output: $log"
exit "$status"
