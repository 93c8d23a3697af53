package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// Staged phases with real processes: 20 hello instances on two reps, a
// new definition staged to 50% at 10% every 5 s. A sampler follows the
// LRP's rows all along and checks them against the share the phase allows
// (models/rollout_stage.go): never more indices on the new definition than
// the share allows, never fewer than it allowed one pass-and-a-start ago,
// and never one fewer than at the sample before — also across a SIGKILL of
// the board mid-phase. Then a definition that crashes pauses its own phase.
var _ = Describe("a staged rollout of 20 hello instances", Ordered, func() {
	const (
		guid      = "hello"
		instances = 20
		// lag is how far behind the share the count may be: a pass (the
		// rollout tick, 1 s) and a moment for the write to be seen.
		lag = 2 * time.Second
	)
	var (
		b    *board
		v1ID string
	)
	ctx := context.Background()
	slots := map[string]any{"capacity": map[string]int{"memory_mb": 4096, "disk_mb": 4096, "instances": 40}}

	BeforeAll(func() {
		b = startBoard(nil)
		b.cork("set-domain", "cork")
		startRep(b, "cell-z1", "z1", slots)
		startRep(b, "cell-z2", "z2", slots)
		lrp := &models.DesiredLRP{}
		readFixture("hello-local.json", lrp)
		lrp.Instances = instances
		// Every allowed index starts at once: the count follows the share
		// itself, not the surge.
		lrp.UpdateStrategy = &models.UpdateStrategy{MaxSurge: "100%"}
		_, err := b.client().DesireLRP(ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		rows := steady(b, guid, instances, "cell-z1", "cell-z2")
		v1ID = rows[0].GetDefinitionId()
	})

	It("follows the share's curve to 50%, through a SIGKILL of the board, and holds there", func() {
		rate := &models.SafeRate{Percent: 10, PerMs: 5000}
		_, err := b.client().UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{
			Definition:       definitionFixture("hello-local-v2-definition.json"),
			UpdateIdentifier: "v2",
			Staged:           &models.StagedRollout{TargetPercent: 50, SafeRate: rate},
		})
		Expect(err).NotTo(HaveOccurred())
		status, err := b.client().RolloutStatus(ctx, guid)
		Expect(err).NotTo(HaveOccurred())
		stage := status.GetStage()
		Expect(stage).NotTo(BeNil())
		Expect(stage.GetTargetPercent()).To(Equal(50.0))

		s := startSampler(b, guid, "v2")
		By("the count follows the share, the board SIGKILLed at 12 s")
		Eventually(func() int32 { return allowedAt(stage, instances, time.Now()) }).
			WithTimeout(30 * time.Second).Should(BeNumerically(">=", 5))
		before, err := b.client().RolloutStatus(ctx, guid)
		Expect(err).NotTo(HaveOccurred())
		stopProcess(b.session, syscall.SIGKILL)
		killed := time.Now()
		b.start()
		AddReportEntry("board restart", time.Since(killed).Round(time.Millisecond).String())
		after, err := b.client().RolloutStatus(ctx, guid)
		Expect(err).NotTo(HaveOccurred())
		Expect(after.GetStage().GetSharePercent()).To(BeNumerically(">=", before.GetStage().GetSharePercent()),
			"the share after the restart does not drop")
		Expect(after.GetStage().GetPhaseStartedAt()).To(Equal(stage.GetPhaseStartedAt()), "the phase did not restart")

		By("the phase holds at 50%: 10 of 20 on v2")
		held := waitForRollout(b, guid, time.Minute, rolloutCondition{"HOLDING", func(st *models.RolloutStatus) bool {
			return st.GetState() == models.RolloutStatus_HOLDING
		}})
		samples := s.stop()
		Expect(held.GetHealthyDefinitionId()).To(Equal(v1ID), "the healthy definition moves only at 100%")
		Expect(held.GetStage().GetAllowedInstances()).To(BeEquivalentTo(10))
		Expect(held.GetStage().GetActiveInstances()).To(BeEquivalentTo(10))
		rows := steady(b, guid, instances, "cell-z1", "cell-z2")
		onV2 := 0
		for _, row := range rows {
			if row.GetDefinitionId() == "v2" {
				onV2++
				Expect(versionOf(row)).To(Equal("v2"))
			} else {
				Expect(row.GetDefinitionId()).To(Equal(v1ID))
			}
		}
		Expect(onV2).To(Equal(10))

		AddReportEntry("samples", fmt.Sprintf("%d samples over %s", len(samples), samples[len(samples)-1].at.Sub(samples[0].at).Round(time.Millisecond)))
		for i, smp := range samples {
			ceiling := allowedAt(stage, instances, smp.at.Add(time.Second)) // a read may land a moment after its pass
			floor := allowedAt(stage, instances, smp.at.Add(-lag))
			Expect(smp.onNew).To(BeNumerically("<=", ceiling), "sample %d at %s: %d on v2, the share allows %d", i, smp.at, smp.onNew, ceiling)
			if smp.at.After(killed) && smp.at.Before(killed.Add(5*time.Second)) {
				continue // the board was down: nobody moves anything
			}
			Expect(smp.onNew).To(BeNumerically(">=", floor), "sample %d at %s: %d on v2, the share allowed %d %s ago", i, smp.at, smp.onNew, floor, lag)
			if i > 0 {
				Expect(smp.onNew).To(BeNumerically(">=", samples[i-1].onNew), "sample %d: the count dropped", i)
			}
		}
	})

	It("pauses a phase by itself when an instance of the new definition crashes, and starts nothing while paused", func() {
		crashing := definitionFixture("hello-local-v3-definition.json")
		crashing.Action.Env = append(crashing.Action.Env, &models.EnvironmentVariable{Name: "CRASH_AFTER", Value: "1s"})
		_, err := b.client().UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{
			Definition:       crashing,
			UpdateIdentifier: "v3-crashing",
			Staged:           &models.StagedRollout{TargetPercent: 100, SafeRate: &models.SafeRate{Percent: 10, PerMs: 5000}},
		})
		Expect(err).NotTo(HaveOccurred())
		paused := waitForRollout(b, guid, time.Minute, rolloutCondition{"paused", func(st *models.RolloutStatus) bool {
			return st.GetStage().GetPaused()
		}})
		Expect(paused.GetStage().GetPauseReason()).To(MatchRegexp(`^paused: v3-crashing instance \d+ crashed`))
		Expect(paused.GetReason()).To(Equal(paused.GetStage().GetPauseReason()))
		AddReportEntry("pause reason", paused.GetStage().GetPauseReason())

		count := func() int {
			n := 0
			for _, row := range b.lrps(guid) {
				if row.GetDefinitionId() == "v3-crashing" && row.GetPresence() == models.ActualLRP_ORDINARY {
					n++
				}
			}
			return n
		}
		n := count()
		Consistently(count).WithTimeout(6*time.Second).WithPolling(500*time.Millisecond).Should(Equal(n),
			"a paused phase moves no further index, though its share would have grown by 12%")
		Expect(strings.HasPrefix(paused.GetStage().GetPauseReason(), "paused:")).To(BeTrue())
	})
})

