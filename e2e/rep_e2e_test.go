package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// helloSpec is the fixture `make run` users desire: 4 instances of hello.
var helloSpec = filepath.Join("..", "fixtures", "lrps", "hello-local.json")

var _ = Describe("a local cluster: a board and two reps running hello", func() {
	var (
		b      *board
		z1, z2 *runningRep
		both   = []string{"cell-z1", "cell-z2"}
		// boardSettings are config keys a Context sets for its board.
		boardSettings map[string]any
	)

	BeforeEach(func() {
		boardSettings = nil
	})

	JustBeforeEach(func() {
		b = startBoard(boardSettings)
		// A fresh domain: instances of a removed LRP are deleted.
		b.cork("set-domain", "cork")
		z1 = startRep(b, "cell-z1", "z1")
		z2 = startRep(b, "cell-z2", "z2")
	})

	// desireHello desires the fixture and waits for 4 answering instances.
	desireHello := func() []*models.ActualLRP {
		GinkgoHelper()
		start := time.Now()
		b.cork("desire", helloSpec)
		rows := steady(b, "hello", 4, both...)
		AddReportEntry("desire to 4 RUNNING and answering", time.Since(start).Round(time.Millisecond).String())
		return rows
	}

	It("runs 4 instances across both cells, each answering GET / as itself", func() {
		rows := desireHello()
		perCell := map[string]int{}
		for _, row := range rows {
			perCell[row.GetCellId()]++
			answer, err := ask(row)
			Expect(err).NotTo(HaveOccurred())
			Expect(answer).To(Equal(helloAnswer{
				ProcessGuid: "hello", Index: row.GetIndex(), InstanceGuid: row.GetInstanceGuid(),
				DefinitionID: row.GetDefinitionId(), CellID: row.GetCellId(),
			}))
		}
		Expect(perCell).To(Equal(map[string]int{"cell-z1": 2, "cell-z2": 2}), "spread over both zones")
		Expect(z1.instances()).To(HaveLen(2))
		Expect(z2.instances()).To(HaveLen(2))

		By("an instance reports itself occupied through its rep, and ready again")
		occupiedRow := rows[1]
		asked := time.Now()
		Expect(post(occupiedRow, "/occupied")).To(Equal(http.StatusNoContent))
		Eventually(func() bool { return b.lrps("hello")[1].GetOccupied() }).WithPolling(20 * time.Millisecond).Should(BeTrue())
		// A figure for the note, not a requirement: the rep forwards a
		// change in a small batch after its occupancy_batch_interval
		// (250ms), or sooner in a bulk report of its cell when one falls
		// due first (every repBulkSyncInterval here).
		AddReportEntry("occupied on the board after", time.Since(asked).Round(time.Millisecond).String())
		Expect(post(occupiedRow, "/ready")).To(Equal(http.StatusNoContent))
		Eventually(func() bool { return b.lrps("hello")[1].GetOccupied() }).Should(BeFalse())

		By("cork logs shows the instance's output, fetched from its rep")
		out := b.cork("logs", "hello/0", "-n", "20")
		Expect(out).To(ContainSubstring("[rep "))
		Expect(out).To(ContainSubstring("listening on"))
		Expect(out).To(ContainSubstring(rows[0].GetInstanceGuid()))
	})

	It("reports a killed instance as crashed and runs it again", func() {
		desireHello()
		crashes := recordCrashes(b)
		victim := z1.instances()[0]
		Expect(syscall.Kill(victim.Pid, syscall.SIGKILL)).To(Succeed())

		Eventually(crashes.count).Should(Equal(1))
		crash := crashes.first()
		Expect(crash.GetActualLrp().GetIndex()).To(Equal(victim.Index))
		Expect(crash.GetCrashCount()).To(BeEquivalentTo(1))
		Expect(crash.GetCrashReason()).To(Equal("killed by signal 9"))

		rows := steady(b, "hello", 4, both...)
		restarted := rows[victim.Index]
		Expect(restarted.GetCrashCount()).To(BeEquivalentTo(1))
		Expect(restarted.GetCrashReason()).To(Equal("killed by signal 9"))
		Expect(restarted.GetInstanceGuid()).NotTo(Equal(victim.InstanceGuid))
		Expect(alive(victim.Pid)).To(BeFalse())
	})

	It("moves a drained cell's instances to the other cell with 4 answering at every observed moment", func() {
		desireHello()
		watch := watchAvailability(b, "hello")

		start := time.Now()
		b.cork("cell", "drain", "cell-z1")
		Eventually(z1.session).WithTimeout(2 * time.Minute).Should(gexec.Exit(0))
		rows := steady(b, "hello", 4, "cell-z2")
		AddReportEntry("drain to all 4 on the other cell", time.Since(start).Round(time.Millisecond).String())

		observations, fewest, worst := watch.stop()
		Expect(observations).To(BeNumerically(">", 10), "the watcher looked often enough to mean something")
		Expect(fewest).To(Equal(4), "fewest answering indices at one moment: %s", worst)
		Expect(z2.instances()).To(HaveLen(4))
		for _, row := range rows {
			Expect(row.GetCellId()).To(Equal("cell-z2"))
		}
	})

	It("evacuates a rep's cell on SIGTERM, then the rep exits 0", func() {
		desireHello()
		watch := watchAvailability(b, "hello")

		z2.session.Terminate()
		Eventually(z2.session).WithTimeout(2 * time.Minute).Should(gexec.Exit(0))
		steady(b, "hello", 4, "cell-z1")

		observations, fewest, worst := watch.stop()
		Expect(observations).To(BeNumerically(">", 10))
		Expect(fewest).To(Equal(4), "fewest answering indices at one moment: %s", worst)
		cells, err := b.client().Cells(context.Background())
		Expect(err).NotTo(HaveOccurred())
		Expect(cells).To(ContainElement(And(HaveField("CellId", "cell-z2"), HaveField("Draining", true))))
	})

	It("evacuates on POST /v1/drain to the rep, marking its cell draining", func() {
		desireHello()
		resp, err := httpClient.Post(z1.url+"/v1/drain", "application/json", nil)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusAccepted))

		Eventually(z1.session).WithTimeout(2 * time.Minute).Should(gexec.Exit(0))
		steady(b, "hello", 4, "cell-z2")
		cells, err := b.client().Cells(context.Background())
		Expect(err).NotTo(HaveOccurred())
		Expect(cells).To(ContainElement(And(HaveField("CellId", "cell-z1"), HaveField("Draining", true))))
	})

	It("replaces a SIGKILLed rep's instances on the other cell once its presence expires, leaving no orphans", func() {
		desireHello()
		pids := z1.pids()
		Expect(pids).To(HaveLen(2))

		start := time.Now()
		z1.session.Kill()
		Eventually(z1.session).Should(gexec.Exit())
		Eventually(func() []int { return anyAlive(pids) }).Should(BeEmpty(), "the rep's instances die with it")

		steady(b, "hello", 4, "cell-z2")
		AddReportEntry("rep SIGKILL to 4 answering on the other cell", time.Since(start).Round(time.Millisecond).String())
		Expect(z2.instances()).To(HaveLen(4))
	})

	It("has a rep restarted on the same cell replace what its predecessor left behind", func() {
		before := desireHello()
		pids := z1.pids()
		z1.session.Kill()
		Eventually(z1.session).Should(gexec.Exit())
		Eventually(func() []int { return anyAlive(pids) }).Should(BeEmpty())

		z1 = z1.restart()
		Eventually(z1.session.Out).Should(gbytes.Say(`rep\.agent\.removed-stale-row`))
		after := steady(b, "hello", 4, both...)
		for i, row := range after {
			if before[i].GetCellId() == "cell-z1" {
				Expect(row.GetInstanceGuid()).NotTo(Equal(before[i].GetInstanceGuid()), "index %d runs anew", i)
			}
		}
	})

	It("reports an instance it cannot start as crashed, with the reason", func() {
		_, err := b.client().DesireLRP(context.Background(), &models.DesiredLRP{
			ProcessGuid: "broken", Domain: "cork", Instances: 1,
			Definition: &models.LRPDefinition{
				Action: &models.RunAction{Path: "./no-such-app"}, Ports: []uint32{8080}, MemoryMb: 64, DiskMb: 64,
			},
		})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() *models.ActualLRP { return b.lrps("broken")[0] }).Should(And(
			HaveField("CrashCount", BeNumerically(">=", 1)),
			HaveField("CrashReason", And(ContainSubstring("could not start"), ContainSubstring(`"./no-such-app"`))),
		))
		out := b.cork("actual-lrps", "--guid", "broken")
		Expect(out).To(ContainSubstring("could not start"))
	})

	It("stops every process and leaves no rows when the LRP is removed", func() {
		desireHello()
		pids := append(z1.pids(), z2.pids()...)
		Expect(pids).To(HaveLen(4))

		b.cork("remove", "hello")
		Eventually(func() []*models.ActualLRP { return b.lrps("hello") }).Should(BeEmpty())
		Eventually(func() []int { return anyAlive(pids) }).Should(BeEmpty())
		Eventually(z1.instances).Should(BeEmpty())
		Eventually(z2.instances).Should(BeEmpty())
	})

	// The board is away for about a second; a presence TTL well over that
	// keeps the cells present throughout, so these specs see the reps ride
	// it out rather than the board replacing lost cells' instances.
	Context("across a board restart", func() {
		BeforeEach(func() {
			boardSettings = map[string]any{"cell_presence_ttl": "10s"}
		})

		It("keeps every instance answering while the board restarts, and has them RUNNING afterwards", func() {
			rows := desireHello()
			watch := watchInstances(rows)

			b.session.Terminate()
			Eventually(b.session).WithTimeout(exitLimit).Should(gexec.Exit(0))
			By("the reps find the board gone")
			Eventually(z1.session.Out).Should(gbytes.Say(`rep\.agent\.heartbeat-failed`))
			Eventually(z2.session.Out).Should(gbytes.Say(`rep\.agent\.heartbeat-failed`))
			b.start()
			Eventually(func() error { _, err := b.client().Ping(context.Background()); return err }).Should(Succeed())

			observations, failures := watch.stop()
			Expect(observations).To(BeNumerically(">", 0))
			Expect(failures).To(BeEmpty(), "every instance answered while the board was away")
			after := steady(b, "hello", 4, both...)
			for i, row := range after {
				Expect(row.GetInstanceGuid()).To(Equal(rows[i].GetInstanceGuid()), "index %d is the same instance", i)
			}
		})

		It("reports a crash that happened while the board was away once it is back", func() {
			desireHello()
			victim := z2.instances()[0]

			b.session.Terminate()
			Eventually(b.session).WithTimeout(exitLimit).Should(gexec.Exit(0))
			Expect(syscall.Kill(victim.Pid, syscall.SIGKILL)).To(Succeed())
			Eventually(z2.session.Out).Should(gbytes.Say(`rep\.agent\.instance\.board-unreachable-retrying`))
			b.start()

			rows := steady(b, "hello", 4, both...)
			Expect(rows[victim.Index].GetCrashCount()).To(BeEquivalentTo(1))
			Expect(rows[victim.Index].GetCrashReason()).To(Equal("killed by signal 9"))
		})
	})
})

