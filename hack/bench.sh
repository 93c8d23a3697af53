#!/usr/bin/env bash
# make bench: the load tool against an in-process board on each database,
# then the Go benchmarks of the storage layer. Postgres and MySQL run when
# their admin DSNs are set (see .ci/run for the local defaults).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "## $(date -u +%FT%TZ) $(nproc) cores, $(go version | cut -d' ' -f3)"
bin/bbs-load -driver sqlite
if [ -n "${CORKBOARD_POSTGRES_DSN:-}" ]; then
  bin/bbs-load -driver postgres -dsn "$CORKBOARD_POSTGRES_DSN"
fi
if [ -n "${CORKBOARD_MYSQL_DSN:-}" ]; then
  bin/bbs-load -driver mysql -dsn "$CORKBOARD_MYSQL_DSN"
fi
go test -run '^$' -bench . -benchtime 2s ./db/sqldb/