// allowedAt is the count the stage allows at t.
func allowedAt(stage *models.RolloutStage, instances int32, t time.Time) int32 {
	return models.StageAllowed(models.StageShare(stage, t.UnixNano()), instances)
}

// sample is how many of the LRP's indices had an ORDINARY instance on the
// new definition at one moment.
type sample struct {
	at    time.Time
	onNew int
}

// sampler lists the LRP's rows every 200 ms.
type sampler struct {
	stopOnce sync.Once
	done     chan struct{}
	mu       sync.Mutex
	samples  []sample
}

func startSampler(b *board, guid, definitionID string) *sampler {
	s := &sampler{done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		for {
			select {
			case <-s.done:
				return
			case <-time.After(200 * time.Millisecond):
			}
			at := time.Now()
			rows, err := b.client().ActualLRPs(context.Background(), client.ActualLRPFilter{ProcessGuid: guid})
			if err != nil {
				continue // the board is down for a moment
			}
			n := 0
			for _, row := range rows {
				if row.GetPresence() == models.ActualLRP_ORDINARY && row.GetDefinitionId() == definitionID {
					n++
				}
			}
			s.mu.Lock()
			s.samples = append(s.samples, sample{at: at, onNew: n})
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *sampler) stop() []sample {
	s.stopOnce.Do(func() { close(s.done) })
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sample(nil), s.samples...)
}
