#!/usr/bin/env bash
# make run-tls: hack/run.sh with mutual TLS end to end (see CORKBOARD_TLS
# there): certificates in .data/certs, the board and the reps on HTTPS
# with client certificates required, cork with operator.crt.
set -euo pipefail
cd "$(dirname "$0")/.."
CORKBOARD_TLS=1 exec hack/run.sh "$@"
