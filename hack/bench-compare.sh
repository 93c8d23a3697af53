#!/usr/bin/env bash
# make bench-compare OLD=<rev>: the same-run comparison of this tree with an
# older commit. It builds OLD's bin/bbs and bin/bbs-load in a temporary
# worktree, then alternates old and new ROUNDS times (default 2) on each
# database: each commit's own `bbs-load peer` drives its own board binary
# (the load generator migrates the database first, so an older board
# needs its own), and each commit's `bbs-load converge` runs its planner
# and store in-process. It prints every figure line
# tagged [old] or [new] in the order they ran, so that a ratio is read
# between runs that shared the machine's load. Sizes: BENCH_PEER_FLAGS and
# BENCH_CONVERGE_FLAGS (defaults below, smaller than make bench's).
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
echo "## $(date -u +%FT%TZ) old $(git rev-parse --short "$old") new $new_commit, $(nproc) cores, $rounds rounds"

# tagged TAG CMD...: runs one scenario and prints its figure lines tagged.
tagged() {
  local tag="$1"
  shift
  "$@" 2>&1 | sed -n "s/^figure /figure [$tag] /p"
}

drivers=("sqlite:")
[ -n "${CORKBOARD_POSTGRES_DSN:-}" ] && drivers+=("postgres:$CORKBOARD_POSTGRES_DSN")
[ -n "${CORKBOARD_MYSQL_DSN:-}" ] && drivers+=("mysql:$CORKBOARD_MYSQL_DSN")

for entry in "${drivers[@]}"; do
  driver="${entry%%:*}"
  dsn="${entry#*:}"
  dsnflag=()
  [ -n "$dsn" ] && dsnflag=(-dsn "$dsn")
  for round in $(seq "$rounds"); do
    echo "### peer on $driver, round $round"
    tagged old "$work/old/bbs-load" peer -driver "$driver" "${dsnflag[@]}" -bbs "$work/old/bbs" "${PEER_FLAGS[@]}"
    tagged new bin/bbs-load peer -driver "$driver" "${dsnflag[@]}" -bbs bin/bbs "${PEER_FLAGS[@]}"
    echo "### converge on $driver, round $round"
    tagged old "$work/old/bbs-load" converge -driver "$driver" "${dsnflag[@]}" "${CONVERGE_FLAGS[@]}"
    tagged new bin/bbs-load converge -driver "$driver" "${dsnflag[@]}" "${CONVERGE_FLAGS[@]}"
  done
done
