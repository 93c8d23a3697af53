package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/corkboard/corkboard/client"
)

const defaultBBSURL = "http://127.0.0.1:8889"

// app holds one invocation's global flags and streams.
type app struct {
	bbsURL  string
	format  string
	timeout time.Duration

	stdin io.Reader
	out   *bufio.Writer

	// started is set once cobra has accepted the command line and a
	// command begins to run; errors before that are usage errors.
	started bool
}

func newApp(stdin io.Reader, stdout io.Writer) *app {
	return &app{stdin: stdin, out: bufio.NewWriter(stdout)}
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "cork",
		Short: "Operator CLI for a Corkboard board",
		Long: `cork talks to a Corkboard board (the BBS) over its HTTP API.

Output is one JSON object per line (snake_case field names) unless -o table
asks for a table. Errors go to stderr as "cork: <error>".

Exit codes: 0 success; 1 the command failed (an error from the board, the board
unreachable, an unreadable or invalid spec file); 2 a usage error (unknown
command or flag, wrong arguments, a bad flag value); 3, 4 and 5 from 'rollout
status --watch': the rollout FAILED (3), was REVERTED (4), or is HOLDING at
a staged phase's target (5).

Tables show what people need in one line each: the update strategy as the
board applies it (every default filled in), the reason an instance crashed or
has no cell. JSON output has every message as stored.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if a.format != formatJSON && a.format != formatTable {
				return usageErrorf("-o must be json or table, not %q", a.format)
			}
			if a.timeout < 0 {
				return usageErrorf("--timeout must not be negative")
			}
			return nil
		},
	}
	bbsURL := os.Getenv("BBS_URL")
	if bbsURL == "" {
		bbsURL = defaultBBSURL
	}
	flags := root.PersistentFlags()
	flags.StringVar(&a.bbsURL, "bbs-url", bbsURL, "board address (env BBS_URL)")
	flags.StringVarP(&a.format, "output", "o", formatJSON, "output format: json (one object per line) or table")
	flags.DurationVar(&a.timeout, "timeout", client.DefaultTimeout, "time limit for each request to the board")
	root.SetIn(a.stdin)
	root.SetOut(a.out)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageErrorf("%v", err) })

	root.AddCommand(
		a.pingCommand(),
		a.desireCommand(),
		a.getCommand(),
		a.listCommand(),
		a.schedulingInfosCommand(),
		a.updateCommand(),
		a.rolloutCommand(),
		a.rollbackCommand(),
		a.removeCommand(),
		a.operationsCommand(),
		a.operationCommand(),
		a.definitionsCommand(),
		a.definitionCommand(),
		a.actualLRPsCommand(),
		a.domainsCommand(),
		a.setDomainCommand(),
		a.cellsCommand(),
		a.cellCommand(),
		a.eventsCommand(),
		a.logsCommand(),
	)
	return root
}

// runE wraps a command body: it marks the invocation as started and gives
// the body a context that ends on Ctrl-C or SIGTERM.
func (a *app) runE(body func(ctx context.Context, cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		a.started = true
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return body(ctx, cmd, args)
	}
}

func (a *app) client() *client.Client {
	return client.New(a.bbsURL, client.WithTimeout(a.timeout), client.WithRequestedBy(requestedBy()))
}

// exactArgs is cobra.ExactArgs with the argument names in the message.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return usageErrorf("%s wants %d argument(s), %s; got %d", cmd.Name(), len(names), strings.Join(names, " "), len(args))
		}
		return nil
	}
}
