#!/usr/bin/env bash
# make bench-compare OLD=<rev>: the same-run comparison of this tree with an
# older commit. It builds OLD's bin/bbs and bin/bbs-load in a temporary
# worktree, then alternates old and new ROUNDS times (default 2) on each
# database:
#   - peer: this tree's `bbs-load peer` drives OLD's board binary, then
#     this tree's, with the same load and the same figures on both; each
#     board migrates its fresh database with its own migrations
#     (-migrate board: an older board refuses a database a newer binary
#     migrated). The peer's steady pass runs this tree's planner
#     in-process, so it is measured on the new board only; converge
#     compares the planners.
#   - converge: each commit's own `bbs-load converge`, its planner and
#     store in-process.
# It prints every figure line tagged [old] or [new] in the order they ran,
# then `bbs-load ratios` over them: new ÷ old per figure and database, as
# a range over the rounds, each round's new against its old (runs that
# shared the machine's load; even rounds run new first). Sizes:
# BENCH_PEER_FLAGS and BENCH_CONVERGE_FLAGS (defaults below, smaller than
# make bench's); BENCH_PEER_ONLY=1 skips converge.
# Databases: SQLite, and Postgres and MySQL when their admin DSNs are set;
# DRIVERS="postgres" (say) keeps only the ones named.
set -euo pipefail
cd "$(dirname "$0")/.."

old="${OLD:?OLD=<commit> names the commit to compare with}"
rounds="${ROUNDS:-2}"
PEER_FLAGS=(${BENCH_PEER_FLAGS:--lrps 2000 -updates 2000 -cells 50})
CONVERGE_FLAGS=(${BENCH_CONVERGE_FLAGS:--lrps 10000 -cells 200 -passes 10 -place-lrps 2000})

work="$(mktemp -d)"
cleanup() {
  git worktree remove --force "$work/src" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

git worktree add --detach "$work/src" "$old" >/dev/null
(cd "$work/src" && go build -o "$work/old/" ./cmd/bbs ./cmd/bbs-load)
go build -o bin/ ./cmd/bbs ./cmd/bbs-load
new_commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo '+changes')"
echo "## $(date -u +%FT%TZ) old $(git rev-parse --short "$old") new $new_commit, $(nproc) cores, $rounds rounds, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "## peer: bin/bbs-load peer -migrate board ${PEER_FLAGS[*]}; converge: each commit's bbs-load converge ${CONVERGE_FLAGS[*]}"

# tagged TAG CMD...: runs one scenario and prints its figure lines tagged,
# keeping them for the ratios. A scenario that fails is reported with its
# last lines, and the others still run.
failures=0
tagged() {
  local tag="$1"
  shift
  if ! "$@" >"$work/run.log" 2>&1; then
    echo "FAILED [$tag]: $*"
    tail -5 "$work/run.log"
    failures=$((failures + 1))
  fi
  sed -n "s/^figure /figure [$tag] /p" "$work/run.log" | tee -a "$work/figures"
}

only=" ${DRIVERS:-sqlite postgres mysql} "
drivers=()
[[ "$only" == *" sqlite "* ]] && drivers+=("sqlite:")
[[ "$only" == *" postgres "* ]] && [ -n "${CORKBOARD_POSTGRES_DSN:-}" ] && drivers+=("postgres:$CORKBOARD_POSTGRES_DSN")
[[ "$only" == *" mysql "* ]] && [ -n "${CORKBOARD_MYSQL_DSN:-}" ] && drivers+=("mysql:$CORKBOARD_MYSQL_DSN")

for entry in "${drivers[@]}"; do
  driver="${entry%%:*}"
  dsn="${entry#*:}"
  dsnflag=()
  [ -n "$dsn" ] && dsnflag=(-dsn "$dsn")
  for round in $(seq "$rounds"); do
    # Even rounds run new first: under a load that rises or falls as the
    # run goes, whichever runs second is favoured or not in every round
    # alike, and alternating the order lets the rounds show it.
    order=(old new)
    [ $((round % 2)) -eq 0 ] && order=(new old)
    echo "### peer on $driver, round $round, ${order[*]} (load $(cut -d' ' -f1 /proc/loadavg))"
    for which in "${order[@]}"; do
      board="bin/bbs"
      [ "$which" = old ] && board="$work/old/bbs"
      tagged "$which" bin/bbs-load peer -driver "$driver" "${dsnflag[@]}" -migrate board -bbs "$board" "${PEER_FLAGS[@]}"
    done
    [ -n "${BENCH_PEER_ONLY:-}" ] && continue
    echo "### converge on $driver, round $round, ${order[*]} (load $(cut -d' ' -f1 /proc/loadavg))"
    for which in "${order[@]}"; do
      load="bin/bbs-load"
      [ "$which" = old ] && load="$work/old/bbs-load"
      tagged "$which" "$load" converge -driver "$driver" "${dsnflag[@]}" "${CONVERGE_FLAGS[@]}"
    done
  done
done

echo
echo "## ratios ($(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg))"
touch "$work/figures"
bin/bbs-load ratios <"$work/figures"
[ "$failures" -eq 0 ]
