// Command corkboard-certs writes a development set of certificates for
// mutual TLS between Corkboard's components (see internal/certs):
//
//	corkboard-certs -out DIR [-cells cell-z1,cell-z2] [-hosts h1,h2] [-force]
//
// DIR gets ca.crt and ca.key (the CA), board.crt/.key (the board, server
// and client), cell-<id>.crt/.key for each cell (its rep, server and
// client; an id that starts with "cell-" is not prefixed again),
// client.crt/.key (an API client) and operator.crt/.key (an operator, for
// cork). Keys are 0600. Server certificates cover localhost, 127.0.0.1 and
// -hosts.
//
// Running it again keeps the CA, and every certificate that is still good
// for what is asked (signed by the CA, the same identity, covering the
// hosts, more than 30 days left), and issues the rest: adding a cell or a
// host is another run. -force makes a new CA and every certificate.
//
// Exit codes: 0 done, 1 it failed, 2 bad flags.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/corkboard/corkboard/internal/certs"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("corkboard-certs", flag.ContinueOnError)
	flags.SetOutput(stderr)
	out := flags.String("out", "", "`dir` to write the certificates to (required)")
	cells := flags.String("cells", "", "comma-separated cell `ids`, one certificate each")
	hosts := flags.String("hosts", "", "comma-separated further DNS names or IP `addresses` of the board and the reps")
	force := flags.Bool("force", false, "make a new CA and every certificate, even if DIR has a CA")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(stderr, "corkboard-certs: unexpected arguments %q\n", flags.Args())
		return 2
	}
	if *out == "" {
		fmt.Fprintln(stderr, "corkboard-certs: need -out DIR")
		return 2
	}

	caWritten, entries, err := certs.WriteSet(*out, certs.SetOptions{
		Cells: splitList(*cells),
		Hosts: splitList(*hosts),
		Force: *force,
	})
	if err != nil {
		fmt.Fprintln(stderr, "corkboard-certs:", err)
		return 1
	}
	if caWritten {
		fmt.Fprintf(stdout, "wrote %s (new CA)\n", filepath.Join(*out, certs.CAFile))
	} else {
		fmt.Fprintf(stdout, "kept  %s\n", filepath.Join(*out, certs.CAFile))
	}
	for _, e := range entries {
		path := filepath.Join(*out, e.Name+".crt")
		if e.Written {
			fmt.Fprintf(stdout, "wrote %s (%s): %s\n", path, e.Reason, e.Identity.URI())
		} else {
			fmt.Fprintf(stdout, "kept  %s: %s\n", path, e.Identity.URI())
		}
	}
	return 0
}

// splitList reads "a, b,c" as [a b c].
func splitList(value string) []string {
	var list []string
	for _, item := range strings.Split(value, ",") {
		if item = strings.TrimSpace(item); item != "" {
			list = append(list, item)
		}
	}
	return list
}
