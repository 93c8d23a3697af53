package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// startupLimit bounds how long a board may take to migrate and listen. It
// is a deadline against hanging, not a speed requirement.
const startupLimit = time.Minute

var listeningURL = regexp.MustCompile(`"message":"bbs\.api-server\.listening".*"url":"(https?://[^"]+)"`)

// runningBoard is a bbs process that logged its URL.
type runningBoard struct {
	session *gexec.Session
	url     string

	// api is the client client() returns: one for the board's life, as
	// a real caller keeps one (see client).
	apiOnce sync.Once
	api     *client.Client
}

func startBoard(args ...string) *runningBoard {
	GinkgoHelper()
	return startBoardWriting(GinkgoWriter, args...)
}

// startBoardWriting is startBoard with the board's output copied to out
// rather than to the spec's report.
func startBoardWriting(out io.Writer, args ...string) *runningBoard {
	GinkgoHelper()
	return startBoardCommand(out, exec.Command(bbsPath, args...))
}

// startBoardCommand is startBoardWriting for a command that runs bbs: in a
// network namespace of its own, say (internal/netns).
func startBoardCommand(out io.Writer, command *exec.Cmd) *runningBoard {
	GinkgoHelper()
	session, err := gexec.Start(command, out, out)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { session.Kill().Wait(startupLimit) })

	Eventually(session.Out).WithTimeout(startupLimit).Should(gbytes.Say(`bbs\.api-server\.listening`))
	match := listeningURL.FindSubmatch(session.Out.Contents())
	Expect(match).NotTo(BeNil(), "no URL in the listening line:\n%s", session.Out.Contents())
	return &runningBoard{session: session, url: string(match[1])}
}

