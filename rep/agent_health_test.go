package rep_test

import (
	"context"
	"os"
	"slices"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep"
)

var _ = Describe("the agent's health reports, against a real board", func() {
	var (
		board *countingBoard
		exe   *fakeExecutor
	)

	// health is an entry of checks checks within 5 ms (failures of them
	// failed) and one instance within memoryMB: index 0, instance guid
	// definitionID-0, which ran those checks and holds memoryMB.
	health := func(definitionID string, checks, failures int32, memoryMB int64) *models.DefinitionHealth {
		latencies := make([]int64, len(models.HealthLatencyBucketsMs)+1)
		latencies[models.BucketOf(models.HealthLatencyBucketsMs, 5)] = int64(checks)
		memory := make([]int64, len(models.MemoryBucketsMB)+1)
		memory[models.BucketOf(models.MemoryBucketsMB, memoryMB)] = 1
		instance := &models.InstanceHealth{Index: 0, InstanceGuid: definitionID + "-0", Checks: checks, CheckFailures: failures,
			LatencyBucketCounts: slices.Clone(latencies), MemoryMb: proto.Int64(memoryMB)}
		return &models.DefinitionHealth{ProcessGuid: "hello", DefinitionId: definitionID, Checks: checks, CheckFailures: failures,
			LatencyBucketCounts: latencies, MemoryBucketCounts: memory, Instances: []*models.InstanceHealth{instance}}
	}

	// logged is every definition_health the board logged, in order.
	logged := func() []*models.DefinitionHealthEvent {
		GinkgoHelper()
		ctx := context.Background()
		_, err := board.store.SequenceEvents(ctx, 1000)
		Expect(err).NotTo(HaveOccurred())
		read, err := board.store.ReadEvents(ctx, 0, 1000)
		Expect(err).NotTo(HaveOccurred())
		var out []*models.DefinitionHealthEvent
		for _, e := range read {
			if e.Type == models.EventDefinitionHealth {
				out = append(out, e.Payload.(*models.DefinitionHealthEvent))
			}
		}
		return out
	}

	start := func(cfg rep.AgentConfig) {
		GinkgoHelper()
		const cellID = "cell-a"
		cfg.Cell = &models.Cell{
			CellId: cellID, RepUrl: "http://127.0.0.1:1", Zone: "z1",
			Capacity: &models.CellCapacity{MemoryMb: 8192, DiskMb: 8192, Instances: 10},
		}
		cfg.Board, cfg.CellClient = client.New(board.url), client.NewCellClient(board.url, cellID)
		cfg.Executor = exe
		cfg.BulkSyncInterval = time.Hour
		cfg.Logger = lagertest.NewTestLogger("rep")
		agent, err := rep.NewAgent(cfg)
		Expect(err).NotTo(HaveOccurred())
		signals, ready, done := make(chan os.Signal, 1), make(chan struct{}), make(chan error, 1)
		go func() { done <- agent.Run(signals, ready) }()
		<-ready
		DeferCleanup(func() {
			signals <- os.Interrupt
			Eventually(done).Should(Receive(BeNil()))
		})
	}

	BeforeEach(func() {
		board = startCountingBoard()
		exe = newFakeExecutor()
		// The instances the reports below speak for are cell-a's: the
		// board keeps only what a cell says of its own.
		board.holds("cell-a", "hello", 0, "v1", "v1-0")
		board.holds("cell-a", "hello", 1, "v2", "v2-0")
		board.holds("cell-a", "hello", 2, "v3", "v3-0")
	})

	It("sends what the executor counted every interval, one entry per definition; a failed send keeps counting and keeps the newest memory sample", func() {
		start(rep.AgentConfig{HealthReportInterval: 200 * time.Millisecond})
		board.forget(models.RouteReportHealth)
		exe.OfferHealth(health("v1", 4, 1, 20), health("v2", 2, 0, 100))
		Eventually(func() int { return board.count(models.RouteReportHealth) }).Should(BeNumerically(">=", 1))
		Expect(logged()).To(BeEmpty(), "the board did not take it")

		By("sending the counts it kept with the next ones once the board takes the report")
		exe.OfferHealth(health("v1", 3, 0, 40))
		board.mu.Lock()
		board.unknown = map[string]bool{}
		board.mu.Unlock()
		Eventually(logged).Should(HaveLen(2))
		reports := logged()
		Expect(reports[0].GetCellId()).To(Equal("cell-a"))
		v1, v2 := reports[0].GetHealth(), reports[1].GetHealth()
		Expect(v1.GetDefinitionId()).To(Equal("v1"))
		Expect(v1.GetChecks()).To(BeEquivalentTo(7))
		Expect(v1.GetCheckFailures()).To(BeEquivalentTo(1))
		Expect(v1.GetLatencyBucketCounts()[models.BucketOf(models.HealthLatencyBucketsMs, 5)]).To(BeEquivalentTo(7))
		Expect(v1.GetMemoryBucketCounts()).To(Equal(health("v1", 0, 0, 40).GetMemoryBucketCounts()), "the newest sample only")
		Expect(v2.GetDefinitionId()).To(Equal("v2"))
		Expect(v2.GetChecks()).To(BeEquivalentTo(2))
		Expect(v2.GetMemoryBucketCounts()).To(Equal(make([]int64, len(models.MemoryBucketsMB)+1)),
			"no instance of v2 runs now: its checks go without a memory sample")

		By("adding up each instance's checks the same way, by instance guid, with its newest memory sample")
		Expect(v1.GetInstances()).To(HaveLen(1))
		Expect(v1.GetInstances()[0].GetInstanceGuid()).To(Equal("v1-0"))
		Expect(v1.GetInstances()[0].GetChecks()).To(BeEquivalentTo(7))
		Expect(v1.GetInstances()[0].GetCheckFailures()).To(BeEquivalentTo(1))
		Expect(v1.GetInstances()[0].GetMemoryMb()).To(BeEquivalentTo(40))
		Expect(v2.GetInstances()).To(HaveLen(1))
		Expect(v2.GetInstances()[0].GetChecks()).To(BeEquivalentTo(2))
		Expect(v2.GetInstances()[0].MemoryMb).To(BeNil(), "v2-0 no longer runs")

		By("sending nothing while nothing was counted")
		calls := board.count(models.RouteReportHealth)
		Consistently(func() int { return board.count(models.RouteReportHealth) }).WithTimeout(time.Second).Should(Equal(calls))
		Expect(logged()).To(HaveLen(2))
	})

	It("sends an instance that only fails its startup check, with the newest failure when a send failed", func() {
		// failing is v3's only instance, still starting: no counted
		// check, no memory sample, a failing check at at (since 1000).
		failing := func(output string, at int64) *models.DefinitionHealth {
			h := health("v3", 0, 0, 0)
			clear(h.MemoryBucketCounts)
			in := h.Instances[0]
			in.MemoryMb = nil
			in.LastCheckFailure, in.LastCheckFailureAt, in.CheckFailingSince = output, at, 1000
			return h
		}
		start(rep.AgentConfig{HealthReportInterval: 200 * time.Millisecond})
		board.forget(models.RouteReportHealth)
		exe.OfferHealth(failing("GET http://10.0.0.1:61001/health: connection refused", 2000))
		Eventually(func() int { return board.count(models.RouteReportHealth) }).Should(BeNumerically(">=", 1))
		Expect(logged()).To(BeEmpty(), "the board did not take it")

		exe.OfferHealth(failing("GET http://10.0.0.1:61001/health: 503 Service Unavailable", 3000))
		board.mu.Lock()
		board.unknown = map[string]bool{}
		board.mu.Unlock()
		Eventually(logged).Should(HaveLen(1))
		in := logged()[0].GetHealth().GetInstances()
		Expect(in).To(HaveLen(1))
		Expect(in[0].GetLastCheckFailure()).To(Equal("GET http://10.0.0.1:61001/health: 503 Service Unavailable"), "the newest failure only")
		Expect(in[0].GetLastCheckFailureAt()).To(BeEquivalentTo(3000))
		Expect(in[0].GetCheckFailingSince()).To(BeEquivalentTo(1000))

		By("sending nothing more once its checks pass (the executor has nothing to say of it)")
		calls := board.count(models.RouteReportHealth)
		Consistently(func() int { return board.count(models.RouteReportHealth) }).WithTimeout(time.Second).Should(Equal(calls))
	})

	It("sends none when health reports are disabled", func() {
		start(rep.AgentConfig{HealthReportInterval: 100 * time.Millisecond, DisableHealthReports: true})
		exe.OfferHealth(health("v1", 4, 1, 20))
		Consistently(func() int { return board.count(models.RouteReportHealth) }).WithTimeout(time.Second).Should(BeZero())
	})
})
