#!/usr/bin/env bash
# What the operation log costs a desire: bin/bbs-load api (10,000 desires,
# 32 clients, in-process board over HTTP) built from this tree and from
# the last commit without the log, run alternately on the same machine in
# the same run, so that both see the same load. Prints each run's desires/s
# and, per database, the median of each side and the cost in percent.
#
# Called by hack/bench.sh; alone: hack/bench-operations-cost.sh [RUNS].
# OPERATIONS_COST_BASE names the commit to compare against (default: the
# parent of the commit that brought the operation contracts).
set -uo pipefail
cd "$(dirname "$0")/.."

runs="${1:-3}"
base="${OPERATIONS_COST_BASE:-ad28fac}"
desires="${OPERATIONS_COST_DESIRES:-10000}"

tmp="$(mktemp -d)"
cleanup() {
  git worktree remove --force "$tmp/base" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

if ! git worktree add --detach "$tmp/base" "$base" >/dev/null 2>&1; then
  echo "operations cost: commit $base is not in this clone; skipped" >&2
  exit 1
fi
(cd "$tmp/base" && go build -o "$tmp/bbs-load-before" ./cmd/bbs-load) || exit 1
go build -o "$tmp/bbs-load-after" ./cmd/bbs-load || exit 1

# one SIDE DRIVER ARGS...: one throughput run; prints its desires/s.
one() {
  local side="$1" driver="$2"
  shift 2
  "$tmp/bbs-load-$side" api -driver "$driver" "$@" -clients 32 -desires "$desires" \
    -rate 100 -rate-duration 1s -actual-lrps 0 -list-runs 1 2>&1 |
    sed -n 's/^desire throughput: .*: \([0-9]*\) desires\/s.*/\1/p'
}

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

compare() {
  local driver="$1"
  shift
  : >"$tmp/before-$driver"
  : >"$tmp/after-$driver"
  for i in $(seq 1 "$runs"); do
    for side in before after; do
      local rate
      rate="$(one "$side" "$driver" "$@")"
      if [ -z "$rate" ]; then
        echo "operations cost [$driver]: run $i ($side) failed" >&2
        return 1
      fi
      echo "operations cost [$driver] run $i: $side $rate desires/s"
      echo "$rate" >>"$tmp/$side-$driver"
    done
  done
  local b a
  b="$(median <"$tmp/before-$driver")"
  a="$(median <"$tmp/after-$driver")"
  awk -v d="$driver" -v b="$b" -v a="$a" -v n="$desires" -v r="$runs" 'BEGIN {
    printf "figure operations.cost [%s, %d desires, 32 clients, median of %d runs each, alternating]: before %d desires/s, with the log %d desires/s, cost %.1f%%\n", d, n, r, b, a, (b - a) * 100 / b
  }'
}

failed=0
compare sqlite || failed=1
if [ -n "${CORKBOARD_POSTGRES_DSN:-}" ]; then
  compare postgres -dsn "$CORKBOARD_POSTGRES_DSN" || failed=1
fi
if [ -n "${CORKBOARD_MYSQL_DSN:-}" ]; then
  compare mysql -dsn "$CORKBOARD_MYSQL_DSN" || failed=1
fi
exit "$failed"
