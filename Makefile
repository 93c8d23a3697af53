# Corkboard. `make run` starts a dev board and two reps; `make test` runs every suite;
# `make help` lists the targets. Each target's line ends in "## " and its one
# line for make help; a target without one is missing from help, which
# hack/makefile_test.go refuses.
GO ?= go
BIN := bin

.PHONY: all build run run-tls test test-browser vet check-generated generate bench clean help

all: build ## the same as build

# help: one line per target, from the "## " at the end of its line.
help: ## this list
	@echo "Targets (make TARGET):"
	@awk -F ':.*## ' '/^[a-z][a-z-]*:.*## / { printf "  %-16s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

build: ## every command into bin/ (bbs, rep, cork, bbs-load, bbs-migrate, corkboard-certs)
	$(GO) build -o $(BIN)/ ./cmd/...

# run: the board (SQLite in ./.data; see hack/run.sh) and two reps in zones z1 and
# z2, until Ctrl-C; see hack/run.sh. bin/hello serves the local specs
# (fixtures/lrps/hello-local*.json); bin/droplets builds and serves hello's
# droplets for the others.
run: build ## a dev board and two reps on this machine until Ctrl-C (hack/run.sh)
	$(GO) build -o $(BIN)/hello ./fixtures/apps/hello
	$(GO) build -o $(BIN)/droplets ./hack/droplets
	GO="$(GO)" hack/run.sh

# run-tls: the same cluster with mutual TLS end to end: certificates in
# .data/certs (bin/corkboard-certs, kept across runs), the board and the
# reps on HTTPS requiring client certificates, the board encrypting what it
# stores (state in .data/tls); it prints the cork environment (BBS_URL,
# BBS_CA_CERT, BBS_CERT, BBS_KEY). See hack/run.sh.
run-tls: build ## the same cluster with mutual TLS end to end (hack/run-tls.sh)
	$(GO) build -o $(BIN)/hello ./fixtures/apps/hello
	$(GO) build -o $(BIN)/droplets ./hack/droplets
	GO="$(GO)" hack/run-tls.sh

# test: every suite, then the storage suite again with one in three write
# transactions failing at commit (a conflict, or the connection lost before
# or after the COMMIT; db/sqldb/commit.go), which must change no outcome.
# The end-to-end suite runs beside the others (hack/test.sh).
test: check-generated vet ## every suite, then the storage suite with commit faults (needs the databases)
	GO="$(GO)" hack/test.sh

# test-browser: the dashboard in Debian's Chromium (/usr/bin/chromium),
# driven by playwright-core from ui/browsertest (npm ci there when its
# node_modules is missing; nothing else is installed); see
# e2e/browser_e2e_test.go. Screenshots go to $CORKBOARD_ARTIFACTS, or a
# temp dir it prints.
test-browser: ## the dashboard in Chromium, driven by playwright-core
	@if [ ! -d ui/browsertest/node_modules/playwright-core ]; then cd ui/browsertest && npm ci --no-audit --no-fund; fi
	$(GO) test -v -tags browser -count=1 -timeout 10m ./e2e/ -ginkgo.label-filter=browser -ginkgo.no-color

vet: ## gofmt and go vet
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# fuzz: every fuzz target (models, handlers, cork's spec files, the board's
# and the rep's configs) for 60s each, one at a time; fuzz-smoke: 3s each,
# as CI runs them after the tests. A finding fails the run and is written
# to the target's testdata/fuzz/. See hack/fuzz.sh.
.PHONY: fuzz fuzz-smoke
fuzz: ## every fuzz target for 60s each
	GO="$(GO)" hack/fuzz.sh 60s

fuzz-smoke: ## every fuzz target for 3s each, as CI runs them
	GO="$(GO)" hack/fuzz.sh 3s

# chaos: the fault scenarios on real binaries and real databases (the
# board SIGKILLed at random moments of rollouts, 20 times, alone on SQLite
# and as the lease owner of two on Postgres and MySQL; a private Postgres
# and a private MariaDB frozen, and stopped mid-rollout; two boards with
# skewed clocks; real reps killed, partitioned, and serving through
# database faults; the database's writer SIGKILLed 10 times on a Galera
# cluster and on a Patroni pair, and the converging board partitioned from
# each, as make ha-galera and make ha-postgres do), each printing its
# figures. make test runs a bounded
# part of them (cmd/bbs/chaos_test.go), in the cmd/bbs and e2e suites.
.PHONY: chaos
chaos: ## the fault scenarios on real binaries and databases, with their figures
	GO="$(GO)" hack/chaos.sh

check-generated: ## fails when generated code differs from make generate
	hack/check-generated.sh

generate: ## the protobuf code and models/proto.sum from models/*.proto
	hack/generate.sh

# config-ref: docs/config.md's tables from the board's and the rep's Config
# structs: keys and types from the fields, meanings from their doc
# comments, defaults from applyDefaults (internal/configref). The same
# specs, run by make test without CORKBOARD_UPDATE_CONFIG_REF, fail when
# the file differs or a field has no doc comment.
.PHONY: config-ref
config-ref: ## docs/config.md from the board's and the rep's Config structs
	CORKBOARD_UPDATE_CONFIG_REF=1 $(GO) test -count=1 ./cmd/bbs/ ./cmd/rep/ -ginkgo.focus 'The config reference'

# ha-galera, ha-postgres: the writer-kill scenario (e2e/chaos_ha_test.go)
# on a private three-node Galera cluster, or a private Postgres pair under
# Patroni, behind HAProxy on loopback ports: two boards, two reps running
# 12 instances behind a router-like client, the writer SIGKILLed under 10
# rollouts in sequence; then the converging board cut off from the
# cluster (boards and reps run on hosts of their own, network namespaces).
# Prints the failover times and the counts; fails unless nothing
# acknowledged was lost. See docs/ha.md and hack/ha.sh.
.PHONY: ha-galera ha-postgres
ha-galera: ## the writer-kill scenario on a private Galera cluster
	GO="$(GO)" hack/ha.sh galera

ha-postgres: ## the writer-kill scenario on a private Postgres pair under Patroni
	GO="$(GO)" hack/ha.sh postgres

# bench: every scenario on each database, and issue 28's figures beside
# a48ab90's in the same run, with new ÷ old ratios; see hack/bench.sh.
bench: build ## every load scenario on each database (about 45 minutes)
	hack/bench.sh

# bench-compare OLD=<commit>: peer (this tree's load generator driving
# OLD's board and this tree's) and converge (each commit's own), alternated
# in one run (ROUNDS, default 2), then new ÷ old per figure; see
# hack/bench-compare.sh.
.PHONY: bench-compare
bench-compare: ## OLD=<commit>: this tree against OLD, new ÷ old per figure
	hack/bench-compare.sh

clean: ## removes bin/
	rm -rf $(BIN)
