package main_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"code.cloudfoundry.org/lager/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/events"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
)

func TestCork(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "cork Suite")
}

var corkPath string

var _ = BeforeSuite(func() {
	var err error
	corkPath, err = gexec.Build("github.com/corkboard/corkboard/cmd/cork")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(gexec.CleanupBuildArtifacts)
})

// startBoard serves the real API over a fresh, migrated SQLite database for
// one spec and returns its URL.
func startBoard(opts ...handlers.Option) string {
	url, _ := startBoardWithStore(nil, opts...)
	return url
}

// startBoardWithStore is startBoard with options for the store, which it
// also returns, for specs that arrange what the API cannot (the time, or
// a placement).
func startBoardWithStore(storeOpts []sqldb.Option, opts ...handlers.Option) (string, *sqldb.SQLDB) {
	store := openStore(storeOpts...)
	return serve(store, opts...), store
}

// startBoardWithEventLog is startBoard whose event stream follows the
// store's event log, as a real board's does.
func startBoardWithEventLog() (string, *sqldb.SQLDB, *events.Hub) {
	var tailer *events.Tailer
	store := openStore(sqldb.WithEventsCommitted(func() { tailer.Wake() }))
	ctx, cancel := context.WithCancel(context.Background())
	DeferCleanup(cancel)
	hub, tailer, err := events.Follow(ctx, store, 50*time.Millisecond, lager.NewLogger("cork-test"))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(hub.Close)
	return serve(store, handlers.WithEvents(hub)), store, hub
}

// openStore migrates a new SQLite database and opens a store on it.
func openStore(opts ...sqldb.Option) *sqldb.SQLDB {
	database, err := testdb.Create(testdb.SQLite)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(database.Drop)
	ctx := context.Background()
	conn, err := sqldb.Open(ctx, database.Dialect, database.DSN)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(conn *sql.DB) { Expect(conn.Close()).To(Succeed()) }, conn)
	Expect(migrations.Up(ctx, conn, database.Dialect)).To(Succeed())
	return sqldb.New(conn, database.Dialect, opts...)
}

// serve answers the API of store on a loopback port and returns its URL.
func serve(store *sqldb.SQLDB, opts ...handlers.Option) string {
	handler := handlers.New(lager.NewLogger("cork-test"), store, prometheus.NewRegistry(), opts...)
	server := httptest.NewServer(handler)
	DeferCleanup(server.Close)
	return server.URL
}

// result is one finished cork run.
type result struct {
	stdout string
	stderr string
	code   int
}

// lines splits stdout into its non-empty lines.
func (r result) lines() []string {
	var lines []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

// runCork runs the built binary with BBS_URL pointing at boardURL.
func runCork(boardURL string, stdin string, args ...string) result {
	cmd := exec.Command(corkPath, args...)
	cmd.Env = append(os.Environ(), "BBS_URL="+boardURL)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	} else {
		Expect(err).NotTo(HaveOccurred())
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// fixture is the path of a file in fixtures/lrps, from this package's folder.
func fixture(name string) string {
	return filepath.Join("..", "..", "fixtures", "lrps", name)
}
