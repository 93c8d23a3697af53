#!/usr/bin/env bash
# make bench: every bin/bbs-load scenario on each database, then issue
# 28's same-run comparison with a48ab90 (hack/bench-compare.sh: peer at
# 10,000 LRPs, this tree's load generator driving a48ab90's board and this
# tree's in turn, and each commit's converge, ROUNDS rounds per database),
# then the Go benchmarks of the storage layer and the convergence planner,
# then a summary of every figure and the new ÷ old ratios. SQLite always
# runs; Postgres and MySQL run when their admin DSNs are set (see .ci/run
# for the local defaults). Sizes are the issues' unless overridden below;
# every scenario takes -h.
#
# A scenario that fails is reported and the others still run; the script
# then exits non-zero. Budget: about an hour and a half on 2 cores with
# all three databases.
set -uo pipefail
cd "$(dirname "$0")/.."

# BENCH_ONLY="compare converge-1m" runs only the named runs (scenario
# names, compare, operations-cost, go-bench); every run when unset, but
# for busy-1h, which runs only when named: an hour of busy per database
# against bin/bbs, its database measured every 10 minutes — what the
# event log's retention holds under steady writes (issue 28).
ONLY=" ${BENCH_ONLY:-} "

# Extra flags per scenario, e.g. BENCH_CONVERGE_FLAGS='-lrps 10000'.
API_FLAGS=(${BENCH_API_FLAGS:-})
CONVERGE_FLAGS=(${BENCH_CONVERGE_FLAGS:-})
LIFECYCLE_FLAGS=(${BENCH_LIFECYCLE_FLAGS:-})
REPORT_FLAGS=(${BENCH_REPORT_FLAGS:-})
RSS_FLAGS=(${BENCH_RSS_FLAGS:-})
ROLLOUT_FLAGS=(${BENCH_ROLLOUT_FLAGS:-})
OPERATIONS_FLAGS=(${BENCH_OPERATIONS_FLAGS:-})
LISTS_FLAGS=(${BENCH_LISTS_FLAGS:-})
# The comparison: BENCH_OLD (default a48ab90, issue 28's), BENCH_ROUNDS
# (default 2), BENCH_PEER_FLAGS (peer's sizes, default the issue's: 10,000
# LRPs, 10,000 updates, 100 cells, 16 clients), BENCH_COMPARE_CONVERGE_FLAGS
# (bench-compare's converge sizes; its default when unset).
COMPARE_OLD="${BENCH_OLD:-a48ab90}"
COMPARE_ROUNDS="${BENCH_ROUNDS:-2}"
COMPARE_PEER_FLAGS="${BENCH_PEER_FLAGS:--lrps 10000 -updates 10000}"
MILLION_FLAGS=(${BENCH_MILLION_FLAGS:-})
BUSY_FLAGS=(${BENCH_BUSY_FLAGS:-})

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
failures=0

# run NAME DRIVER CMD...: runs one scenario, keeps its output for the
# summary, and goes on when it fails.
run() {
  local name="$1" driver="$2"
  shift 2
  if [ "$ONLY" != "  " ] && [[ "$ONLY" != *" $name "* ]]; then
    return 0
  fi
  echo
  echo "### $name on $driver ($(date -u +%T), load $(cut -d' ' -f1 /proc/loadavg))"
  local began=$SECONDS
  if "$@" 2>&1 | tee "$out/$name-$driver.log"; then
    echo "    ($name on $driver took $((SECONDS - began)) s)"
  else
    echo "FAILED: $name on $driver" | tee -a "$out/failures"
    failures=$((failures + 1))
  fi
}

