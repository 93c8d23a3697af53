#!/usr/bin/env bash
# make ha-galera, make ha-postgres (hack/ha.sh galera|postgres): the
# writer-kill scenario of e2e/chaos_ha_test.go on a three-node Galera
# cluster behind HAProxy (internal/testdb/galera.go), or on a Postgres
# primary and synchronous standby under Patroni and etcd behind HAProxy
# (internal/testdb/patroni.go): private servers on loopback ports and
# temporary directories, never the machine's shared ones, in its full size (CORKBOARD_CHAOS=full: the
# writer SIGKILLed under 10 rollouts in sequence), and the partition of the
# converging board on the same engine. Runs them verbosely into a
# log file, prints their figures (Ginkgo report entries) and the verdict, and
# exits non-zero unless both passed: a new writer every time, no
# acknowledged write lost, no failed router request, no index lost or
# doubled, no gap in the event stream. Missing packages (galera-4, rsync,
# haproxy; patroni, etcd-server) fail it rather than skip it.
set -uo pipefail
cd "$(dirname "$0")/.."
engine="${1:?usage: hack/ha.sh galera|postgres}"
log="${HA_LOG:-$(mktemp -t "corkboard-ha-$engine.XXXXXX")}"
status=0
CORKBOARD_CHAOS=full CORKBOARD_REQUIRE_DBS=1 "${GO:-go}" test -count=1 -timeout 60m -v ./e2e/ -run TestE2E \
  -args -ginkgo.label-filter="ha-$engine" -ginkgo.v -ginkgo.no-color >"$log" 2>&1 || status=1
# A report entry is "  name - file:line @ time" and its value the line after.
grep -E -A1 '^  [^ {].* - /.*_test\.go:[0-9]+ @ ' "$log" | grep -v -E '^--'
grep -E -A12 '^  \[FAILED\] [^i]' "$log" | grep -v '{"timestamp'
grep -E '^(Ran |SUCCESS|FAIL|ok |--- FAIL)' "$log"
echo "full output: $log"
exit "$status"
