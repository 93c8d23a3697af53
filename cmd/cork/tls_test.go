package main_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"code.cloudfoundry.org/lager/v3/lagertest"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/certs"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep"
	"github.com/corkboard/corkboard/rep/executor"
)

// cork against a board and a rep that serve TLS and require client
// certificates: --ca-cert, --cert and --key, or BBS_CA_CERT, BBS_CERT and
// BBS_KEY.
var _ = Describe("cork with TLS", func() {
	var (
		dir   string
		board string
		store *sqldb.SQLDB
	)

	path := func(name string) string { return filepath.Join(dir, name) }
	files := func(name string) certs.Files {
		return certs.Files{CACert: path("ca.crt"), Cert: path(name + ".crt"), Key: path(name + ".key")}
	}

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		_, _, err := certs.WriteSet(dir, certs.SetOptions{Cells: []string{"cell-a", "cell-b"}})
		Expect(err).NotTo(HaveOccurred())

		database, err := testdb.Create(testdb.SQLite)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(database.Drop)
		ctx := context.Background()
		conn, err := sqldb.Open(ctx, database.Dialect, database.DSN)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(conn.Close)
		Expect(migrations.Up(ctx, conn, database.Dialect)).To(Succeed())
		store = sqldb.New(conn, database.Dialect)
		serverConfig, err := files("board").ServerConfig()
		Expect(err).NotTo(HaveOccurred())
		server := httptest.NewUnstartedServer(handlers.New(lager.NewLogger("cork-test"), store, prometheus.NewRegistry()))
		server.TLS = serverConfig
		server.StartTLS()
		DeferCleanup(server.Close)
		board = server.URL
	})

	// cork runs the binary with env (BBS_URL=board first) and args.
	cork := func(env []string, args ...string) result {
		GinkgoHelper()
		cmd := exec.Command(corkPath, args...)
		cmd.Env = append(append(withoutTLSEnv(os.Environ()), "BBS_URL="+board), env...)
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
	operatorEnv := func() []string {
		return []string{"BBS_CA_CERT=" + path("ca.crt"), "BBS_CERT=" + path("operator.crt"), "BBS_KEY=" + path("operator.key")}
	}

	It("talks to the board with the certificate from the environment", func() {
		r := cork(operatorEnv(), "ping")
		Expect(r.code).To(Equal(0), r.stderr)
		r = cork(operatorEnv(), "desire", fixture("hello-local.json"))
		Expect(r.code).To(Equal(0), r.stderr)
		r = cork(operatorEnv(), "list")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(r.stdout).To(ContainSubstring(`"process_guid":"hello"`))
	})

	It("describes an LRP to an api-client without zones, saying why: cells/list is for operators", func() {
		Expect(cork(operatorEnv(), "desire", fixture("hello-local.json")).code).To(Equal(0))
		clientEnv := []string{"BBS_CA_CERT=" + path("ca.crt"), "BBS_CERT=" + path("client.crt"), "BBS_KEY=" + path("client.key")}

		r := cork(clientEnv, "describe", "hello", "-o", "table")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(r.stdout).To(MatchRegexp(`(?m)^  INDEX  PRESENCE  STATE +CELL  DEFINITION `), "no ZONE column")
		Expect(r.stdout).To(ContainSubstring("\n  (no zones: the board did not list the cells to this certificate: Unauthorized: an api-client certificate may not call "))
		Expect(r.stdout).To(ContainSubstring("\nOperations (newest first, at most 10):\n"), "the page goes on")

		r = cork(clientEnv, "describe", "hello")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(r.stdout).To(ContainSubstring(`"cells":null,"cells_refused":"Unauthorized: an api-client certificate may not call `))

		r = cork(operatorEnv(), "describe", "hello", "-o", "table")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(r.stdout).To(MatchRegexp(`(?m)^  INDEX  PRESENCE  STATE +CELL  ZONE  DEFINITION `))
		Expect(r.stdout).NotTo(ContainSubstring("no zones"))
	})

	It("lets the flags win over the environment", func() {
		env := []string{"BBS_CA_CERT=/nonexistent/ca.crt", "BBS_CERT=/nonexistent/operator.crt", "BBS_KEY=/nonexistent/operator.key"}
		r := cork(env, "ping", "--ca-cert", path("ca.crt"), "--cert", path("operator.crt"), "--key", path("operator.key"))
		Expect(r.code).To(Equal(0), r.stderr)
		r = cork(operatorEnv(), "ping", "--cert", "/nonexistent/other.crt")
		Expect(r.code).To(Equal(2), r.stderr)
		Expect(r.stderr).To(ContainSubstring("/nonexistent/other.crt"))
	})

	DescribeTable("an https board without what it needs is a usage error naming the flag",
		func(args []string, want string) {
			r := cork(nil, append([]string{"ping"}, args...)...)
			Expect(r.code).To(Equal(2), r.stderr)
			Expect(r.stderr).To(HavePrefix("cork: " + want))
			Expect(r.stdout).To(BeEmpty())
		},
		Entry("nothing", []string{}, "--ca-cert (or BBS_CA_CERT) is needed for an https board URL"),
		Entry("no certificate", []string{"--ca-cert", "ca.crt"}, "--cert (or BBS_CERT) is needed for an https board URL"),
		Entry("no key", []string{"--ca-cert", "ca.crt", "--cert", "operator.crt"}, "--key (or BBS_KEY) is needed for an https board URL"),
		Entry("a CA file that is not there", []string{"--ca-cert", "/nonexistent/ca.crt", "--cert", "x.crt", "--key", "x.key"}, "--ca-cert: open /nonexistent/ca.crt"),
	)

	It("refuses half a pair even for a plain board", func() {
		cmd := exec.Command(corkPath, "ping", "--cert", path("operator.crt"))
		cmd.Env = append(withoutTLSEnv(os.Environ()), "BBS_URL=http://127.0.0.1:1")
		out, err := cmd.CombinedOutput()
		Expect(err).To(HaveOccurred())
		Expect(string(out)).To(HavePrefix("cork: --key (or BBS_KEY) is needed with --cert"))
	})

	It("fails the handshake with a certificate of another CA, saying so", func() {
		// A CA of another name: the board's handshake names the CAs it
		// takes, and a client that went by them would send no
		// certificate at all ("certificate required").
		other, err := certs.NewCA("another CA", certs.DefaultCAValidity)
		Expect(err).NotTo(HaveOccurred())
		leaf, err := other.Issue(certs.LeafRequest{Identity: models.RoleIdentity(models.RoleOperator)})
		Expect(err).NotTo(HaveOccurred())
		dir := GinkgoT().TempDir()
		key, err := leaf.KeyPEM()
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(dir, "operator.crt"), leaf.CertPEM(), 0o600)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "operator.key"), key, 0o600)).To(Succeed())
		r := cork([]string{"BBS_CA_CERT=" + path("ca.crt"), "BBS_CERT=" + filepath.Join(dir, "operator.crt"), "BBS_KEY=" + filepath.Join(dir, "operator.key")}, "ping")
		Expect(r.code).To(Equal(1), r.stderr)
		Expect(r.stderr).To(ContainSubstring("remote error: tls: unknown certificate authority"))
	})

	It("refuses a board whose certificate names a cell, naming both identities", func() {
		// A rep's key serving the board's API: the CA signed it, but it
		// is not the board.
		impostorTLS, err := files("cell-a").ServerConfig()
		Expect(err).NotTo(HaveOccurred())
		impostor := httptest.NewUnstartedServer(handlers.New(lager.NewLogger("impostor"), store, prometheus.NewRegistry()))
		impostor.TLS = impostorTLS
		impostor.StartTLS()
		DeferCleanup(impostor.Close)
		r := cork(append(operatorEnv(), "BBS_URL="+impostor.URL), "ping")
		Expect(r.code).To(Equal(1), r.stderr)
		Expect(r.stderr).To(ContainSubstring(`the peer's certificate names cell "cell-a", but this connection expects board (corkboard://role/board)`))
	})

	It("refuses a rep whose certificate names another cell than the one the instance runs on", func() {
		r := cork(operatorEnv(), "desire", fixture("hello-local.json"))
		Expect(r.code).To(Equal(0), r.stderr)
		// cell-b's rep key serving at the URL cell-a registered.
		impostorTLS, err := files("cell-b").ServerConfig()
		Expect(err).NotTo(HaveOccurred())
		var asked atomic.Int64
		impostor := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			asked.Add(1)
			fmt.Fprintln(w, "a log cell-b made up")
		}))
		impostor.TLS = impostorTLS
		impostor.StartTLS()
		DeferCleanup(impostor.Close)

		cellTLS, err := files("cell-a").ClientConfig()
		Expect(err).NotTo(HaveOccurred())
		cell := client.NewCellClient(board, "cell-a", client.WithTLSConfig(cellTLS))
		claimOnCellA(store, cell, impostor.URL)

		r = cork(operatorEnv(), "logs", "hello/0")
		Expect(r.code).To(Equal(1), r.stderr)
		Expect(r.stderr).To(ContainSubstring(`the peer's certificate names cell "cell-b", but this connection expects cell "cell-a" (corkboard://cell/cell-a)`))
		Expect(r.stdout).NotTo(ContainSubstring("made up"))
		Expect(asked.Load()).To(BeZero(), "no request went out")
	})

	It("reads an instance's log from a rep that serves TLS, with the same certificate", func() {
		r := cork(operatorEnv(), "desire", fixture("hello-local.json"))
		Expect(r.code).To(Equal(0), r.stderr)

		// A real rep's TLS server over a real executor; the agent is not
		// started.
		exe, err := executor.NewExecutor(executor.ExecutorConfig{
			CellID: "cell-a", DataDir: GinkgoT().TempDir(), PortMin: 40010, PortMax: 40019,
			Logger: lagertest.NewTestLogger("rep"),
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(exe.Shutdown)
		cellTLS, err := files("cell-a").ClientConfig()
		Expect(err).NotTo(HaveOccurred())
		cell := client.NewCellClient(board, "cell-a", client.WithTLSConfig(cellTLS))
		agent, err := rep.NewAgent(rep.AgentConfig{
			Cell: &models.Cell{CellId: "cell-a"}, Board: client.New(board, client.WithTLSConfig(cellTLS)),
			CellClient: cell, Executor: exe,
		})
		Expect(err).NotTo(HaveOccurred())
		repTLS, err := files("cell-a").ServerConfig()
		Expect(err).NotTo(HaveOccurred())
		repServer := httptest.NewUnstartedServer(rep.NewTLSServer(lagertest.NewTestLogger("rep"), agent, exe))
		repServer.TLS = repTLS
		repServer.StartTLS()
		DeferCleanup(repServer.Close)

		claimOnCellA(store, cell, repServer.URL)
		_, err = exe.Run(executor.InstanceSpec{
			ProcessGuid: "hello", Index: 0, InstanceGuid: "ig-0",
			Definition: &models.LRPDefinition{
				DefinitionId: "v1",
				Action:       &models.RunAction{Path: "sh", Args: []string{"-c", "echo said over TLS; sleep 60"}},
			},
		})
		Expect(err).NotTo(HaveOccurred())

		Eventually(func() string { return cork(operatorEnv(), "logs", "hello/0").stdout }).WithTimeout(30 * time.Second).
			Should(ContainSubstring("said over TLS"))
	})
})