var _ = Describe("a rep with nowhere to evacuate to", func() {
	It("stops everything when its evacuation times out, and exits 0", func() {
		b := startBoard(nil)
		only := startRep(b, "cell-z1", "z1", map[string]any{"evacuation_timeout": "3s"})
		b.cork("desire", helloSpec)
		steady(b, "hello", 4, "cell-z1")
		pids := only.pids()
		Expect(pids).To(HaveLen(4))

		only.session.Terminate()
		Eventually(only.session.Out).Should(gbytes.Say(`rep\.agent\.evacuate\.timed-out-stopping-the-rest`))
		Eventually(only.session).WithTimeout(2 * time.Minute).Should(gexec.Exit(0))
		Expect(anyAlive(pids)).To(BeEmpty())
		for _, row := range b.lrps("hello") {
			Expect(row.GetPresence()).To(Equal(models.ActualLRP_ORDINARY), "EVACUATING rows were removed: %s", describe(b.lrps("hello")))
			Expect(row.GetState()).To(Equal(models.ActualLRP_UNCLAIMED))
		}
	})
})

// crashLog records actual_lrp_crashed events from the moment it is made.
type crashLog struct {
	mu      sync.Mutex
	crashes []*models.ActualLRPCrashedEvent
}

func recordCrashes(b *board) *crashLog {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := b.client().Events(ctx, client.EventsOptions{Types: []string{models.EventActualLRPCrashed}})
	Expect(err).NotTo(HaveOccurred())
	log := &crashLog{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			event, err := stream.Next()
			if err != nil {
				return
			}
			if crash, ok := event.Payload.(*models.ActualLRPCrashedEvent); ok {
				log.mu.Lock()
				log.crashes = append(log.crashes, crash)
				log.mu.Unlock()
			}
		}
	}()
	DeferCleanup(func() {
		cancel()
		stream.Close()
		<-done
	})
	return log
}

