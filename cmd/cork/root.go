package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/internal/certs"
	"github.com/corkboard/corkboard/models"
)

const defaultBBSURL = "http://127.0.0.1:8889"

// app holds one invocation's global flags and streams.
type app struct {
	bbsURL  string
	format  string
	timeout time.Duration
	// The TLS flags: PEM files of the CA and of cork's client certificate.
	caCert, cert, key string
	// tlsConfig is made of them before a command runs; nil without them.
	tlsConfig *tls.Config

	stdin io.Reader
	// out is what cork prints, through screen (screenWriter) to stdout;
	// rawWriter writes past it.
	out    *bufio.Writer
	screen *screenWriter
	// errOut takes warnings ("cork: warning: …"), which do not belong in
	// the output a script parses; nil discards them.
	errOut io.Writer
	// terminal says whether out goes to a terminal, and how wide it is:
	// a rollout watch draws one updating line there.
	terminal terminalFunc

	// started is set once cobra has accepted the command line and a
	// command begins to run; errors before that are usage errors.
	started bool
	// defaultURL says neither --bbs-url nor BBS_URL named the board: an
	// error reaching it says cork tried defaultBBSURL.
	defaultURL bool
}

func newApp(stdin io.Reader, stdout io.Writer) *app {
	screen := &screenWriter{w: stdout}
	return &app{stdin: stdin, out: bufio.NewWriter(screen), screen: screen, terminal: terminalOf(stdout)}
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "cork",
		Short: "Operator CLI for a Corkboard board",
		Long: `cork talks to a Corkboard board (the BBS) over its HTTP API.

Output is one JSON object per line (snake_case field names) unless -o table
asks for a table. Errors go to stderr as "cork: <error>", warnings about
something done as asked as "cork: warning: <warning>".

Exit codes: 0 success; 1 the command failed (an error from the board, the board
unreachable, an unreadable or invalid spec file); 2 a usage error (unknown
command or flag, wrong arguments, a bad flag value); 3, 4, 5 and 6 from
'rollout status --watch': the rollout FAILED (3), was REVERTED (4), is HOLDING
at a staged phase's target (5), or was HELD by its failure policy (6).

Tables show what people need in one line each: the update strategy as the
board applies it (every default filled in), the reason an instance crashed or
has no cell. JSON output has every message as stored.

A board with TLS (an https --bbs-url) wants a client certificate: --ca-cert,
--cert and --key (or BBS_CA_CERT, BBS_CERT, BBS_KEY; the flags win), e.g. the
operator.crt of corkboard-certs. cork trusts only that CA, and uses the same
certificate with the reps (cork logs).`,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			hasWide := cmd.Annotations[wideAnnotation] != ""
			switch {
			case a.format == formatJSON, a.format == formatTable:
			case hasWide && (a.format == formatWide || a.format == formatAddress || a.format == formatPid):
			case a.format == formatWide, a.format == formatAddress, a.format == formatPid:
				return usageErrorf("-o %s is for actual-lrps only; here -o must be json or table", a.format)
			case hasWide:
				return usageErrorf("-o must be json, table, wide, address or pid, not %q", a.format)
			default:
				return usageErrorf("-o must be json or table, not %q", a.format)
			}
			if a.timeout < 0 {
				return usageErrorf("--timeout must not be negative")
			}
			// Help and shell completion talk to no board: a TLS setting
			// that does not load must not break them (the completion
			// scripts call "cork __complete" at every Tab).
			switch {
			case cmd.Name() == "help", cmd.Name() == cobra.ShellCompRequestCmd, cmd.Name() == cobra.ShellCompNoDescRequestCmd,
				cmd.HasParent() && cmd.Parent().Name() == "completion":
				return nil
			}
			if err := checkBoardURL(a.bbsURL); err != nil {
				return err
			}
			a.defaultURL = !cmd.Flags().Changed("bbs-url") && os.Getenv("BBS_URL") == ""
			return a.loadTLS()
		},
	}
	bbsURL := os.Getenv("BBS_URL")
	if bbsURL == "" {
		bbsURL = defaultBBSURL
	}
	flags := root.PersistentFlags()
	flags.StringVar(&a.bbsURL, "bbs-url", bbsURL, "board address (env BBS_URL)")
	flags.StringVar(&a.caCert, "ca-cert", os.Getenv("BBS_CA_CERT"), "PEM `file` of the CA the board's and the reps' certificates chain to (env BBS_CA_CERT)")
	flags.StringVar(&a.cert, "cert", os.Getenv("BBS_CERT"), "PEM `file` of cork's client certificate, e.g. an operator's (env BBS_CERT)")
	flags.StringVar(&a.key, "key", os.Getenv("BBS_KEY"), "PEM `file` of the key of --cert (env BBS_KEY)")
	flags.StringVarP(&a.format, "output", "o", formatJSON, "output format: json (one object per line) or table; actual-lrps also has wide (a table with each instance's pid), address and pid (one instance's host:port or pid a line, for scripts)")
	flags.DurationVar(&a.timeout, "timeout", client.DefaultTimeout, "time limit for each request to the board")
	root.SetIn(a.stdin)
	root.SetOut(a.out)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageErrorf("%v", err) })

	root.AddCommand(
		a.pingCommand(),
		a.desireCommand(),
		a.getCommand(),
		a.describeCommand(),
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
		a.freezeCommand(),
		a.budgetGroupCommand(),
		a.eventsCommand(),
		a.logsCommand(),
		a.waitCommand(),
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
	return client.New(a.bbsURL, client.WithTimeout(a.timeout), client.WithRequestedBy(requestedBy()), client.WithTLSConfig(a.tlsConfig))
}

