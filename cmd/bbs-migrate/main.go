// Command bbs-migrate inspects and migrates a board's database: status,
// up [--target N], plan (the SQL up would run, changing nothing), validate
// (non-zero exit unless the schema matches this binary) and rotate-keys
// --config BOARD.json (re-encrypt run definitions and operation parameters
// under the board's active encryption key; see rotate_keys.go).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := newRootCommand()
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "bbs-migrate: %v\n", err)
		stop()
		os.Exit(1)
	}
}
