package main

import (
	"bytes"
	"time"
	"unicode/utf8"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("the progress line of a rollout watch", func() {
	start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	now := start.Add(12 * time.Second)
	status := func(state models.RolloutStatus_State, updated, instances, inFlight int32) *models.RolloutStatus {
		return &models.RolloutStatus{
			ProcessGuid: "hello", State: state, UpdatedInstances: updated, Instances: instances, InFlight: inFlight,
			StartedAt: start.UnixNano(), DeadlineAt: start.Add(10 * time.Minute).UnixNano(),
		}
	}

	DescribeTable("progressText: the bar, the counts and the clocks, within the width",
		func(s *models.RolloutStatus, width int, want string) {
			got := progressText(s, start, now, width)
			Expect(got).To(Equal(want))
			Expect(utf8.RuneCountInString(got)).To(BeNumerically("<=", width))
		},
		Entry("nothing updated yet", status(models.RolloutStatus_PROGRESSING, 0, 4, 1), 120,
			"hello  PROGRESSING  [░░░░░░░░░░░░░░░░░░░░]  0/4 updated  1 in flight  elapsed 12s  deadline in 9m48s"),
		Entry("half way", status(models.RolloutStatus_PROGRESSING, 2, 4, 1), 120,
			"hello  PROGRESSING  [██████████░░░░░░░░░░]  2/4 updated  1 in flight  elapsed 12s  deadline in 9m48s"),
		Entry("done: the clock stops at the finish, no deadline", func() *models.RolloutStatus {
			s := status(models.RolloutStatus_COMPLETE, 4, 4, 0)
			s.FinishedAt, s.DeadlineAt = start.Add(5*time.Second).UnixNano(), 0
			return s
		}(), 120,
			"hello  COMPLETE  [████████████████████]  4/4 updated  0 in flight  elapsed 5s"),
		Entry("1 of 3 rounds down: 20/3 = 6 cells", status(models.RolloutStatus_PROGRESSING, 1, 3, 1), 120,
			"hello  PROGRESSING  [██████░░░░░░░░░░░░░░]  1/3 updated  1 in flight  elapsed 12s  deadline in 9m48s"),
		Entry("more updated than instances (scaling down) fills the bar", status(models.RolloutStatus_PROGRESSING, 5, 4, 0), 120,
			"hello  PROGRESSING  [████████████████████]  5/4 updated  0 in flight  elapsed 12s  deadline in 9m48s"),
		Entry("no instances: an empty bar", status(models.RolloutStatus_PROGRESSING, 0, 0, 0), 120,
			"hello  PROGRESSING  [░░░░░░░░░░░░░░░░░░░░]  0/0 updated  0 in flight  elapsed 12s  deadline in 9m48s"),
		Entry("exactly the width: as it is", status(models.RolloutStatus_PROGRESSING, 2, 4, 1), 100,
			"hello  PROGRESSING  [██████████░░░░░░░░░░]  2/4 updated  1 in flight  elapsed 12s  deadline in 9m48s"),
		Entry("2 narrower: the bar narrows, 2/4 of 18 cells is 9", status(models.RolloutStatus_PROGRESSING, 2, 4, 1), 98,
			"hello  PROGRESSING  [█████████░░░░░░░░░]  2/4 updated  1 in flight  elapsed 12s  deadline in 9m48s"),
		Entry("5 narrower: 2/4 of 15 cells is 7", status(models.RolloutStatus_PROGRESSING, 2, 4, 1), 95,
			"hello  PROGRESSING  [███████░░░░░░░░]  2/4 updated  1 in flight  elapsed 12s  deadline in 9m48s"),
		Entry("79 columns (an 80-column terminal): the deadline goes, the bar as wide as fits", status(models.RolloutStatus_PROGRESSING, 2, 4, 1), 79,
			"hello  PROGRESSING  [█████████░░░░░░░░░]  2/4 updated  1 in flight  elapsed 12s"),
		Entry("narrower: the elapsed time goes too", status(models.RolloutStatus_PROGRESSING, 2, 4, 1), 60,
			"hello  PROGRESSING  [██████░░░░░░]  2/4 updated  1 in flight"),
		Entry("narrower still: only the counts, the narrowest bar", status(models.RolloutStatus_PROGRESSING, 2, 4, 1), 40,
			"hello  PROGRESSING  [██░░░]  2/4 updated"),
		Entry("too narrow for the counts: cut", status(models.RolloutStatus_PROGRESSING, 2, 4, 1), 20,
			"hello  PROGRESSING…"),
		Entry("a deadline passed", func() *models.RolloutStatus {
			s := status(models.RolloutStatus_PROGRESSING, 0, 4, 1)
			s.DeadlineAt = start.UnixNano()
			return s
		}(), 120,
			"hello  PROGRESSING  [░░░░░░░░░░░░░░░░░░░░]  0/4 updated  1 in flight  elapsed 12s  deadline passed"),
		Entry("a staged phase: the share it allows now and its target", func() *models.RolloutStatus {
			s := status(models.RolloutStatus_PROGRESSING, 1, 10, 1)
			s.Stage = &models.RolloutStage{TargetPercent: 50, SharePercent: 12.4389}
			return s
		}(), 140,
			"hello  PROGRESSING  [██░░░░░░░░░░░░░░░░░░]  1/10 updated  share 12.4% of 50%  1 in flight  elapsed 12s  deadline in 9m48s"),
		Entry("no rollout: elapsed since the watch began", &models.RolloutStatus{ProcessGuid: "hello", Instances: 4, UpdatedInstances: 4}, 120,
			"hello  NONE  [████████████████████]  4/4 updated  0 in flight  elapsed 12s"),
	)

	It("rewrites the line in place and leaves it at the end, with how the rollout ended", func() {
		var out bytes.Buffer
		width := 80
		line := &progressLine{out: &out, terminal: func() (int, bool) { return width, true }, started: start}

		line.status = status(models.RolloutStatus_PROGRESSING, 2, 4, 1)
		Expect(line.draw(now)).To(Succeed())
		Expect(out.String()).To(Equal("\rhello  PROGRESSING  [█████████░░░░░░░░░]  2/4 updated  1 in flight  elapsed 12s\x1b[K"),
			"79 columns of an 80-column terminal; written at once")

		out.Reset()
		width = 200
		Expect(line.draw(now.Add(time.Second))).To(Succeed())
		Expect(out.String()).To(Equal("\rhello  PROGRESSING  [██████████░░░░░░░░░░]  2/4 updated  1 in flight  elapsed 13s  deadline in 9m47s\x1b[K"),
			"the clocks moved without a new status; the terminal grew")

		out.Reset()
		done := status(models.RolloutStatus_COMPLETE, 4, 4, 0)
		done.FinishedAt, done.DeadlineAt, done.Reason = now.UnixNano(), 0, "every index runs v2"
		line.status = done
		Expect(line.end(now, nil)).To(Succeed())
		Expect(out.String()).To(Equal("\rhello  COMPLETE  [████████████████████]  4/4 updated  0 in flight  elapsed 12s\x1b[K\nrollout complete: every index runs v2\n"))

		out.Reset()
		line.status = status(models.RolloutStatus_FAILED, 1, 4, 0)
		Expect(line.end(now, &outcomeError{code: exitRolloutFailed, msg: "rollout failed"})).To(Succeed())
		Expect(out.String()).To(HaveSuffix("\x1b[K\n"), "the outcome goes to stderr with its exit code")
	})
})