// tlsFlag is one of the TLS flags, for messages: its name, its
// environment variable and its value.
type tlsFlag struct{ name, env, value string }

// loadTLS makes the TLS config of the board's and the reps' clients from
// --ca-cert, --cert and --key. An https board needs all three: the board
// requires a client certificate, and cork trusts only the given CA. A
// missing one, a half pair, or a file that does not load is a usage error
// naming the flag.
func (a *app) loadTLS() error {
	caCert := tlsFlag{"--ca-cert", "BBS_CA_CERT", a.caCert}
	cert := tlsFlag{"--cert", "BBS_CERT", a.cert}
	key := tlsFlag{"--key", "BBS_KEY", a.key}
	if strings.HasPrefix(strings.ToLower(a.bbsURL), "https://") {
		for _, f := range []tlsFlag{caCert, cert, key} {
			if f.value == "" {
				return usageErrorf("%s (or %s) is needed for an https board URL (%s): the board wants cork's client certificate (--ca-cert, --cert, --key)", f.name, f.env, a.bbsURL)
			}
		}
	}
	if caCert.value == "" && cert.value == "" && key.value == "" {
		return nil
	}
	for _, pair := range [][2]tlsFlag{{cert, key}, {key, cert}, {caCert, cert}, {cert, caCert}} {
		if pair[0].value != "" && pair[1].value == "" {
			return usageErrorf("%s (or %s) is needed with %s", pair[1].name, pair[1].env, pair[0].name)
		}
	}
	pool, err := certs.LoadPool(caCert.value)
	if err != nil {
		return usageErrorf("--ca-cert: %v", err)
	}
	pair, err := certs.LoadKeyPair(cert.value, key.value)
	if err != nil {
		return usageErrorf("--cert and --key: %v", err)
	}
	a.tlsConfig = certs.ClientConfig(pair, pool)
	return nil
}

// repHTTPClient is how cork reaches the rep of cellID (cork logs): with
// the same certificate and CA as the board, since a rep with TLS wants
// them too, and requiring the rep's certificate to name that cell.
func (a *app) repHTTPClient(cellID string) *http.Client {
	if a.tlsConfig == nil {
		return http.DefaultClient
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = certs.ExpectPeer(a.tlsConfig, models.CellIdentity(cellID))
	return &http.Client{Transport: transport}
}

// exactArgs is cobra.ExactArgs with the argument names in the message. A
// command that takes none, and has commands of its own (cork cell list),
// says an argument is an unknown command of its, naming them.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) == len(names):
			return nil
		case len(names) == 0 && cmd.HasAvailableSubCommands():
			var commands []string
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() {
					commands = append(commands, sub.Name())
				}
			}
			return usageErrorf("unknown command %q for %q; its commands: %s", args[0], cmd.CommandPath(), strings.Join(commands, ", "))
		case len(names) == 0:
			return usageErrorf("%s takes no arguments; got %d", cmd.Name(), len(args))
		}
		return usageErrorf("%s wants %d argument(s), %s; got %d", cmd.Name(), len(names), strings.Join(names, " "), len(args))
	}
}

// checkBoardURL refuses a board address cork could not use: it is
// http:// or https://, a host and port, and no path (cork adds /v1/…).
func checkBoardURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
		return usageErrorf("--bbs-url (or BBS_URL) must be http://HOST:PORT or https://HOST:PORT, not %q", raw)
	case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return usageErrorf("--bbs-url (or BBS_URL) is the board's address alone, %s://%s, not %q: cork adds the API's paths", u.Scheme, u.Host, raw)
	}
	return nil
}
