#!/usr/bin/env bash
# Fails when the committed generated code does not match the .proto sources.
# With protoc installed it regenerates into a scratch folder and diffs; the
# checksum test in models/ covers machines without protoc.
set -euo pipefail
cd "$(dirname "$0")/.."
(cd models && sha256sum --quiet -c proto.sum) || { echo "models/*.proto changed: run make generate" >&2; exit 1; }
if ! command -v protoc >/dev/null; then
  echo "protoc not installed: checked proto.sum only"
  exit 0
fi
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
hack/generate.sh "$tmp"
for f in "$tmp"/*.pb.go; do
  if ! cmp -s "$f" "models/$(basename "$f")"; then
    echo "models/$(basename "$f") is stale: run make generate" >&2
    exit 1
  fi
done
echo "generated code is current"
