package hack_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/hack"
)

// The pages whose sessions run, in this order: the README (its tour
// first, as a newcomer meets it), then docs/*.md by name.
func docPages() []string {
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil {
		panic(err)
	}
	sort.Strings(pages)
	return append([]string{"../README.md"}, pages...)
}

// readSessions parses every page; a page that does not parse fails the
// suite's tree, naming the line.
func readSessions(page string) []hack.Session {
	raw, err := os.ReadFile(page)
	if err != nil {
		panic(err)
	}
	sessions, err := hack.ParseSessions(strings.TrimPrefix(page, "../"), string(raw))
	if err != nil {
		panic(err)
	}
	return sessions
}

var _ = Describe("Reading the docs' sessions", func() {
	It("takes commands, their continuations and their expectations, and the reason a session is skipped", func() {
		page := "intro\n" +
			"<!-- session: skip: needs make run-tls -->\n" +
			"```sh\n" +
			"export BBS_URL=https://127.0.0.1:8889   # the TLS board\n" +
			"```\n" +
			"```console\n" +
			"$ bin/cork ping   # => pong\n" +
			"$ bin/cork get nobody \\\n" +
			"    -o table      # => exit 1: ResourceNotFound\n" +
			"cork: ResourceNotFound: …\n" +
			"$ bin/cork cells  # => exit 3\n" +
			"```\n" +
			"```json\n{}\n```\n"
		sessions, err := hack.ParseSessions("p.md", page)
		Expect(err).NotTo(HaveOccurred())
		Expect(sessions).To(Equal([]hack.Session{
			{Page: "p.md", Line: 3, Skip: "needs make run-tls", Commands: []hack.Command{
				{Line: 4, Text: "export BBS_URL=https://127.0.0.1:8889   # the TLS board"},
			}},
			{Page: "p.md", Line: 6, Commands: []hack.Command{
				{Line: 7, Text: "bin/cork ping   # => pong", Expect: "pong"},
				{Line: 8, Text: "bin/cork get nobody \\\n    -o table      # => exit 1: ResourceNotFound", ExitCode: 1, Expect: "ResourceNotFound"},
				{Line: 11, Text: "bin/cork cells  # => exit 3", ExitCode: 3},
			}},
		}))
	})

	It("refuses a skip marker that marks no session, and a fence that never closes", func() {
		_, err := hack.ParseSessions("p.md", "<!-- session: skip: why -->\n```json\n{}\n```\n")
		Expect(err).To(MatchError(ContainSubstring("p.md:2: a skip marker before a block that is no shell session")))
		_, err = hack.ParseSessions("p.md", "```sh\nbin/cork ping\n")
		Expect(err).To(MatchError("p.md:1: a fence that never closes"))
	})

	It("finds no instance port in any session: addresses come from cork's output", func() {
		instancePort := regexp.MustCompile(`127\.0\.0\.1:6[01][0-9]{3}\b`)
		for _, page := range docPages() {
			for _, s := range readSessions(page) {
				for _, c := range s.Commands {
					Expect(instancePort.FindString(c.Text)).To(BeEmpty(), "%s:%d: %s", s.Page, c.Line, c.Text)
				}
			}
		}
	})
})

