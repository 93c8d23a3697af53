package convergence_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("DiagnoseRollout", func() {
	const now = int64(1000)
	unplaced := convergence.WaitingInstance{Index: 1, Unplaced: true,
		Short: []convergence.ZoneShortfall{{Zone: "z1", Short: "memory", Free: 512, Need: 1024}, {Zone: "z2", Short: "instances", Need: 1}}}
	refused := convergence.WaitingInstance{Index: 2, Unplaced: true, RefusedByTags: true, Tags: []string{"gpu", "ssd"}}
	unhealthy := convergence.WaitingInstance{Index: 2, CrashReason: "did not become healthy within 60s: GET /health on port 8080: 503"}
	failedCheck := convergence.WaitingInstance{Index: 3, CrashReason: "health check failed 3 times in a row: TCP connect to port 8080: connection refused"}
	download := convergence.WaitingInstance{Index: 0, CrashReason: "could not start: asset http://a/app.tgz: download failed: HTTP 404 Not Found"}
	otherCrash := convergence.WaitingInstance{Index: 0, CrashReason: "exited with code 3"}
	noPorts := convergence.WaitingInstance{Index: 1, CrashReason: "could not start: instance web-1: port range 61000-61002 exhausted: need 1 free port, found 0"}
	lost := convergence.WaitingInstance{Index: 4, LostCell: "cell-b"}
	// failing: index 3 starts, its startup check failing.
	failing := convergence.WaitingInstance{Index: 3, CheckFailure: "GET http://10.0.0.1:61001/health: 503 Service Unavailable"}
	ready := func(index int32, at int64) convergence.WaitingInstance {
		return convergence.WaitingInstance{Index: index, ReadyAt: at}
	}

	DescribeTable("names the first cause that holds, in DiagnoseRollout's order",
		func(s convergence.RolloutSituation, reason, detail string, estimate int64) {
			b := convergence.DiagnoseRollout(s, nil, now)
			if reason == "" {
				Expect(b).To(BeNil())
				return
			}
			Expect(b).NotTo(BeNil())
			Expect(b.Reason).To(Equal(reason))
			Expect(b.Detail).To(Equal(detail))
			Expect(b.Estimate).To(Equal(estimate))
			Expect(b.Since).To(Equal(now))
		},
		Entry("nothing holds it", convergence.RolloutSituation{}, "", "", int64(0)),
		Entry("an index that crashed for another reason is no cause",
			convergence.RolloutSituation{Waiting: []convergence.WaitingInstance{otherCrash}}, "", "", int64(0)),
		Entry("queued, before everything else",
			convergence.RolloutSituation{Turn: convergence.RolloutTurn{Position: 2, Queued: 5}, Limit: 10, FrozenBy: "xmas", FrozenUntil: 5000,
				Waiting: []convergence.WaitingInstance{unplaced}},
			models.BlockedQueued, "queued: position 2 of 5 (max_rollouts_in_flight 10)", int64(0)),
		Entry("frozen, until the window ends",
			convergence.RolloutSituation{FrozenBy: "xmas", FrozenUntil: 3600e9, Holding: true},
			models.BlockedFrozen, "freeze window xmas holds it until 1970-01-01T01:00:00Z", int64(3600e9)),
		Entry("awaiting promote",
			convergence.RolloutSituation{Holding: true, HoldingReason: "holding at 50% (2 of 4 on v2): promote to go on", BakeUntil: 9},
			models.BlockedAwaitingPromote, "holding at 50% (2 of 4 on v2): promote to go on", int64(0)),
		Entry("baking, until the bake ends",
			convergence.RolloutSituation{Definition: "v2", BakeUntil: 60e9},
			models.BlockedBaking, "every index runs v2; the bake ends at 1970-01-01T00:01:00Z", int64(60e9)),
		Entry("refused by tags comes before no capacity",
			convergence.RolloutSituation{Waiting: []convergence.WaitingInstance{unplaced, refused}},
			models.BlockedPlacementRefused, "index 2 fits no cell: no present cell has tags [gpu ssd]", int64(0)),
		Entry("no capacity: each zone and what it is short of",
			convergence.RolloutSituation{Waiting: []convergence.WaitingInstance{download, unplaced, lost}},
			models.BlockedNoCapacity, "index 1 fits no cell: zone z1 is short of memory (512 MB free at most, 1024 MB needed); zone z2 has no free instance slot", int64(0)),
		Entry("cell unreachable comes before a crash",
			convergence.RolloutSituation{Waiting: []convergence.WaitingInstance{download, lost}},
			models.BlockedCellUnreachable, "index 4 ran on cell cell-b, which is unreachable", int64(0)),
		Entry("a failing download, with its error",
			convergence.RolloutSituation{Waiting: []convergence.WaitingInstance{download, unhealthy}},
			models.BlockedDownloadFailing, "index 0 could not start: asset http://a/app.tgz: download failed: HTTP 404 Not Found", int64(0)),
		Entry("a failing health check, the first index of two, with its output",
			convergence.RolloutSituation{Waiting: []convergence.WaitingInstance{unhealthy, failedCheck, ready(5, 70)}},
			models.BlockedHealthCheck, "index 2 crashed: did not become healthy within 60s: GET /health on port 8080: 503 (and 1 more)", int64(0)),
		Entry("a failing health check before any crash, with its output and how long it has failed",
			convergence.RolloutSituation{Waiting: []convergence.WaitingInstance{otherCrash, failing, ready(5, 70)}},
			models.BlockedHealthCheck, "index 3: health check failing: GET http://10.0.0.1:61001/health: 503 Service Unavailable", int64(0)),
		Entry("a failing health check says more than an earlier start's crash",
			convergence.RolloutSituation{Waiting: []convergence.WaitingInstance{{Index: 2, CrashReason: unhealthy.CrashReason,
				CheckFailure: "TCP connect to 10.0.0.1:61002: connection refused"}}},
			models.BlockedHealthCheck, "index 2: health check failing: TCP connect to 10.0.0.1:61002: connection refused", int64(0)),
		Entry("a failing health check and a crashed one: the first index, and the other counted",
			convergence.RolloutSituation{Waiting: []convergence.WaitingInstance{unhealthy, failing}},
			models.BlockedHealthCheck, "index 2 crashed: did not become healthy within 60s: GET /health on port 8080: 503 (and 1 more)", int64(0)),
		Entry("another start the rep could not make, with its error",
			convergence.RolloutSituation{Waiting: []convergence.WaitingInstance{noPorts, unhealthy}},
			models.BlockedStartFailing, "index 1 could not start: instance web-1: port range 61000-61002 exhausted: need 1 free port, found 0", int64(0)),
		Entry("a failing download comes before another failing start",
			convergence.RolloutSituation{Waiting: []convergence.WaitingInstance{noPorts, download}},
			models.BlockedDownloadFailing, "index 0 could not start: asset http://a/app.tgz: download failed: HTTP 404 Not Found", int64(0)),
		Entry("a failing download comes before a failing health check",
			convergence.RolloutSituation{Waiting: []convergence.WaitingInstance{failing, download}},
			models.BlockedDownloadFailing, "index 0 could not start: asset http://a/app.tgz: download failed: HTTP 404 Not Found", int64(0)),
		Entry("waiting for min-ready: the earliest index to count",
			convergence.RolloutSituation{Waiting: []convergence.WaitingInstance{ready(1, 90e9), ready(3, 30e9)}, BudgetHeldBy: "budget 1, spent 1: 1 leaving (evacuating or told to stop), 0 down"},
			models.BlockedMinReady, "index 3 serves and counts as updated at 1970-01-01T00:00:30Z (min_ready)", int64(30e9)),
		Entry("budget exhausted, when no index says more",
			convergence.RolloutSituation{Waiting: []convergence.WaitingInstance{otherCrash}, BudgetHeldBy: "budget 1, spent 1: 1 leaving (evacuating or told to stop), 0 down"},
			models.BlockedBudgetExhausted, "disruption budget 1, spent 1: 1 leaving (evacuating or told to stop), 0 down", int64(0)),
	)

	It("keeps since while the reason stays, and starts it anew when the reason changes (the worked example)", func() {
		s := convergence.RolloutSituation{Waiting: []convergence.WaitingInstance{unplaced, unhealthy}}
		first := convergence.DiagnoseRollout(s, nil, 100)
		Expect(first.Since).To(Equal(int64(100)))
		again := convergence.DiagnoseRollout(s, first, 200)
		Expect(again.Reason).To(Equal(models.BlockedNoCapacity))
		Expect(again.Since).To(Equal(int64(100)), "the first pass that saw it")
		s.Waiting = []convergence.WaitingInstance{unhealthy}
		changed := convergence.DiagnoseRollout(s, again, 300)
		Expect(changed.Reason).To(Equal(models.BlockedHealthCheck))
		Expect(changed.Since).To(Equal(int64(300)))
	})
})

