package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

// Rollouts that judge themselves (docs/analysis.md), with real reps, the
// hello app and a real Prometheus scraping it through the board's
// GET /prometheus/targets: a router-like client sends every instance
// traffic, Prometheus counts each definition's errors and latencies, and
// the board's analysis compares the new definition with the healthy one.
//
// make chaos runs it (label chaos) with CORKBOARD_CHAOS=full: 20 clean
// rollouts in a row, the false-positive count the issue asks for; make
// test runs 2.
var _ = Describe("rollouts judged by their analysis", Label("prometheus", "analysis", "chaos"), Ordered, func() {
	const (
		guid      = "judged"
		instances = 4
		// interval is the analysis interval: verdicts come often enough
		// that a spec waits seconds, not minutes.
		interval = time.Second
	)
	ctx := context.Background()
	var (
		b      *board
		prom   *prometheusServer
		router *router
		// clean is the definition the LRP last completed a rollout to.
		clean string
	)

	// errorRatio is the definition's share of requests to / answered 500,
	// over the last 15 s.
	errorRatio := `sum(rate(hello_requests_total{code="500",process_guid="{{process_guid}}",definition_id="{{definition_id}}"}[15s]))` +
		` / sum(rate(hello_requests_total{process_guid="{{process_guid}}",definition_id="{{definition_id}}"}[15s]))`
	// latencyP90 is the definition's 90th percentile time to answer /.
	latencyP90 := `histogram_quantile(0.9, sum by (le) (rate(hello_request_duration_seconds_bucket{process_guid="{{process_guid}}",definition_id="{{definition_id}}"}[15s])))`
	errorsCheck := func() *models.AnalysisCheck {
		return &models.AnalysisCheck{Name: "errors", Provider: "prometheus", Query: errorRatio, Max: proto.Float64(1.5), Relative: true}
	}
	crashesCheck := func() *models.AnalysisCheck {
		return &models.AnalysisCheck{Name: "crashes", Provider: "board", Signal: "crash_rate", Max: proto.Float64(0)}
	}
	analysis := func(checks ...*models.AnalysisCheck) *models.RolloutAnalysis {
		return &models.RolloutAnalysis{IntervalMs: interval.Milliseconds(), Checks: checks}
	}
	hello := func(version string, env ...string) *models.LRPDefinition {
		def := definitionFixture("hello-local-v2-definition.json")
		def.Action.Env = []*models.EnvironmentVariable{{Name: "VERSION", Value: version}}
		for i := 0; i+1 < len(env); i += 2 {
			def.Action.Env = append(def.Action.Env, &models.EnvironmentVariable{Name: env[i], Value: env[i+1]})
		}
		return def
	}
	status := func() *models.RolloutStatus {
		GinkgoHelper()
		s, err := b.client().RolloutStatus(ctx, guid)
		Expect(err).NotTo(HaveOccurred())
		return s
	}
	// outcomes counts the verdicts of the rollout to definitionID by
	// outcome, and gives the largest value of the check named.
	outcomes := func(s *models.RolloutStatus, definitionID, check string) (map[models.AnalysisOutcome]int, float64) {
		counts := map[models.AnalysisOutcome]int{}
		largest := 0.0
		for _, v := range s.GetJudgement().GetVerdicts() {
			if v.GetDefinitionId() != definitionID {
				continue
			}
			counts[v.GetOutcome()]++
			for _, c := range v.GetChecks() {
				if c.GetName() == check && c.Value != nil {
					largest = max(largest, c.GetValue())
				}
			}
		}
		return counts, largest
	}
	// backTo rolls back fast to the clean definition and waits for it.
	backTo := func(definitionID string) {
		GinkgoHelper()
		b.cork("rollback", guid, "--to", definitionID, "--fast")
		waitForRollout(b, guid, time.Minute, completeOn(definitionID))
	}

	BeforeAll(func() {
		if _, err := os.Stat(prometheusPath); err != nil {
			Fail(fmt.Sprintf("this spec needs a Prometheus server at %s (%v): apt-get install prometheus", prometheusPath, err))
		}
		promAddress := "127.0.0.1:" + strconv.Itoa(freePort())
		b = startBoard(map[string]any{"prometheus_url": "http://" + promAddress})
		b.cork("set-domain", "cork")
		startRep(b, "cell-z1", "z1")
		startRep(b, "cell-z2", "z2")
		lrp := &models.DesiredLRP{}
		readFixture("hello-local.json", lrp)
		lrp.ProcessGuid = guid
		lrp.Instances = instances
		_, err := b.client().DesireLRP(ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		rows := steady(b, guid, instances, "cell-z1", "cell-z2")
		clean = rows[0].GetDefinitionId()
		prom = startPrometheusAt(promAddress, b.url+models.PrometheusTargetsPath, "")
		router = startRouter(b, guid)
		// Prometheus has the healthy definition's request rate before
		// anything is judged against it.
		Eventually(func(g Gomega) {
			g.Expect(prom.query(g, fmt.Sprintf(`sum(rate(hello_requests_total{process_guid=%q}[15s])) > 0`, guid))).To(HaveLen(1))
		}).WithTimeout(time.Minute).Should(Succeed())
	})

	It("passes clean versions, one rollout after another, with no verdict failing", func() {
		rollouts := 2
		if os.Getenv("CORKBOARD_CHAOS") == "full" {
			rollouts = 20
		}
		passed, marginal, largest := 0, 0, 0.0
		for i := 1; i <= rollouts; i++ {
			// The first compares with fresh baseline instances of the
			// healthy version, selected by their targets' label.
			withBaseline := i == 1
			errors := errorsCheck()
			if withBaseline {
				errors.Query = strings.ReplaceAll(errors.Query, `definition_id="{{definition_id}}"`, `definition_id="{{definition_id}}",baseline="{{baseline}}"`)
			}
			lrp, err := b.client().UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{
				Definition: hello(fmt.Sprintf("clean-%d", i)),
				// One index at a time, each ready 2 s: the new version
				// serves beside the healthy one for some seconds, and is
				// judged against it.
				UpdateStrategy: &models.UpdateStrategy{MaxSurge: "1", MaxUnavailable: "0", MinReadyMs: 2000},
				Analysis:       analysis(errors, crashesCheck()),
				OnFailure:      models.OnFailureFail,
				BakeMs:         (3 * time.Second).Milliseconds(),
				Baseline:       withBaseline,
			})
			Expect(err).NotTo(HaveOccurred())
			definition := lrp.GetActiveDefinitionId()
			if withBaseline {
				By("running a routable baseline instance of the healthy version beside the new one while it is judged")
				Eventually(func() error {
					for _, row := range b.lrps(guid) {
						if models.IsBaselineIndex(row.GetIndex()) && row.GetDefinitionId() == clean &&
							row.GetState() == models.ActualLRP_RUNNING && row.GetRoutable() {
							return nil
						}
					}
					return fmt.Errorf("no running baseline instance of %s: %s", clean, describe(b.lrps(guid)))
				}).WithTimeout(30 * time.Second).Should(Succeed())
			}
			s := waitForRollout(b, guid, time.Minute, completeOn(definition))
			if withBaseline {
				Eventually(func() []int32 {
					var left []int32
					for _, row := range b.lrps(guid) {
						if models.IsBaselineIndex(row.GetIndex()) {
							left = append(left, row.GetIndex())
						}
					}
					return left
				}).Should(BeEmpty(), "the baseline instances go once the rollout is no longer judged")
			}
			counts, value := outcomes(s, definition, "errors")
			Expect(counts[models.AnalysisOutcome_FAIL]).To(BeZero(), "rollout %d of %d: %s", i, rollouts, protojson.Format(s.GetJudgement()))
			Expect(counts[models.AnalysisOutcome_PASS]).To(BeNumerically(">", 0), "rollout %d passed a verdict: %s", i, protojson.Format(s.GetJudgement()))
			passed += counts[models.AnalysisOutcome_PASS]
			marginal += counts[models.AnalysisOutcome_MARGINAL]
			largest = max(largest, value)
			clean = definition
		}
		AddReportEntry("analysis: clean rollouts in a row, all COMPLETE, none with a failing verdict",
			fmt.Sprintf("%d rollouts; verdicts PASS %d, MARGINAL %d (no value yet: a new instance's first seconds), FAIL 0; largest error ratio %g (bound: 1.5 × the healthy version's)", rollouts, passed, marginal, largest))
	})

	It("fails a version that answers 1 request in 20 with an error, judged against the healthy version", func() {
		started := time.Now()
		lrp, err := b.client().UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{
			Definition:     hello("errors-5pct", "HELLO_FAIL_ONE_IN", "20"),
			UpdateStrategy: &models.UpdateStrategy{MaxSurge: "1", MaxUnavailable: "0", MinReadyMs: 5000},
			Analysis:       analysis(errorsCheck()),
			OnFailure:      models.OnFailureFail,
		})
		Expect(err).NotTo(HaveOccurred())
		bad := lrp.GetActiveDefinitionId()
		s := waitForRollout(b, guid, time.Minute, rolloutCondition{"FAILED", func(s *models.RolloutStatus) bool {
			return s.GetState() == models.RolloutStatus_FAILED
		}})
		took := time.Since(started)
		Expect(s.GetReason()).To(HavePrefix("verdict FAIL at "))
		last := s.GetJudgement().LastVerdict()
		Expect(last.GetOutcome()).To(Equal(models.AnalysisOutcome_FAIL))
		Expect(last.GetDefinitionId()).To(Equal(bad))
		Expect(last.GetBaselineDefinitionId()).To(Equal(clean))
		check := last.GetChecks()[0]
		Expect(check.GetValue()).To(BeNumerically(">", 0), "the errors measured")
		Expect(check.GetBaseline()).To(BeNumerically("==", 0), "the healthy version answers no error")
		Expect(check.GetReason()).To(ContainSubstring("errors "))
		op := b.cork("operations", guid, "--kind", "update_definition")
		Expect(op).To(ContainSubstring(bad))
		AddReportEntry("analysis: update to FAILED for 5% errors (relative to the healthy version, interval 1s)",
			fmt.Sprintf("%s; %s", took.Round(100*time.Millisecond), check.GetReason()))
		backTo(clean)
	})

	It("holds a slower version with cork update --on-failure hold: the mix keeps serving, no request fails", func() {
		dir := GinkgoT().TempDir()
		definitionFile, analysisFile := filepath.Join(dir, "slow.json"), filepath.Join(dir, "analysis.json")
		raw, err := protojson.Marshal(hello("slow", "HELLO_DELAY_MS", "300"))
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(definitionFile, raw, 0o600)).To(Succeed())
		raw, err = protojson.Marshal(analysis(&models.AnalysisCheck{Name: "latency", Provider: "prometheus", Query: latencyP90, Max: proto.Float64(3), Relative: true}))
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(analysisFile, raw, 0o600)).To(Succeed())
		watching := startRouter(b, guid)

		b.cork("update", guid, "--definition", definitionFile, "--analysis", analysisFile, "--on-failure", "hold",
			"--max-surge", "1", "--max-unavailable", "0", "--min-ready", "5s")
		s := waitForRollout(b, guid, time.Minute, rolloutCondition{"HELD", func(s *models.RolloutStatus) bool {
			return s.GetState() == models.RolloutStatus_HELD
		}})
		slow := s.GetActiveDefinitionId()
		Expect(s.GetReason()).To(HavePrefix("held: verdict FAIL at "))
		Expect(s.GetReason()).To(ContainSubstring("latency "))
		table := b.cork("rollout", "status", guid, "-o", "table")
		Expect(table).To(ContainSubstring("HELD"))
		Expect(table).To(ContainSubstring("analysis: 1 checks every 1s; on_failure hold"))
		Expect(table).To(MatchRegexp(`(?m)^verdict: FAIL at \S+ \(rolling, ` + slow + ` against ` + clean + `\): latency `))

		By("keeping the mix serving while held: nothing more starts, nothing stops")
		mix := func() map[string]int {
			counts := map[string]int{}
			for _, row := range b.lrps(guid) {
				if row.GetState() == models.ActualLRP_RUNNING {
					counts[row.GetDefinitionId()]++
				}
			}
			return counts
		}
		// The replacement under way when it was held finishes (its
		// predecessor stops once it is ready); then nothing moves.
		waitForRollout(b, guid, 30*time.Second, rolloutCondition{"HELD with nothing in flight", func(s *models.RolloutStatus) bool {
			return s.GetState() == models.RolloutStatus_HELD && s.GetInFlight() == 0
		}})
		var held map[string]int
		Eventually(func() int {
			held = mix()
			return held[slow] + held[clean]
		}).Should(Equal(instances), "one instance per index, the retired one gone")
		Expect(held[slow]).To(BeNumerically(">=", 1), "the slow version serves")
		Expect(held[clean]).To(BeNumerically(">=", 1), "the healthy version serves")
		Consistently(func() map[string]int { return mix() }, 3*time.Second, 200*time.Millisecond).Should(Equal(held))
		Expect(status().GetState()).To(Equal(models.RolloutStatus_HELD))
		stats := watching.stop()
		Expect(stats.Requests).To(BeNumerically(">", 50))
		Expect(stats.Failures).To(BeEmpty(), "requests that failed while the rollout ran and was held")
		Expect(stats.Versions["slow"]).To(BeNumerically(">", 0), "the slow version was serving")

		backTo(clean)
	})

	It("reverts a version that starts crashing during its bake, after every index ran it", func() {
		lrp, err := b.client().UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{
			Definition:     hello("crashes-later", "CRASH_AFTER", "12s"),
			UpdateStrategy: &models.UpdateStrategy{MaxSurge: "100%", MaxUnavailable: "0", MinReadyMs: 1000, AutoRevert: true},
			Analysis:       analysis(crashesCheck()),
			BakeMs:         time.Minute.Milliseconds(),
		})
		Expect(err).NotTo(HaveOccurred())
		regressed := lrp.GetActiveDefinitionId()
		baking := waitForRollout(b, guid, time.Minute, rolloutCondition{"baking", func(s *models.RolloutStatus) bool {
			return s.GetState() == models.RolloutStatus_PROGRESSING && s.GetJudgement().GetBakeStartedAt() > 0
		}})
		Expect(baking.GetUpdatedInstances()).To(BeEquivalentTo(instances), "every index runs it")
		Expect(baking.GetReason()).To(HavePrefix("baking: every index runs " + regressed))

		s := waitForRollout(b, guid, time.Minute, rolloutCondition{"REVERTED and back", func(s *models.RolloutStatus) bool {
			return s.GetState() == models.RolloutStatus_REVERTED && s.GetFinishedAt() > 0
		}})
		Expect(s.GetFailedDefinitionId()).To(Equal(regressed))
		Expect(s.GetActiveDefinitionId()).To(Equal(clean))
		Expect(s.GetReason()).To(Equal(regressed + " failed; every index is back on " + clean))
		var failedAt int64
		for _, v := range s.GetJudgement().GetVerdicts() {
			if v.GetOutcome() == models.AnalysisOutcome_FAIL && failedAt == 0 {
				failedAt = v.GetAt()
				Expect(v.GetDuring()).To(Equal(models.AnalysisDuringBaking))
				Expect(models.VerdictLine(v)).To(ContainSubstring("crashes "))
			}
		}
		history := b.cork("operations", guid, "--kind", "update_definition", "-o", "json")
		Expect(history).To(ContainSubstring("auto-revert: " + regressed + " failed, verdict FAIL at "))
		Expect(failedAt).NotTo(BeZero())
		// The retiring instances of the regressed version told to stop go
		// once their reps stopped them.
		Eventually(func() error {
			for _, row := range b.lrps(guid) {
				if row.GetDefinitionId() != clean {
					return fmt.Errorf("%s/%d (%s) runs %s", guid, row.GetIndex(), row.GetPresence(), row.GetDefinitionId())
				}
			}
			return nil
		}).Should(Succeed())
		AddReportEntry("analysis: a crash in the bake to the failing verdict (CRASH_AFTER=12s after 100%)",
			time.Duration(failedAt-baking.GetJudgement().GetBakeStartedAt()).Round(100*time.Millisecond).String()+" after the bake started")
	})

	AfterAll(func() {
		if router != nil {
			stats := router.stop()
			AddReportEntry("analysis: requests the router sent through the spec (errors were expected from the 5% version)",
				fmt.Sprintf("%d, %d failed", stats.Requests, len(stats.Failures)))
		}
	})
})
