package e2e_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

// streamRuns is how many desires each mode of the measurement makes
// (CORKBOARD_STREAM_RUNS, 3 unless set).
func streamRuns() int {
	if n, err := strconv.Atoi(os.Getenv("CORKBOARD_STREAM_RUNS")); err == nil && n > 0 {
		return n
	}
	return 3
}

var _ = Describe("reps that follow the board's event stream", func() {
	const instances = 10
	var (
		b    *board
		reps []*runningRep
		both = []string{"cell-z1", "cell-z2"}
	)

	// startCluster runs a board and two reps with settings, and waits
	// until both reps have their stream open when they follow it.
	startCluster := func(settings map[string]any) {
		GinkgoHelper()
		b = startBoard(nil)
		b.cork("set-domain", "cork")
		reps = []*runningRep{startRep(b, "cell-z1", "z1", settings), startRep(b, "cell-z2", "z2", settings)}
		if settings["event_stream"] != false {
			for _, r := range reps {
				Eventually(func() string { return string(r.session.Out.Contents()) }).
					Should(ContainSubstring("rep.agent.event-stream-open"))
			}
		}
	}

	// desireAndWait desires guid with n instances and returns how long
	// it took until the reps had claimed every one (the board placed
	// them, and the reps learned of it), and until every one ran, RUNNING
	// on the board and answering.
	desireAndWait := func(guid string, n int32) (claimed, running time.Duration) {
		GinkgoHelper()
		lrp := helloLRP(guid, &models.HealthCheck{})
		lrp.Instances = n
		began := time.Now()
		_, err := b.client().DesireLRP(context.Background(), lrp)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error {
			rows := b.lrps(guid)
			if claimed == 0 && len(rows) == int(n) && !slices.ContainsFunc(rows, func(row *models.ActualLRP) bool {
				return row.GetState() != models.ActualLRP_CLAIMED && row.GetState() != models.ActualLRP_RUNNING
			}) {
				claimed = time.Since(began)
			}
			return checkSteady(rows, int(n), both)
		}).WithPolling(20 * time.Millisecond).Should(Succeed())
		return claimed, time.Since(began)
	}

	// runsOnReps is how many instances the reps run between them.
	runsOnReps := func() int {
		total := 0
		for _, r := range reps {
			total += len(r.instances())
		}
		return total
	}

	It("runs a desire of 10 instances on two reps and scales it down, though neither polls nor reports within the hour", func() {
		// Polls, retries and bulk reports an hour apart: only the event
		// stream can bring the placements and the removals; the waits
		// are the suite's bounds on a hang.
		startCluster(map[string]any{"poll_interval": "1h", "retry_interval": "1h", "bulk_sync_interval": "1h"})
		claimed, running := desireAndWait("streamed", instances)
		AddReportEntry(fmt.Sprintf("desire to %d claimed / RUNNING on 2 reps through the event stream (polls 1h apart)", instances),
			claimed.Round(time.Millisecond).String()+" / "+running.Round(time.Millisecond).String())
		Expect(runsOnReps()).To(Equal(instances))

		By("a scale-down: the board removes the rows beyond the count, and the reps stop their instances")
		four := int32(4)
		_, err := b.client().UpdateDesiredLRP(context.Background(), "streamed", &models.DesiredLRPUpdate{Instances: &four})
		Expect(err).NotTo(HaveOccurred())
		steady(b, "streamed", 4, both...)
		Eventually(runsOnReps).Should(Equal(4))
	})

	It("under mutual TLS, each rep follows its own cell's events on its cell certificate", func() {
		tlsCluster := newTLSCluster()
		b = tlsCluster.startBoard()
		b.cork("set-domain", "cork")
		reps = nil
		for _, cell := range [][2]string{{"cell-z1", "z1"}, {"cell-z2", "z2"}} {
			r := startRep(b, cell[0], cell[1], map[string]any{"tls": tlsCluster.section(cell[0])},
				map[string]any{"poll_interval": "1h", "retry_interval": "1h", "bulk_sync_interval": "1h"})
			r.httpClient = tlsCluster.httpClient("operator")
			Eventually(func() string { return string(r.session.Out.Contents()) }).
				Should(ContainSubstring("rep.agent.event-stream-open"))
			reps = append(reps, r)
		}
		claimed, running := desireAndWait("streamed", instances)
		AddReportEntry(fmt.Sprintf("desire to %d claimed / RUNNING on 2 reps with TLS through the event stream (polls 1h apart)", instances),
			claimed.Round(time.Millisecond).String()+" / "+running.Round(time.Millisecond).String())
		Expect(runsOnReps()).To(Equal(instances))
		for _, r := range reps {
			Expect(string(r.session.Out.Contents())).NotTo(ContainSubstring("event-stream-refused"))
		}
	})

	// A figure for docs/running.md (The rep), not a requirement: desire → every instance
	// RUNNING and answering, with the defaults (the stream, a poll every
	// 10s) and by polling alone every 1s, as reps did before they
	// followed the stream. Each run desires a new LRP on the same
	// cluster; the report entries give every run and the median.
	DescribeTable("measures desire to all RUNNING",
		func(mode string, settings map[string]any) {
			startCluster(settings)
			var claimed, running []time.Duration
			for run := range streamRuns() {
				guid := fmt.Sprintf("measured-%d", run)
				c, r := desireAndWait(guid, instances)
				claimed, running = append(claimed, c), append(running, r)
				Expect(b.client().RemoveDesiredLRP(context.Background(), guid)).To(Succeed())
				Eventually(runsOnReps).Should(BeZero())
			}
			AddReportEntry(fmt.Sprintf("desire to %d claimed on 2 reps, %s", instances, mode), describeRuns(claimed))
			AddReportEntry(fmt.Sprintf("desire to %d RUNNING and answering on 2 reps, %s", instances, mode), describeRuns(running))
		},
		Entry("following the stream", "following the event stream (poll_interval 10s)",
			map[string]any{"poll_interval": "10s", "retry_interval": "1s", "bulk_sync_interval": "30s"}),
		Entry("polling alone", "polling alone (event_stream false, retry_interval 1s)",
			map[string]any{"event_stream": false, "poll_interval": "10s", "retry_interval": "1s", "bulk_sync_interval": "30s"}),
	)
})

// describeRuns is "median 640ms over 3 runs: 610ms 640ms 1.2s; load 0.52".
func describeRuns(took []time.Duration) string {
	sorted := slices.Clone(took)
	slices.Sort(sorted)
	var all []string
	for _, d := range took {
		all = append(all, d.Round(time.Millisecond).String())
	}
	load := "?"
	if raw, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = strings.Fields(string(raw))[0]
	}
	return fmt.Sprintf("median %s over %d runs: %s; load %s",
		sorted[len(sorted)/2].Round(time.Millisecond), len(took), strings.Join(all, " "), load)
}