var _ = Describe("CheckFailing (its worked example)", func() {
	// 12:00:30, as Unix nanoseconds from 12:00:00.
	const s = int64(1e9)
	now := 30 * s
	claimed := func(since int64) *convergence.ActualRow {
		return &convergence.ActualRow{ProcessGuid: "web", Index: 3, InstanceGuid: "g3", DefinitionID: "v2",
			State: models.ActualLRP_CLAIMED, Since: since}
	}
	failure := func(guid string, at int64) *models.CheckFailure {
		return &models.CheckFailure{ProcessGuid: "web", DefinitionID: "v2", Index: 3, InstanceGuid: guid,
			Output: "GET http://10.0.0.1:61001/health: 503 Service Unavailable", At: at, Since: 13 * s}
	}
	DescribeTable("whether a reported failing check says why the row waits",
		func(r *convergence.ActualRow, f *models.CheckFailure, now int64, want bool) {
			Expect(convergence.CheckFailing(r, f, now)).To(Equal(want))
		},
		Entry("1. its start's check failed 5 s ago", claimed(0), failure("g3", 25*s), now, true),
		Entry("2. an earlier start's", claimed(0), failure("g2", 25*s), now, false),
		Entry("3. before its claim", claimed(0), failure("g3", -10*s), now, false),
		Entry("4. reported 65 s ago, nothing since", claimed(0), failure("g3", 25*s), now+60*s, false),
		Entry("4. reported exactly RecentCheckFailure ago: still recent", claimed(0), failure("g3", 25*s), 25*s+int64(convergence.RecentCheckFailure), true),
		Entry("5. the row CRASHED", &convergence.ActualRow{InstanceGuid: "g3", State: models.ActualLRP_CRASHED}, failure("g3", 25*s), now, false),
		Entry("a RUNNING row whose checks fail after it became healthy",
			&convergence.ActualRow{InstanceGuid: "g3", State: models.ActualLRP_RUNNING, Since: 20 * s}, failure("g3", 25*s), now, true),
		Entry("a RUNNING row: a failure before it became healthy was answered",
			&convergence.ActualRow{InstanceGuid: "g3", State: models.ActualLRP_RUNNING, Since: 26 * s}, failure("g3", 25*s), now, false),
		Entry("none reported", claimed(0), nil, now, false),
	)
})

