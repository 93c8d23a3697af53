package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/events"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/models"
)

// printedEvent is one line of `cork events`.
type printedEvent struct {
	ID   uint64          `json:"id"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// startCork runs the built binary in the background against boardURL.
func startCork(boardURL string, args ...string) *gexec.Session {
	cmd := exec.Command(corkPath, args...)
	cmd.Env = append(os.Environ(), "BBS_URL="+boardURL)
	session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { session.Kill().Wait() })
	return session
}

// printedEvents reads n event lines from the session's stdout.
func printedEvents(session *gexec.Session, n int) []printedEvent {
	GinkgoHelper()
	Eventually(func() int { return len(outputLines(session)) }, 5*time.Second).Should(BeNumerically(">=", n))
	lines := outputLines(session)
	Expect(lines).To(HaveLen(n), "no more lines than expected")
	var got []printedEvent
	for _, line := range lines {
		var e printedEvent
		Expect(json.Unmarshal([]byte(line), &e)).To(Succeed(), line)
		got = append(got, e)
	}
	return got
}

func outputLines(session *gexec.Session) []string {
	var lines []string
	for _, line := range strings.Split(string(session.Out.Contents()), "\n") {
		if line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

func createdEvent(guid string, index int32) models.Event {
	return models.ActualLRPCreated(&models.ActualLRP{ProcessGuid: guid, Index: index, State: models.ActualLRP_UNCLAIMED, DefinitionId: "v1"})
}

// waitForSubscriber waits until cork's stream is open on the hub.
func waitForSubscriber(hub *events.Hub, n int) {
	GinkgoHelper()
	Eventually(hub.Subscribers, 5*time.Second).Should(Equal(n))
}

var _ = Describe("cork events", func() {
	var (
		hub   *events.Hub
		board string
	)

	BeforeEach(func() {
		hub = events.NewHub(events.WithHistory(20))
		DeferCleanup(hub.Close)
		board = startBoard(handlers.WithEvents(hub))
	})

	It("prints each event as one JSON line with id, type and data, until Ctrl-C", func() {
		session := startCork(board, "events")
		waitForSubscriber(hub, 1)
		cell := &models.Cell{CellId: "cell-1", Zone: "z1", Present: true}
		hub.Publish(createdEvent("web", 0))
		hub.Publish(models.CellChanged(nil, cell))

		got := printedEvents(session, 2)
		Expect(got[0].ID).To(Equal(hub.LastID() - 1))
		Expect(got[1].ID).To(Equal(hub.LastID()))
		Expect(got[0].Type).To(Equal("actual_lrp_created"))
		Expect(got[1].Type).To(Equal("cell_changed"))
		Expect(string(got[0].Data)).To(ContainSubstring(`"process_guid":"web"`), "snake_case, like all cork output")
		var changed models.CellChangedEvent
		Expect(protojson.Unmarshal(got[1].Data, &changed)).To(Succeed())
		Expect(proto.Equal(changed.GetAfter(), cell)).To(BeTrue())
		Expect(outputLines(session)[0]).To(HavePrefix(`{"id":`), "compact, with id first")

		session.Interrupt()
		Eventually(session, 5*time.Second).Should(gexec.Exit(0))
		Expect(session.Err.Contents()).To(BeEmpty())
	})

	It("prints only the types asked for, resuming after --last-event-id", func() {
		for i := range int32(3) {
			hub.Publish(createdEvent("web", i), models.CellChanged(nil, &models.Cell{CellId: "c"}))
		}
		resumeAfter := hub.LastID() - 5 // the first created event

		session := startCork(board, "events", "--type", "actual_lrp_created", "--last-event-id", strconv.FormatUint(resumeAfter, 10))
		got := printedEvents(session, 2)
		Expect(got[0].ID).To(Equal(resumeAfter + 2))
		Expect(got[1].ID).To(Equal(resumeAfter + 4))
		for i, e := range got {
			Expect(e.Type).To(Equal("actual_lrp_created"))
			var payload models.ActualLRPCreatedEvent
			Expect(protojson.Unmarshal(e.Data, &payload)).To(Succeed())
			Expect(payload.GetActualLrp().GetIndex()).To(BeEquivalentTo(i + 1))
		}

		waitForSubscriber(hub, 1)
		hub.Publish(models.CellChanged(nil, &models.Cell{CellId: "c"}), createdEvent("web", 3))
		Expect(printedEvents(session, 3)[2].ID).To(Equal(hub.LastID()))
		session.Interrupt()
		Eventually(session, 5*time.Second).Should(gexec.Exit(0))
	})

	It("starts with an events_lost line when the board no longer keeps what followed --last-event-id", func() {
		for i := range int32(30) {
			hub.Publish(createdEvent("web", i))
		}
		tooOld := hub.LastID() - 25

		session := startCork(board, "events", "--last-event-id", strconv.FormatUint(tooOld, 10))
		got := printedEvents(session, 21)
		Expect(got[0].ID).To(BeZero())
		Expect(got[0].Type).To(Equal("events_lost"))
		var lost models.EventsLostEvent
		Expect(protojson.Unmarshal(got[0].Data, &lost)).To(Succeed())
		Expect(lost.GetLastEventId()).To(Equal(tooOld))
		Expect(lost.GetOldestKeptId()).To(Equal(hub.LastID() - 19))
		Expect(got[1].ID).To(Equal(hub.LastID() - 19))
		session.Interrupt()
		Eventually(session, 5*time.Second).Should(gexec.Exit(0))
	})

	It("exits 1 saying where to resume when the board ends the stream", func() {
		session := startCork(board, "events")
		waitForSubscriber(hub, 1)
		hub.Publish(createdEvent("web", 0))
		seen := printedEvents(session, 1)[0].ID

		burst := make([]models.Event, 100)
		for i := range burst {
			burst[i] = createdEvent("web", int32(i+1))
		}
		hub.Publish(burst...)

		Eventually(session, 5*time.Second).Should(gexec.Exit(1))
		Expect(session.Err).To(gbytes.Say(`cork: event stream ended: subscriber fell behind: .*; resume with --last-event-id ` + strconv.FormatUint(seen, 10) + "\n"))
	})

	DescribeTable("usage errors exit 2",
		func(want string, args ...string) {
			r := runCork(board, "", args...)
			Expect(r.code).To(Equal(2))
			Expect(r.stderr).To(ContainSubstring(want))
			Expect(r.stdout).To(BeEmpty())
		},
		Entry("an unknown type", `--type "lunch_served" is not an event type; want one of actual_lrp_changed,`, "events", "--type", "cell_changed,lunch_served"),
		Entry("a negative id", "invalid argument", "events", "--last-event-id", "-1"),
	)

	It("exits 1 with the board's error when the board streams no events", func() {
		r := runCork(startBoard(), "", "events")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(Equal("cork: Unavailable: events: this board streams no events\n"))
	})
})

var _ = Describe("cork cells", func() {
	var board string
	// The board's clock stands still at expiresA minus 30 s: cell-a was
	// registered then for 30 s and runs 4 instances of 256 MB memory and
	// disk; cell-b registered earlier, for a second, and has expired.
	expiresA := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	expiresB := expiresA.Add(-time.Hour)
	cells := []*models.Cell{
		{
			CellId: "cell-a", RepUrl: "http://10.0.0.5:1800", Zone: "z1", PlacementTags: []string{"gpu", "linux"},
			Capacity: &models.CellCapacity{MemoryMb: 4096, DiskMb: 10240, Instances: 50},
			Free:     &models.CellCapacity{MemoryMb: 3072, DiskMb: 9216, Instances: 46},
			Present:  true, ExpiresAt: expiresA.UnixNano(), Isolation: models.CellIsolationFull,
		},
		{
			CellId: "cell-b", RepUrl: "http://10.0.0.6:1800", Zone: "z2",
			Capacity:  &models.CellCapacity{MemoryMb: 2048, DiskMb: 4096, Instances: 20},
			Free:      &models.CellCapacity{MemoryMb: 2048, DiskMb: 4096, Instances: 20},
			ExpiresAt: expiresB.UnixNano(),
		},
	}

	BeforeEach(func() {
		ctx := context.Background()
		var now atomic.Int64
		now.Store(expiresB.Add(-time.Second).UnixNano())
		var store *sqldb.SQLDB
		board, store = startBoardWithStore([]sqldb.Option{sqldb.WithClock(func() time.Time { return time.Unix(0, now.Load()) })})
		register := func(cell *models.Cell, ttl time.Duration) {
			registered := proto.Clone(cell).(*models.Cell)
			registered.Free, registered.Present, registered.ExpiresAt = nil, false, 0
			Expect(store.RegisterCell(ctx, registered, ttl)).To(Succeed())
		}
		register(cells[1], time.Second)
		now.Store(expiresA.Add(-30 * time.Second).UnixNano())
		register(cells[0], 30*time.Second)

		_, err := store.DesireLRP(ctx, &models.DesiredLRP{
			ProcessGuid: "four", Domain: "cork", Instances: 4,
			Definition: &models.LRPDefinition{Action: &models.RunAction{Path: "/bin/four"}, MemoryMb: 256, DiskMb: 256},
		})
		Expect(err).NotTo(HaveOccurred())
		rows, err := store.ActualLRPs(ctx, db.ActualLRPFilter{ProcessGuid: "four"})
		Expect(err).NotTo(HaveOccurred())
		writes := &convergence.ConvergenceWrites{}
		for _, row := range rows {
			version := convergence.RowVersion{
				Key:   models.ActualLRPKey{ProcessGuid: row.GetProcessGuid(), Index: row.GetIndex(), Presence: row.GetPresence()},
				State: row.GetState(), ModificationIndex: int64(row.GetModificationTag().GetIndex()),
			}
			writes.Place = append(writes.Place, convergence.Placement{Row: version, CellID: "cell-a"})
		}
		result, err := store.ApplyConvergence(ctx, writes)
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Applied).To(Equal(4))
	})

	It("prints one JSON line per cell", func() {
		r := runCork(board, "", "cells")
		Expect(r.code).To(Equal(0), r.stderr)
		var a, b models.Cell
		parseLines(r, &a, &b)
		Expect(proto.Equal(&a, cells[0])).To(BeTrue())
		Expect(proto.Equal(&b, cells[1])).To(BeTrue())
		Expect(r.lines()[1]).To(ContainSubstring(`"present":false`), "defaults are printed")
	})

	It("prints a table with the free capacity first", func() {
		r := runCork(board, "", "cells", "-o", "table")
		Expect(r.code).To(Equal(0), r.stderr)
		lines := r.lines()
		Expect(lines).To(HaveLen(3))
		Expect(strings.Fields(lines[0])).To(Equal([]string{"CELL_ID", "ZONE", "PRESENT", "DRAINING", "QUARANTINED", "ISOLATION", "FREE_MEMORY_MB", "FREE_DISK_MB", "FREE_INSTANCES", "MEMORY_MB", "DISK_MB", "INSTANCES", "TAGS", "EXPIRES"}))
		Expect(strings.Fields(lines[1])).To(Equal([]string{"cell-a", "z1", "yes", "no", "no", "full", "3072", "9216", "46", "4096", "10240", "50", "gpu,linux", "2030-01-02T03:04:05Z"}))
		Expect(strings.Fields(lines[2])).To(Equal([]string{"cell-b", "z2", "no", "no", "no", "-", "2048", "4096", "20", "2048", "4096", "20", "-", "2030-01-02T02:04:05Z"}))
	})

	It("quarantines a cell with its reason, shows it, and clears it, keeping who cleared it", func() {
		r := runCork(board, "", "cell", "quarantine", "cell-b")
		Expect(r.code).To(Equal(2), "a usage error without --reason: %s", r.stderr)
		Expect(r.stderr).To(ContainSubstring("--reason"))

		r = runCork(board, "", "cell", "quarantine", "cell-b", "--reason", "disk errors in dmesg")
		Expect(r.code).To(Equal(0), r.stderr)
		r = runCork(board, "", "cells", "-o", "table")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(strings.Fields(r.lines()[2])[:5]).To(Equal([]string{"cell-b", "z2", "no", "no", "yes"}))
		r = runCork(board, "", "cells")
		var a, b models.Cell
		parseLines(r, &a, &b)
		Expect(b.GetQuarantinedAt()).NotTo(BeZero())
		Expect(b.GetQuarantineReason()).To(Equal("disk errors in dmesg"))
		Expect(b.GetQuarantinedBy()).NotTo(BeEmpty())
		Expect(a.GetQuarantinedAt()).To(BeZero())

		r = runCork(board, "", "cell", "clear", "cell-b")
		Expect(r.code).To(Equal(0), r.stderr)
		r = runCork(board, "", "cells")
		parseLines(r, &a, &b)
		Expect(b.GetQuarantinedAt()).To(BeZero())
		Expect(b.GetQuarantineReason()).To(BeEmpty())
		Expect(b.GetQuarantineClearedAt()).NotTo(BeZero())
		Expect(b.GetQuarantineClearedBy()).NotTo(BeEmpty())

		r = runCork(board, "", "cell", "clear", "cell-x")
		Expect(r.code).NotTo(Equal(0))
		Expect(r.stderr).To(ContainSubstring(`cell "cell-x" not found`))
	})
})
