package main

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("table cells", func() {
	DescribeTable("shorten: one line, at most the width, an ellipsis where it was cut",
		func(text string, width int, want string) {
			Expect(shorten(text, width)).To(Equal(want))
		},
		Entry("short text as it is", "exited with code 3", 60, "exited with code 3"),
		Entry("empty", "", 60, ""),
		Entry("exactly the width", "abcdef", 6, "abcdef"),
		Entry("one over the width", "abcdefg", 6, "abcde…"),
		Entry("newlines and tabs as single spaces", "first line\n\tsecond  line\n", 60, "first line second line"),
		Entry("characters, not bytes", "ééééééé", 6, "ééééé…"),
	)

	strategy := func(surge, unavailable string) *models.UpdateStrategy {
		return &models.UpdateStrategy{MaxSurge: surge, MaxUnavailable: unavailable}
	}
	DescribeTable("effectiveStrategy: what the board applies, for the instances",
		func(instances int32, s *models.UpdateStrategy, want string) {
			Expect(effectiveStrategy(instances, s)).To(Equal(want))
		},
		Entry("no strategy: every default", int32(4), nil,
			"max_surge=1,max_unavailable=0,min_ready=0s,progress_deadline=10m,auto_revert=no,history_limit=10"),
		Entry("an empty strategy: every default", int32(4), &models.UpdateStrategy{},
			"max_surge=1,max_unavailable=0,min_ready=0s,progress_deadline=10m,auto_revert=no,history_limit=10"),
		Entry("every field set", int32(4), &models.UpdateStrategy{
			MaxSurge: "2", MaxUnavailable: "1", MinReadyMs: 1500, ProgressDeadlineMs: 90_000, AutoRevert: true, HistoryLimit: 3,
		}, "max_surge=2,max_unavailable=1,min_ready=1.5s,progress_deadline=1m30s,auto_revert=yes,history_limit=3"),
		Entry("percents with their counts: surge rounds up, unavailable down", int32(10), strategy("25%", "25%"),
			"max_surge=25%(3),max_unavailable=25%(2),min_ready=0s,progress_deadline=10m,auto_revert=no,history_limit=10"),
		Entry("0/0 surges 1", int32(10), strategy("0", "0"),
			"max_surge=0(1),max_unavailable=0,min_ready=0s,progress_deadline=10m,auto_revert=no,history_limit=10"),
		Entry("percents that round to 0/0 surge 1", int32(3), strategy("0%", "10%"),
			"max_surge=0%(1),max_unavailable=10%(0),min_ready=0s,progress_deadline=10m,auto_revert=no,history_limit=10"),
		Entry("a count over the instances counts as the instances", int32(3), strategy("5", ""),
			"max_surge=5(3),max_unavailable=0,min_ready=0s,progress_deadline=10m,auto_revert=no,history_limit=10"),
		Entry("an hour deadline", int32(1), &models.UpdateStrategy{ProgressDeadlineMs: time.Hour.Milliseconds()},
			"max_surge=1,max_unavailable=0,min_ready=0s,progress_deadline=1h,auto_revert=no,history_limit=10"),
		Entry("a stored strategy that no longer validates: every default, as the planner does", int32(4), strategy("lots", ""),
			"max_surge=1,max_unavailable=0,min_ready=0s,progress_deadline=10m,auto_revert=no,history_limit=10"),
	)

	DescribeTable("effectiveBudget: what the board applies, for the instances",
		func(instances int32, s *models.UpdateStrategy, budget *models.DisruptionBudget, want string) {
			Expect(effectiveBudget(&models.DesiredLRP{Instances: instances, UpdateStrategy: s, DisruptionBudget: budget})).To(Equal(want))
		},
		Entry("none: the strategy's default 0", int32(4), nil, nil, "0 (the strategy's max_unavailable)"),
		Entry("none: the strategy's 25% of 8", int32(8), strategy("", "25%"), nil, "2 (the strategy's max_unavailable)"),
		Entry("a count", int32(8), nil, &models.DisruptionBudget{MaxUnavailable: "1"}, "1"),
		Entry("a percent with its count", int32(8), nil, &models.DisruptionBudget{MaxUnavailable: "25%"}, "25%(2)"),
		Entry("a stored budget that no longer validates: the strategy's", int32(8), strategy("", "1"),
			&models.DisruptionBudget{MaxUnavailable: "lots"}, "1 (the strategy's max_unavailable)"),
	)

	Describe("tableStream", func() {
		It("prints the header once while the rows fit, and again, wider, when one does not", func() {
			var out strings.Builder
			rows := &tableStream{out: &out, headers: []string{"GUID", "STATE", "REASON"}}
			Expect(rows.add([]string{"hello", "PROGRESSING", "rolling from v1 to v2"})).To(Succeed())
			Expect(rows.add([]string{"hello", "COMPLETE", ""})).To(Succeed())
			Expect(rows.add([]string{"a-longer-guid", "FAILED", "no index completed"})).To(Succeed())
			Expect(out.String()).To(Equal("" +
				"GUID   STATE        REASON\n" +
				"hello  PROGRESSING  rolling from v1 to v2\n" +
				"hello  COMPLETE     -\n" +
				"GUID           STATE        REASON\n" +
				"a-longer-guid  FAILED       no index completed\n"))
		})

		It("lines up with printTable's columns", func() {
			var streamed, printed strings.Builder
			rows := [][]string{{"hello", "PROGRESSING", "rolling"}}
			Expect((&tableStream{out: &streamed, headers: []string{"GUID", "STATE", "REASON"}}).add(rows[0])).To(Succeed())
			Expect(printTable(&printed, []string{"GUID", "STATE", "REASON"}, rows)).To(Succeed())
			Expect(streamed.String()).To(Equal(printed.String()))
		})
	})
})

var _ = Describe("instanceSignalsRows", func() {
	It("writes a row per instance, definition by definition, a dash where the window has no sample", func() {
		s := &models.RolloutStatus{Definitions: []*models.DefinitionInstances{
			{DefinitionId: "v2", InstanceSignals: []*models.InstanceSignals{
				{Index: 0, InstanceGuid: "g-0", TimeToReadyMs: proto.Int64(1500), HealthChecks: 40, HealthLatencyP99Ms: proto.Int64(5), MemoryMbP99: proto.Int64(12)},
				{Index: 1, Crashes: 2, Restarts: 2, LastCrashReason: "exited with code 3:\nboom"},
			}},
			{DefinitionId: "v1"},
		}}
		Expect(instanceSignalsRows(s)).To(Equal([][]string{
			{"v2", "0", "g-0", "0", "0", "1.5s", "40", "0", "5ms", "12MB", "-"},
			{"v2", "1", "-", "2", "2", "-", "0", "0", "-", "-", "exited with code 3: boom"},
		}))
		Expect(instanceSignalsHeaders).To(HaveLen(len(instanceSignalsRows(s)[0])))
	})
})
