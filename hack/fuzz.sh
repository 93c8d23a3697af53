#!/usr/bin/env bash
# Runs every fuzz target for DURATION each (a go test -fuzztime: "3s", "60s",
# "10000x"), one at a time, and fails when any finds an input that breaks
# it. `make fuzz-smoke` runs them 3s each (CI), `make fuzz` 60s each.
#
# A finding is written by go test under the target's package as
# testdata/fuzz/<Target>/<hash>: fix the code, keep the file (it then runs
# as a seed in every `go test`), and give it a name that says what it is.
#
# Usage: hack/fuzz.sh [DURATION]   (default 3s)
set -euo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-go}"
duration="${1:-3s}"

# package and target, one per line; each package's *_fuzz_test.go says
# what its targets check.
targets=(
  "./models FuzzDecodeValidate"
  "./models FuzzBulkReport"
  "./models FuzzWireRanges"
  "./handlers FuzzAPIRequest"
  "./db/sqldb FuzzRoutesJSON"
  "./db/sqldb FuzzDeflateFixed"
  "./db/sqldb FuzzInflateFixed"
  "./db/sqldb FuzzReadBundle"
  "./cmd/cork FuzzSpecFile"
  "./cmd/bbs FuzzBoardConfig"
  "./cmd/rep FuzzRepConfig"
)

failed=()
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
for target in "${targets[@]}"; do
  read -r pkg name <<<"$target"
  echo "== $name ($pkg), $duration"
  # -run='^$' skips the package's other tests; the target's seeds and
  # committed corpus run first, then the fuzzer.
  # go test can stop a short run while it still gathers the corpus's
  # baseline coverage and report that as "context deadline exceeded" with
  # no failing input: not a finding, so such a run is tried once more.
  for try in 1 2; do
    if "$GO" test -run='^$' -fuzz="^${name}\$" -fuzztime="$duration" "$pkg" 2>&1 | tee "$log"; then
      break
    fi
    if ((try == 1)) && grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
      echo "== $name: stopped while gathering its baseline, not a finding; once more"
      continue
    fi
    failed+=("$name")
    break
  done
done

if ((${#failed[@]} > 0)); then
  echo "FAIL: ${failed[*]}: see the failing inputs above (testdata/fuzz/<Target>/ in their packages)" >&2
  exit 1
fi
echo "fuzz: every target ran $duration without a finding"