scenarios() {
  local driver="$1"
  shift
  run api "$driver" bin/bbs-load api -driver "$driver" "$@" "${API_FLAGS[@]}"
  run converge "$driver" bin/bbs-load converge -driver "$driver" "$@" "${CONVERGE_FLAGS[@]}"
  run lifecycle "$driver" bin/bbs-load lifecycle -driver "$driver" "$@" "${LIFECYCLE_FLAGS[@]}"
  run report "$driver" bin/bbs-load report -driver "$driver" "$@" "${REPORT_FLAGS[@]}"
  run rss "$driver" bin/bbs-load rss -driver "$driver" "$@" "${RSS_FLAGS[@]}"
  run rollout "$driver" bin/bbs-load rollout -driver "$driver" "$@" "${ROLLOUT_FLAGS[@]}"
  run operations "$driver" bin/bbs-load operations -driver "$driver" "$@" "${OPERATIONS_FLAGS[@]}"
  run lists "$driver" bin/bbs-load lists -driver "$driver" "$@" "${LISTS_FLAGS[@]}"
  # peer runs in the comparison below, beside a48ab90's board.
  run busy "$driver" bin/bbs-load busy -driver "$driver" "$@" "${BUSY_FLAGS[@]}"
  # Issue 28's busy target at its own size: the lease owner passing
  # 1,000,000 instances (1,000 cells × 1,000) from its mirror every second
  # while the cells bulk-report. No full reads in the window: deployed,
  # one runs every 10 minutes (the one at takeover runs before the window),
  # and one of a million rows keeps a core busy for some 20 s here.
  run busy-1m "$driver" bin/bbs-load busy -driver "$driver" "$@" -per-cell 1000 -no-full-reads \
    "${BUSY_FLAGS[@]}"
  # The issue 18 scale: 1,000,000 instances (200,000 LRPs × 5) on 5,000
  # cells — steady passes from the lease owner's mirror, a few full
  # reads beside them — and the board's memory holding them.
  run converge-1m "$driver" bin/bbs-load converge -driver "$driver" "$@" -lrps 200000 -cells 5000 \
    -passes 10 -full-passes 3 -repairs=false -place-lrps 0 "${MILLION_FLAGS[@]}"
  run rss-1m "$driver" bin/bbs-load rss -driver "$driver" "$@" -lrps 200000 -cells 5000 -passes 3 -timeout 15m \
    -report-window 30s
  if [[ "$ONLY" == *" busy-1h "* ]]; then
    run busy-1h "$driver" bin/bbs-load busy -driver "$driver" "$@" -bbs bin/bbs -clients 2 -duration 1h \
      -bytes-every 10m "${BUSY_FLAGS[@]}"
  fi
}

echo "## $(date -u +%FT%TZ) $(nproc) cores, $(go version | cut -d' ' -f3), load $(cut -d' ' -f1-3 /proc/loadavg)"
drivers=(sqlite)
scenarios sqlite
if [ -n "${CORKBOARD_POSTGRES_DSN:-}" ]; then
  drivers+=(postgres)
  scenarios postgres -dsn "$CORKBOARD_POSTGRES_DSN"
fi
if [ -n "${CORKBOARD_MYSQL_DSN:-}" ]; then
  drivers+=(mysql)
  scenarios mysql -dsn "$CORKBOARD_MYSQL_DSN"
fi
# Issue 28's figures with the a48ab90 column beside them, on every
# database above (bench-compare reads the same DSN variables).
run compare all env OLD="$COMPARE_OLD" ROUNDS="$COMPARE_ROUNDS" BENCH_PEER_FLAGS="$COMPARE_PEER_FLAGS" \
  BENCH_CONVERGE_FLAGS="${BENCH_COMPARE_CONVERGE_FLAGS:-}" hack/bench-compare.sh
run operations-cost all hack/bench-operations-cost.sh
run go-bench sqldb go test -run '^$' -bench . -benchtime 2s ./db/sqldb/
run go-bench convergence go test -run '^$' -bench . -benchmem ./convergence/
# Instance starts, isolated and not, alternated in one run (as root; the
# benchmark skips itself otherwise).
run go-bench rep go test -run '^$' -bench StartLatency -benchtime 50x ./rep/executor/

echo
echo "## Summary ($(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg))"
for driver in "${drivers[@]}"; do
  sed -n "s/^\(desire\|list actual\)/api [$driver] \1/p" "$out/api-$driver.log" 2>/dev/null
done
for driver in "${drivers[@]}"; do
  for name in converge lifecycle report rss rollout operations lists busy busy-1m converge-1m rss-1m busy-1h; do
    grep -h '^figure ' "$out/$name-$driver.log" 2>/dev/null | sed 's/^figure //'
  done
done
grep -h '^figure ' "$out/operations-cost-all.log" 2>/dev/null | sed 's/^figure //'
cat "$out"/go-bench-*.log 2>/dev/null | grep -E "^Benchmark" || true
if [ -f "$out/compare-all.log" ]; then
  # Every figure of the comparison, tagged [old] / [new], then the ratios.
  echo
  grep -h '^figure \[' "$out/compare-all.log" | sed 's/^figure //'
  echo
  sed -n '/^## ratios/,$p' "$out/compare-all.log"
fi
if [ "$failures" -gt 0 ]; then
  echo
  cat "$out/failures"
  exit 1
fi
