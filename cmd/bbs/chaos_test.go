package main

import "os"

// The fault scenarios (label "chaos") run in two sizes. `make chaos`
// (hack/chaos.sh) sets CORKBOARD_CHAOS=full and runs every variant of
// each, with its full iteration counts. `make test`, and so CI, runs a
// bounded part that still covers every kind of fault on both server
// databases — e.g. it freezes Postgres and restarts MariaDB rather than
// both on both — and fewer iterations. The variants it leaves out are not
// declared there at all, rather than skipped.
func fullChaos() bool { return os.Getenv("CORKBOARD_CHAOS") == "full" }