// post sends a raw JSON body, as curl would, and decodes the JSON answer.
func (b *runningBoard) post(route, body string) map[string]any {
	GinkgoHelper()
	resp, err := http.Post(b.url+route, "application/json", strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	Expect(resp.Header.Get("Content-Type")).To(Equal("application/json"))
	raw, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	var answer map[string]any
	Expect(json.Unmarshal(raw, &answer)).To(Succeed(), "body: %s", raw)
	return answer
}

func (b *runningBoard) metrics() string {
	GinkgoHelper()
	resp, err := http.Get(b.url + "/metrics")
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	raw, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return string(raw)
}

func (b *runningBoard) stop(signal os.Signal) {
	GinkgoHelper()
	b.session.Signal(signal)
	Eventually(b.session).WithTimeout(startupLimit).Should(gexec.Exit(0))
	Expect(b.session.Out).To(gbytes.Say(`bbs\.exited`))
}

func desireBody(guid string) string {
	return fmt.Sprintf(`{"desired_lrp": {"process_guid": %q, "domain": "e2e", "instances": 2,
		"definition": {"action": {"path": "/bin/sleep", "args": ["3600"]}, "memory_mb": 64}}}`, guid)
}

var _ = Describe("bbs", func() {
	Describe("-dev", func() {
		var dataDir string

		BeforeEach(func() {
			dataDir = filepath.Join(GinkgoT().TempDir(), "data")
		})

		It("serves on loopback from a SQLite file that outlives it, and stops cleanly on SIGTERM", func() {
			board := startBoard("-dev", "-data-dir", dataDir, "-listen", "127.0.0.1:0")
			Expect(board.url).To(HavePrefix("http://127.0.0.1:"))
			Expect(board.session.Err).To(gbytes.Say("dev mode"))
			Eventually(board.session.Err).Should(gbytes.Say("listening on " + regexp.QuoteMeta(board.url)))
			Expect(string(board.session.Out.Contents())).To(ContainSubstring(`"message":"bbs.dev-mode"`))
			Expect(string(board.session.Out.Contents())).To(ContainSubstring(dataDir))
			Expect(filepath.Join(dataDir, "board.db")).To(BeAnExistingFile())

			Expect(board.post(models.RoutePing, `{}`)).To(HaveKeyWithValue("available", true))

			desired := board.post(models.RouteDesireDesiredLRP, desireBody("e2e-lrp"))
			Expect(desired).NotTo(HaveKey("error"))
			Expect(desired["desired_lrp"]).To(HaveKeyWithValue("process_guid", "e2e-lrp"))
			Expect(board.metrics()).To(ContainSubstring(`corkboard_http_requests_total{outcome="success",route="/v1/desired_lrps/desire"} 1`))

			board.stop(syscall.SIGTERM)

			again := startBoard("-dev", "-data-dir", dataDir, "-listen", "127.0.0.1:0")
			got := again.post(models.RouteDesiredLRPByProcessGuid, `{"process_guid": "e2e-lrp"}`)
			Expect(got).NotTo(HaveKey("error"))
			Expect(got["desired_lrp"]).To(HaveKeyWithValue("instances", BeEquivalentTo(2)))
			actual := again.post(models.RouteActualLRPs, `{"process_guid": "e2e-lrp"}`)
			Expect(actual["actual_lrps"]).To(HaveLen(2))
			again.stop(syscall.SIGINT)
		})

		It("answers bad input with a typed error in JSON", func() {
			board := startBoard("-dev", "-data-dir", dataDir, "-listen", "127.0.0.1:0")
			answer := board.post(models.RouteDesireDesiredLRP, `{"desired_lrp": {"process_guid": "no spaces allowed"}}`)
			Expect(answer["error"]).To(HaveKeyWithValue("type", "InvalidRequest"))
			Expect(answer["error"]).To(HaveKeyWithValue("message", HavePrefix("desired_lrp.process_guid:")))
			board.stop(syscall.SIGTERM)
		})

		It("refuses to listen beyond loopback", func() {
			session, err := gexec.Start(exec.Command(bbsPath, "-dev", "-data-dir", dataDir, "-listen", "0.0.0.0:0"), GinkgoWriter, GinkgoWriter)
			Expect(err).NotTo(HaveOccurred())
			Eventually(session).WithTimeout(startupLimit).Should(gexec.Exit(1))
			Expect(session.Err).To(gbytes.Say("listen_address"))
			Expect(filepath.Join(dataDir, "board.db")).NotTo(BeAnExistingFile())
		})

		It("refuses a database migrated by a newer corkboard", func() {
			board := startBoard("-dev", "-data-dir", dataDir, "-listen", "127.0.0.1:0")
			board.stop(syscall.SIGTERM)

			conn, err := sqldb.Open(context.Background(), sqldb.SQLite, filepath.Join(dataDir, "board.db"))
			Expect(err).NotTo(HaveOccurred())
			_, err = conn.Exec(`INSERT INTO schema_migrations (version, name, checksum, applied_at, dirty) VALUES (9999, 'from_the_future', 'x', 0, false)`)
			Expect(err).NotTo(HaveOccurred())
			Expect(conn.Close()).To(Succeed())

			session, err := gexec.Start(exec.Command(bbsPath, "-dev", "-data-dir", dataDir, "-listen", "127.0.0.1:0"), GinkgoWriter, GinkgoWriter)
			Expect(err).NotTo(HaveOccurred())
			Eventually(session).WithTimeout(startupLimit).Should(gexec.Exit(1))
			Expect(session.Err).To(gbytes.Say("refusing to start: the database was migrated by a newer corkboard"))
			Expect(session.Out).NotTo(gbytes.Say(`listening`))
		})
	})

	Describe("-config", func() {
		writeConfig := func(cfg map[string]any) string {
			raw, err := json.Marshal(cfg)
			Expect(err).NotTo(HaveOccurred())
			path := filepath.Join(GinkgoT().TempDir(), "bbs.json")
			Expect(os.WriteFile(path, raw, 0o600)).To(Succeed())
			return path
		}

		It("fails naming database_driver when the driver is bogus", func() {
			path := writeConfig(map[string]any{"listen_address": "127.0.0.1:0", "database_driver": "bogus", "database_dsn": "x"})
			session, err := gexec.Start(exec.Command(bbsPath, "-config", path), GinkgoWriter, GinkgoWriter)
			Expect(err).NotTo(HaveOccurred())
			Eventually(session).WithTimeout(startupLimit).Should(gexec.Exit(1))
			Expect(session.Err).To(gbytes.Say(`config: database_driver: "bogus" is not one of sqlite, postgres, mysql`))
		})

		It("fails naming the database when it cannot connect", func() {
			path := writeConfig(map[string]any{"listen_address": "127.0.0.1:0", "database_driver": "postgres",
				"database_dsn": "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=5"})
			session, err := gexec.Start(exec.Command(bbsPath, "-config", path), GinkgoWriter, GinkgoWriter)
			Expect(err).NotTo(HaveOccurred())
			Eventually(session).WithTimeout(startupLimit).Should(gexec.Exit(1))
			Expect(session.Err).To(gbytes.Say("open postgres database"))
		})

		for _, dialect := range testdb.MustDialects() {
			It("serves from "+dialect+" and keeps its data across a restart", func() {
				database, err := testdb.Create(dialect)
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(database.Drop)
				path := writeConfig(map[string]any{
					"listen_address":  "127.0.0.1:0",
					"database_driver": dialect,
					"database_dsn":    database.DSN,
					"log_level":       "debug",
				})

				board := startBoard("-config", path)
				Expect(board.session.Err).NotTo(gbytes.Say("dev mode"))
				Expect(board.post(models.RoutePing, `{}`)).To(HaveKeyWithValue("available", true))
				Expect(board.post(models.RouteDesireDesiredLRP, desireBody("config-lrp"))).NotTo(HaveKey("error"))
				board.stop(syscall.SIGTERM)

				again := startBoard("-config", path)
				got := again.post(models.RouteDesiredLRPByProcessGuid, `{"process_guid": "config-lrp"}`)
				Expect(got["desired_lrp"]).To(HaveKeyWithValue("process_guid", "config-lrp"))
				again.stop(syscall.SIGTERM)
			})
		}
	})
})
