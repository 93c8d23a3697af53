// Command cork is the operator CLI for a Corkboard board.
//
// Output is one JSON value per line by default (protojson, snake_case field
// names), or a table with -o table. Errors go to stderr as "cork: <error>".
// Exit codes: 0 success, 1 the command failed (the board said no, the board
// could not be reached, a spec file is unreadable or invalid), 2 the command
// line is wrong (unknown command or flag, wrong arguments, a bad flag value),
// and for 'rollout status --watch' a rollout that ended without the requested
// definition running: 3 it FAILED (nothing moves until someone acts), 4 it
// was REVERTED (auto_revert took every index back to the healthy definition),
// 5 a staged phase is HOLDING at its target, waiting for a promote, 6 the
// rollout's failure policy HELD it (its analysis failed, or its deadline
// passed, under on_failure hold).
// Scripts that deploy can tell "cork could not tell" (1) from "the rollout
// did not take" (3, 4), whether anyone needs to step in (3, 6) or not (4),
// and "the phase is done, decide on the next" (5).
package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
)

const (
	exitOK              = 0
	exitFailure         = 1
	exitUsage           = 2
	exitRolloutFailed   = 3
	exitRolloutReverted = 4
	exitRolloutHolding  = 5
	exitRolloutHeld     = 6
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes one cork invocation and returns its exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	app := newApp(stdin, stdout)
	stderr = &screenWriter{w: stderr}
	app.errOut = stderr
	root := app.rootCommand()
	root.SetArgs(args)
	err := root.Execute()
	if flushErr := app.out.Flush(); err == nil {
		err = flushErr
	}
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "cork: %v\n", err)
	var dial *net.OpError
	if app.defaultURL && errors.As(err, &dial) && dial.Op == "dial" {
		fmt.Fprintf(stderr, "cork: neither --bbs-url nor BBS_URL is set: cork tried %s\n", defaultBBSURL)
	}
	var outcome *outcomeError
	if errors.As(err, &outcome) {
		return outcome.code
	}
	var usage *usageError
	if !app.started || errors.As(err, &usage) {
		fmt.Fprintf(stderr, "Run 'cork --help' for usage.\n")
		return exitUsage
	}
	return exitFailure
}

// usageError is a wrong command line that cork itself finds (cobra's own
// complaints count as usage errors too, see app.started).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// outcomeError is a command that ran and learnt an outcome its exit code
// reports: a rollout that failed, was reverted, or holds at a staged
// phase's target.
type outcomeError struct {
	code int
	msg  string
}

func (e *outcomeError) Error() string { return e.msg }
