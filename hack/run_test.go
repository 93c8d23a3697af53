package hack_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
)

// freePorts finds n consecutive free loopback ports and returns the first.
func freePorts(n int) int {
	GinkgoHelper()
	for range 100 {
		base := 20000 + rand.IntN(10000)
		free := true
		for p := base; p < base+n && free; p++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				free = false
				continue
			}
			l.Close()
		}
		if free {
			return base
		}
	}
	Fail("no free ports")
	return 0
}

// make run (hack/run.sh), in a data dir and on ports of its own: a rep
// that exits after its cell drained is announced with the command that
// starts it again, and that command brings the cell back.
var _ = Describe("make run", Ordered, func() {
	var (
		session  *gexec.Session
		boardURL string
		data     string
	)

	BeforeAll(func() {
		build := exec.Command("sh", "-c", `set -e
go build -o bin/ ./cmd/...
go build -o bin/hello ./fixtures/apps/hello
go build -o bin/droplets ./hack/droplets`)
		build.Dir = ".."
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))

		ports := freePorts(5)
		instancePorts := freePorts(200)
		boardURL = fmt.Sprintf("http://127.0.0.1:%d", ports)
		data = GinkgoT().TempDir()
		cmd := exec.Command("hack/run.sh")
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(),
			"CORKBOARD_RUN_DATA="+data,
			"BBS_PORT="+strconv.Itoa(ports),
			"REP_PORT_BASE="+strconv.Itoa(ports+1), // cell-z1 +2, cell-z2 +3
			"ASSET_PORT="+strconv.Itoa(ports+4),
			"INSTANCE_PORT_BASE="+strconv.Itoa(instancePorts),
		)
		session, err = gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			session.Terminate()
			Eventually(session, time.Minute).Should(gexec.Exit())
		})
		Eventually(session, 2*time.Minute).Should(gbytes.Say("Corkboard is running:"))
	})

	cork := func(args ...string) string {
		GinkgoHelper()
		cmd := exec.Command("bin/cork", args...)
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "BBS_URL="+boardURL)
		out, err := cmd.Output()
		Expect(err).NotTo(HaveOccurred(), string(out))
		return string(out)
	}

	// draining says whether the board has cell-z1 draining.
	draining := func() bool {
		for _, line := range strings.Split(strings.TrimSpace(cork("cells")), "\n") {
			var cell struct {
				CellID   string `json:"cell_id"`
				Draining bool   `json:"draining"`
			}
			Expect(json.Unmarshal([]byte(line), &cell)).To(Succeed())
			if cell.CellID == "cell-z1" {
				return cell.Draining
			}
		}
		Fail("no cell-z1 on the board")
		return false
	}

	It("says when a drained cell's rep exits, and how to start it again", func() {
		cork("cell", "drain", "cell-z1")
		Eventually(session, time.Minute).Should(gbytes.Say(`run: rep cell-z1 exited after its cell drained \(its instances moved to the other cell\); log: \S+/logs/rep-cell-z1.log\n`))
		Eventually(session).Should(gbytes.Say(`run: to start it again \(its cell comes back, no longer draining\): kill -HUP \$\(cat (\S+/run.pid)\)\n`))
		Expect(draining()).To(BeTrue())
	})

	It("starts it again on that command, and the cell is back", func() {
		m := regexp.MustCompile(`kill -HUP \$\(cat (\S+/run.pid)\)`).FindStringSubmatch(string(session.Out.Contents()))
		Expect(m).NotTo(BeNil())
		raw, err := os.ReadFile(m[1])
		Expect(err).NotTo(HaveOccurred())
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		Expect(err).NotTo(HaveOccurred())
		Expect(pid).To(Equal(session.Command.Process.Pid))

		Expect(syscall.Kill(pid, syscall.SIGHUP)).To(Succeed())
		Eventually(session, time.Minute).Should(gbytes.Say(`run: every rep is running\n`))
		Eventually(draining).Should(BeFalse())
	})

	It("starts a rep that still evacuates its drained cell once it has exited", func() {
		cork("set-domain", "cork")
		cork("desire", "fixtures/lrps/hello-local.json")
		cork("wait", "hello")
		from := len(session.Out.Contents())
		repLog := filepath.Join(data, "logs", "rep-cell-z1.log")
		before, err := os.ReadFile(repLog)
		Expect(err).NotTo(HaveOccurred())
		cork("cell", "drain", "cell-z1")
		// The SIGHUP comes once the rep has begun to evacuate, while its
		// instances still wait for their replacements.
		Eventually(func() string {
			raw, err := os.ReadFile(repLog)
			Expect(err).NotTo(HaveOccurred())
			return string(raw[len(before):])
		}, time.Minute, 20*time.Millisecond).Should(ContainSubstring(`"message":"rep.agent.evacuate.starting"`))
		Expect(syscall.Kill(session.Command.Process.Pid, syscall.SIGHUP)).To(Succeed())
		Eventually(func() string { return string(session.Out.Contents()[from:]) }, 2*time.Minute).Should(
			MatchRegexp(`run: rep cell-z1 is evacuating its cell; it starts again once it has exited\n(.*\n)*run: every rep is running\n`))
		Eventually(draining).Should(BeFalse())
		cork("remove", "hello")
	})

	It("starts a rep whose cell the board drains before the rep has heard of it, once it has exited", func() {
		// No instance runs: the drain moves nothing, and the rep exits at
		// its next heartbeat (a third of make run's 6 s presence TTL),
		// when it hears of the drain. The SIGHUP comes before that.
		from := len(session.Out.Contents())
		cork("cell", "drain", "cell-z1")
		Expect(syscall.Kill(session.Command.Process.Pid, syscall.SIGHUP)).To(Succeed())
		Eventually(func() string { return string(session.Out.Contents()[from:]) }, 2*time.Minute).Should(
			MatchRegexp(`run: rep cell-z1 is evacuating its cell; it starts again once it has exited\n(.*\n)*run: every rep is running\n`))
		Eventually(draining).Should(BeFalse(), "the rep started again, and its cell is back")
	})

	It("stops everything on SIGTERM, with no rep announced as exited", func() {
		before := strings.Count(string(session.Out.Contents()), "exited")
		session.Terminate()
		Eventually(session, time.Minute).Should(gexec.Exit(0))
		Expect(session).To(gbytes.Say(`run: stopped`))
		Expect(strings.Count(string(session.Out.Contents()), "exited")).To(Equal(before))
		m := regexp.MustCompile(`kill -HUP \$\(cat (\S+/run.pid)\)`).FindStringSubmatch(string(session.Out.Contents()))
		Expect(m).NotTo(BeNil())
		Expect(m[1]).NotTo(BeAnExistingFile())
	})
})