func (l *crashLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.crashes)
}

func (l *crashLog) first() *models.ActualLRPCrashedEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.crashes[0]
}

// watcher polls something every watchInterval in the background until
// stopped.
type watcher struct {
	stopOnce sync.Once
	quit     chan struct{}
	done     chan struct{}
}

const watchInterval = 50 * time.Millisecond

func startWatcher(look func()) *watcher {
	w := &watcher{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(w.done)
		ticker := time.NewTicker(watchInterval)
		defer ticker.Stop()
		for {
			look()
			select {
			case <-w.quit:
				return
			case <-ticker.C:
			}
		}
	}()
	DeferCleanup(w.halt)
	return w
}

func (w *watcher) halt() {
	w.stopOnce.Do(func() { close(w.quit) })
	<-w.done
}

// servingWatch counts, at each look, the indices of an LRP that have a
// RUNNING, routable instance answering as itself, among the rows counts
// accepts, and keeps the fewest seen and the rows of that look.
type servingWatch struct {
	*watcher
	mu     sync.Mutex
	looks  int
	fewest int
	worst  string
}

func watchServing(b *board, guid string, counts func(*models.ActualLRP) bool) *servingWatch {
	w := &servingWatch{fewest: -1}
	api := b.client()
	w.watcher = startWatcher(func() {
		rows, err := api.ActualLRPs(context.Background(), client.ActualLRPFilter{ProcessGuid: guid})
		if err != nil {
			return // not a look: the board did not answer
		}
		serving := map[int32]bool{}
		for _, row := range rows {
			if serving[row.GetIndex()] || row.GetState() != models.ActualLRP_RUNNING || !row.GetRoutable() || !counts(row) {
				continue
			}
			if answers(row) {
				serving[row.GetIndex()] = true
			}
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.looks++
		if w.fewest == -1 || len(serving) < w.fewest {
			w.fewest = len(serving)
			w.worst = time.Now().Format(time.StampMilli) + " " + describe(rows)
		}
	})
	return w
}

// watchAvailability watches every index of guid, served by an ORDINARY or
// an EVACUATING instance.
func watchAvailability(b *board, guid string) *servingWatch {
	return watchServing(b, guid, func(row *models.ActualLRP) bool {
		return row.GetPresence() == models.ActualLRP_ORDINARY || row.GetPresence() == models.ActualLRP_EVACUATING
	})
}

// stop ends the watch and returns how many looks it took, the fewest
// serving indices at one look and that look's rows.
func (w *servingWatch) stop() (looks, fewest int, worst string) {
	w.halt()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.looks, w.fewest, w.worst
}

// instanceWatch checks, at each look, that each of the given instances
// answers as itself.
type instanceWatch struct {
	*watcher
	mu           sync.Mutex
	observations int
	failures     []string
}

func watchInstances(rows []*models.ActualLRP) *instanceWatch {
	w := &instanceWatch{}
	w.watcher = startWatcher(func() {
		var failed []string
		for _, row := range rows {
			if !answers(row) {
				failed = append(failed, fmt.Sprintf("%s/%d at %s", row.GetProcessGuid(), row.GetIndex(), time.Now().Format(time.StampMilli)))
			}
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.observations++
		w.failures = append(w.failures, failed...)
	})
	return w
}

func (w *instanceWatch) stop() (int, []string) {
	w.halt()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.observations, w.failures
}

// post POSTs to a path of the instance a row describes and returns the
// status code.
func post(lrp *models.ActualLRP, path string) int {
	GinkgoHelper()
	info := lrp.GetNetInfo()
	url := fmt.Sprintf("http://%s:%d%s", info.GetAddress(), info.GetPorts()[0].GetHostPort(), path)
	resp, err := httpClient.Post(url, "application/json", nil)
	Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	return resp.StatusCode
}