// The doc sessions against make run: the cluster a newcomer starts, in a
// data dir and on ports of its own (hack/run.sh's CORKBOARD_RUN_DATA,
// BBS_PORT, REP_PORT_BASE, ASSET_PORT, INSTANCE_PORT_BASE), so that it
// does not meet a developer's make run. Sessions run in a directory that
// holds the tree as a clone has it (a link to each top-level entry) and
// the cluster's .data, so that ".data/droplets/lrps/hello.json" and
// ".data/run.pid" name this cluster's; each in a shell of its own, whose
// BBS_URL names this board (cork's default is make run's), and in which
// make run's addresses (127.0.0.1:8889 and the others) are rewritten to
// this cluster's before a command runs. A session stops at its first
// command that ends with another exit code than its page says, or whose
// output lacks what its page says it prints; the failure shows the line.
var _ = Describe("The docs' shell sessions, run against make run", Ordered, Label("docs"), func() {
	var (
		session  *gexec.Session
		work     string
		boardURL string
		rewrite  *strings.Replacer
		started  time.Time
		ran      int
		commands int
		skipped  = map[string]int{}
	)

	BeforeAll(func() {
		started = time.Now()
		root, err := filepath.Abs("..")
		Expect(err).NotTo(HaveOccurred())
		work = GinkgoT().TempDir()
		// make run builds bin/ below; in a clean clone it is not there yet,
		// and the sessions find their binaries through its link.
		Expect(os.MkdirAll(filepath.Join(root, "bin"), 0o755)).To(Succeed())
		entries, err := os.ReadDir(root)
		Expect(err).NotTo(HaveOccurred())
		for _, e := range entries {
			if e.Name() == ".git" || e.Name() == ".data" {
				continue
			}
			Expect(os.Symlink(filepath.Join(root, e.Name()), filepath.Join(work, e.Name()))).To(Succeed())
		}

		ports := freePorts(5)
		instancePorts := freePorts(200)
		boardURL = fmt.Sprintf("http://127.0.0.1:%d", ports)
		rewrite = strings.NewReplacer(
			"127.0.0.1:8889", fmt.Sprintf("127.0.0.1:%d", ports),
			"127.0.0.1:1801", fmt.Sprintf("127.0.0.1:%d", ports+2),
			"127.0.0.1:1802", fmt.Sprintf("127.0.0.1:%d", ports+3),
			"127.0.0.1:8890", fmt.Sprintf("127.0.0.1:%d", ports+4),
		)
		cmd := exec.Command("make", "--no-print-directory", "run")
		cmd.Dir = root
		cmd.Env = append(os.Environ(),
			"CORKBOARD_RUN_DATA="+filepath.Join(work, ".data"),
			"BBS_PORT="+strconv.Itoa(ports),
			"REP_PORT_BASE="+strconv.Itoa(ports+1), // cell-z1 +2, cell-z2 +3
			"ASSET_PORT="+strconv.Itoa(ports+4),
			"INSTANCE_PORT_BASE="+strconv.Itoa(instancePorts),
		)
		session, err = gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			// SIGTERM to run.sh, as Ctrl-C would be to the terminal: it
			// stops the reps, the board and the droplet server, and make
			// exits with it. Its pid is in run.pid (the README's way back
			// for a drained cell uses it too).
			raw, err := os.ReadFile(filepath.Join(work, ".data", "run.pid"))
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil && perr == nil {
				_ = syscall.Kill(pid, syscall.SIGTERM)
			} else {
				session.Terminate()
			}
			Eventually(session, 2*time.Minute).Should(gexec.Exit(0))
		})
		// make run builds everything first: minutes on a loaded machine.
		Eventually(session, 10*time.Minute).Should(gbytes.Say("Corkboard is running:"))
	})

	// run runs one session in a shell of its own and fails at its first
	// command that does not do what the page says.
	run := func(s hack.Session) {
		GinkgoHelper()
		mark := fmt.Sprintf("--- doc-session %d ---", time.Now().UnixNano())
		var script strings.Builder
		fmt.Fprintf(&script, "export BBS_URL=%s\n", boardURL)
		for i, c := range s.Commands {
			fmt.Fprintf(&script, "%s\n__rc=$?; printf '\\n%s %d %%d\\n' \"$__rc\"; [ \"$__rc\" = %d ] || exit 0\n",
				rewrite.Replace(c.Text), mark, i, c.ExitCode)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		sh := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-c", script.String())
		sh.Dir = work
		sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		sh.Cancel = func() error { return syscall.Kill(-sh.Process.Pid, syscall.SIGKILL) }
		var out bytes.Buffer
		sh.Stdout, sh.Stderr = &out, &out
		sh.Stdin = nil
		err := sh.Run()
		timedOut := ctx.Err() != nil

		// Each command's output ends at its mark line.
		rest := out.String()
		for i, c := range s.Commands {
			where := fmt.Sprintf("%s:%d: %s", s.Page, c.Line, c.Text)
			re := regexp.MustCompile(`(?m)\n?` + regexp.QuoteMeta(mark) + ` ` + strconv.Itoa(i) + ` ([0-9]+)\n`)
			m := re.FindStringSubmatchIndex(rest)
			if m == nil {
				Fail(fmt.Sprintf("%s\ndid not end (timed out: %v, shell: %v); its output:\n%s", where, timedOut, err, rest))
			}
			output := rest[:m[0]]
			code, _ := strconv.Atoi(rest[m[2]:m[3]])
			rest = rest[m[1]:]
			fmt.Fprintf(GinkgoWriter, "$ %s\n%s\n", c.Text, output)
			Expect(code).To(Equal(c.ExitCode), "%s\nexited %d; its output:\n%s", where, code, output)
			Expect(output).To(ContainSubstring(c.Expect), "%s\nits output:\n%s", where, output)
			commands++
		}
		ran++
	}

	for _, page := range docPages() {
		sessions := readSessions(page)
		if page == "../README.md" {
			It("a clean clone, README only: the tour runs line by line with no error", func() {
				Expect(sessions).NotTo(BeEmpty())
				for _, s := range sessions {
					if s.Skip != "" {
						skipped[s.Skip]++
						continue
					}
					run(s)
				}
			})
			continue
		}
		if len(sessions) == 0 {
			continue
		}
		It("runs the sessions of "+strings.TrimPrefix(page, "../"), func() {
			for _, s := range sessions {
				if s.Skip != "" {
					skipped[s.Skip]++
					continue
				}
				run(s)
			}
		})
	}

	It("says how many sessions ran and how many were skipped, by reason", func() {
		var report strings.Builder
		fmt.Fprintf(&report, "doc sessions: %d ran (%d commands), %d skipped, in %s\n", ran, commands, sumOf(skipped), time.Since(started).Round(time.Second))
		reasons := make([]string, 0, len(skipped))
		for r := range skipped {
			reasons = append(reasons, r)
		}
		sort.Strings(reasons)
		for _, r := range reasons {
			fmt.Fprintf(&report, "  skipped %d: %s\n", skipped[r], r)
		}
		AddReportEntry("doc sessions", report.String(), ReportEntryVisibilityAlways)
		Expect(ran).To(BeNumerically(">", 0))
	})
})

func sumOf(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