var _ = Describe("DiagnoseValidation", func() {
	const now = int64(12 * 3600e9)
	validation := func(w convergence.WaitingInstance) convergence.WaitingInstance {
		w.Index = models.ValidationIndex
		return w
	}
	DescribeTable("judges the validation instance as a rollout's waiting index, naming it",
		func(w convergence.WaitingInstance, reason, detail string) {
			b := convergence.DiagnoseValidation(validation(w), "v2", nil, now)
			if reason == "" {
				Expect(b).To(BeNil())
				return
			}
			Expect(b).To(Equal(&models.BlockedBy{Reason: reason, Detail: detail, Since: now}))
		},
		Entry("placed and starting: nothing holds it", convergence.WaitingInstance{}, "", ""),
		Entry("its worked example: no capacity",
			convergence.WaitingInstance{Unplaced: true, Short: []convergence.ZoneShortfall{{Zone: "z1", Short: "memory", Free: 1024, Need: 4096}}},
			models.BlockedNoCapacity, "the validation instance fits no cell: zone z1 is short of memory (1024 MB free at most, 4096 MB needed)"),
		Entry("no cell is present",
			convergence.WaitingInstance{Unplaced: true, NoFit: "no cell is present"},
			models.BlockedNoCapacity, "the validation instance fits no cell: no cell is present"),
		Entry("refused by tags",
			convergence.WaitingInstance{Unplaced: true, RefusedByTags: true, Tags: []string{"gpu"}},
			models.BlockedPlacementRefused, "the validation instance fits no cell: no present cell has tags [gpu]"),
		Entry("its asset does not download",
			convergence.WaitingInstance{CrashReason: "could not start: asset http://a/app.tgz: download failed: HTTP 404 Not Found"},
			models.BlockedDownloadFailing, "the validation instance could not start: asset http://a/app.tgz: download failed: HTTP 404 Not Found"),
		Entry("its action's path is missing",
			convergence.WaitingInstance{CrashReason: `could not start: InstanceSpec.Definition.action.path "./nonexistent": does not exist`},
			models.BlockedStartFailing, `the validation instance could not start: InstanceSpec.Definition.action.path "./nonexistent": does not exist`),
		Entry("it never became healthy",
			convergence.WaitingInstance{CrashReason: "did not become healthy within 60s: GET /health on port 8080: 503"},
			models.BlockedHealthCheck, "the validation instance crashed: did not become healthy within 60s: GET /health on port 8080: 503"),
		Entry("its startup check fails now",
			convergence.WaitingInstance{CheckFailure: "GET http://10.0.0.1:61001/health: 503 Service Unavailable"},
			models.BlockedHealthCheck, "the validation instance: health check failing: GET http://10.0.0.1:61001/health: 503 Service Unavailable"),
		Entry("a crash for another reason is no cause", convergence.WaitingInstance{CrashReason: "exited with code 3"}, "", ""),
	)

	It("keeps the since of the same reason, and starts a new one for another", func() {
		unplaced := validation(convergence.WaitingInstance{Unplaced: true, NoFit: "no cell is present"})
		previous := &models.BlockedBy{Reason: models.BlockedNoCapacity, Detail: "the validation instance fits no cell: no cell is present", Since: now - 300e9}
		Expect(convergence.DiagnoseValidation(unplaced, "v2", previous, now).GetSince()).To(Equal(now - 300e9))
		unhealthy := validation(convergence.WaitingInstance{CrashReason: "did not become healthy within 60s: GET /health on port 8080: 503"})
		Expect(convergence.DiagnoseValidation(unhealthy, "v2", previous, now).GetSince()).To(Equal(now))
	})
})
