package convergence_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
)

// The worked example of convergence.PresenceGrace, presence TTL 10 s: the
// board last read its database at 12:00:00 and read it again at 12:00:30.
var _ = Describe("Presence after a database outage", func() {
	at := func(clock string) time.Time {
		t, err := time.Parse("15:04:05", clock)
		Expect(err).NotTo(HaveOccurred())
		return time.Date(2026, 11, 27, t.Hour(), t.Minute(), t.Second(), 0, time.UTC)
	}
	grace := convergence.PresenceGrace{OutageBegan: at("12:00:00"), Until: at("12:00:40")}

	DescribeTable("an instance on a cell whose presence ran out",
		func(expiresAt, now string, g convergence.PresenceGrace, suspect bool) {
			cfg := convergence.DefaultConfig()
			cfg.PresenceGrace = g
			plan := convergence.Compute(&convergence.Snapshot{
				Desired: []convergence.DesiredSchedule{{
					ProcessGuid: "web", Domain: "apps", Instances: 1,
					ActiveDefinitionID: "v1", MemoryMB: 100, DiskMB: 100,
				}},
				Actual: []convergence.ActualRow{{
					ProcessGuid: "web", Index: 0, Presence: ordinary, State: runningState,
					Domain: "apps", CellID: "cell-1", DefinitionID: "v1", MemoryMB: 100, DiskMB: 100,
				}},
				Cells: []convergence.CellRow{
					{CellID: "cell-1", ExpiresAt: at(expiresAt).UnixNano(), Capacity: convergence.Resources{MemoryMB: 1000, DiskMB: 1000, Instances: 10}},
					{CellID: "cell-2", ExpiresAt: at("13:00:00").UnixNano(), Capacity: convergence.Resources{MemoryMB: 1000, DiskMB: 1000, Instances: 10}},
				},
				FreshDomains: []string{"apps"},
			}, at(now), cfg)
			if suspect {
				Expect(plan.Writes.MarkSuspect).To(HaveLen(1), "the instance is SUSPECT and replaced")
			} else {
				Expect(plan.Writes.MarkSuspect).To(BeEmpty(), "the instance keeps running where it is")
				Expect(plan.Writes.Create).To(BeEmpty())
			}
		},
		Entry("3. ran out during the outage, before Until: kept", "12:00:05", "12:00:31", grace, false),
		Entry("the same without a grace: SUSPECT", "12:00:05", "12:00:31", convergence.PresenceGrace{}, true),
		Entry("4. its rep never came back: SUSPECT at Until", "12:00:05", "12:00:40", grace, true),
		Entry("5. ran out before the outage began: SUSPECT", "11:59:58", "12:00:31", grace, true),
	)
})