// withoutTLSEnv drops the TLS variables of whoever runs the suite.
func withoutTLSEnv(env []string) []string {
	var kept []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "BBS_CA_CERT=") && !strings.HasPrefix(kv, "BBS_CERT=") && !strings.HasPrefix(kv, "BBS_KEY=") {
			kept = append(kept, kv)
		}
	}
	return kept
}

// claimOnCellA registers cell-a (its rep at repURL), places hello/0 there
// as a pass would, and claims it as instance ig-0, so that the board names
// cell-a's rep as where hello/0's log is.
func claimOnCellA(store *sqldb.SQLDB, cell *client.CellClient, repURL string) {
	GinkgoHelper()
	ctx := context.Background()
	_, err := cell.RegisterCell(ctx, &models.Cell{
		CellId: "cell-a", RepUrl: repURL, Zone: "z1",
		Capacity: &models.CellCapacity{MemoryMb: 1024, DiskMb: 1024, Instances: 10},
	})
	Expect(err).NotTo(HaveOccurred())
	rows, err := store.ActualLRPs(ctx, db.ActualLRPFilter{ProcessGuid: "hello", Index: indexPtr(0)})
	Expect(err).NotTo(HaveOccurred())
	Expect(rows).To(HaveLen(1))
	version := convergence.RowVersion{
		Key:   models.ActualLRPKey{ProcessGuid: "hello", Index: 0, Presence: models.ActualLRP_ORDINARY},
		State: rows[0].GetState(), ModificationIndex: int64(rows[0].GetModificationTag().GetIndex()),
	}
	_, err = store.ApplyConvergence(ctx, &convergence.ConvergenceWrites{Place: []convergence.Placement{{Row: version, CellID: "cell-a"}}})
	Expect(err).NotTo(HaveOccurred())
	_, err = cell.ClaimActualLRP(ctx, client.Instance{ProcessGuid: "hello", Index: 0, InstanceGuid: "ig-0"})
	Expect(err).NotTo(HaveOccurred())
}
