#!/usr/bin/env bash
# Regenerates models/*.pb.go from models/*.proto and records the sources'
# checksum in models/proto.sum, which a test compares so that stale
# generated code fails `make test` even where protoc is not installed.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-models}"
plugin="$(go tool -n protoc-gen-go)"
protoc -I models -I /usr/include \
  --plugin=protoc-gen-go="$plugin" \
  --go_out="$out" --go_opt=paths=source_relative \
  models/*.proto
if [ "$out" = models ]; then
  (cd models && sha256sum *.proto) > models/proto.sum
fi
