#!/usr/bin/env bash
# make test: every package's suite, then the storage suite again with one
# in three write transactions failing at commit (a conflict, or the
# connection lost before or after the COMMIT; db/sqldb/commit.go), which
# must change no outcome.
#
# Two streams run side by side, each one package at a time: the
# end-to-end suite (./e2e, about half the time; it runs built binaries on
# SQLite and on database servers of its own, never the shared ones) and
# every other package followed by the commit-fault run. Packages that do
# use the shared PostgreSQL and MariaDB stay in one stream, so the shared
# servers see one suite at a time, as before. The e2e stream's output is
# printed when both have ended; either failing fails the run.
set -uo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-go}"

e2e_log="$(mktemp)"
trap 'rm -f "$e2e_log"' EXIT
"$GO" test -count=1 -timeout 30m ./e2e/ >"$e2e_log" 2>&1 &
e2e_pid=$!

rest_status=0
# shellcheck disable=SC2046 # one argument per package
"$GO" test -count=1 -p 1 -timeout 30m $("$GO" list ./... | grep -v '/e2e$') || rest_status=$?
if [ "$rest_status" -eq 0 ]; then
  CORKBOARD_COMMIT_FAULTS=3 "$GO" test -count=1 -timeout 10m ./db/sqldb/ || rest_status=$?
fi

e2e_status=0
wait "$e2e_pid" || e2e_status=$?
echo "--- ./e2e (ran beside the packages above)"
cat "$e2e_log"
if [ "$rest_status" -ne 0 ] || [ "$e2e_status" -ne 0 ]; then
  echo "FAIL: the packages and the commit-fault run exited $rest_status, ./e2e $e2e_status" >&2
  exit 1
fi
