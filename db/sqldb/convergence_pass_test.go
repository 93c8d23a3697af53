package sqldb_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

// Whole passes: the snapshot, the planner and ApplyConvergence together.
var _ = forEachDialect("convergence passes", func(b *board) {
	var seed seeder

	BeforeEach(func() {
		seed = seeder{conn: b.conn, dialect: b.dialect}
	})

	pass := func(store *sqldb.SQLDB, cfg convergence.Config) (*convergence.Plan, *convergence.ConvergenceResult) {
		snap, err := store.ConvergenceSnapshot(b.ctx, nil)
		Expect(err).NotTo(HaveOccurred())
		plan := convergence.Compute(snap, b.clock.Now(), cfg)
		result, err := store.ApplyConvergence(b.ctx, &plan.Writes)
		Expect(err).NotTo(HaveOccurred())
		return plan, result
	}

	// seedRandomBoard stores a board in every state the planner knows:
	// missing, extra and undesired instances, in fresh and stale domains,
	// crashed ones due and waiting, stale and fresh placements, instances on
	// expired and unknown cells, suspects, and LRPs no cell can take.
	seedRandomBoard := func(r *rand.Rand) {
		now := b.clock.Now()
		at := func(d time.Duration) int64 { return now.Add(d).UnixNano() }
		Expect(seed.cells(b.ctx, []seedCell{
			{cellID: "cell-a", zone: "z1", memoryMB: 1 << 20, diskMB: 1 << 20, maxInstance: 1000, expiresAt: at(time.Minute)},
			{cellID: "cell-b", zone: "z2", memoryMB: 1 << 20, diskMB: 1 << 20, maxInstance: 1000, expiresAt: at(time.Minute)},
			{cellID: "cell-c", zone: "z1", memoryMB: 1 << 20, diskMB: 1 << 20, maxInstance: 1000, tags: `["ssd"]`, expiresAt: at(time.Minute)},
			{cellID: "cell-x", zone: "z2", memoryMB: 1 << 20, diskMB: 1 << 20, maxInstance: 1000, expiresAt: at(-time.Second)},
		})).To(Succeed())
		Expect(seed.domain(b.ctx, "apps", 0)).To(Succeed())

		cells := []string{"", "cell-a", "cell-b", "cell-c", "cell-x", "cell-gone"}
		states := []string{"UNCLAIMED", "CLAIMED", "RUNNING", "CRASHED"}
		var lrps []seedLRP
		var rows []seedActual
		for i := range 30 {
			lrp := seedLRP{guid: fmt.Sprintf("lrp-%02d", i), domain: "apps", instances: r.Int32N(6), definitionID: "v2", memoryMB: 64, diskMB: 64}
			switch r.IntN(10) {
			case 0:
				lrp.tags = `["gpu"]` // no cell has it
			case 1:
				lrp.tags = `["ssd"]`
			case 2, 3:
				lrp.domain = "stale"
			}
			if i%10 == 9 {
				lrp.guid = fmt.Sprintf("gone-%02d", i) // no longer desired
			} else {
				lrps = append(lrps, lrp)
			}
			for index := range lrp.instances + 2 {
				if r.IntN(5) == 0 {
					continue
				}
				row := seedActual{
					guid: lrp.guid, index: index, state: states[r.IntN(len(states))], domain: lrp.domain,
					cellID: cells[r.IntN(len(cells))], definitionID: []string{"v1", "v2"}[r.IntN(2)],
					since: at(-time.Duration(r.IntN(600)) * time.Second), modIndex: int64(r.IntN(5)),
				}
				if row.state != "UNCLAIMED" {
					row.instanceGuid = fmt.Sprintf("ig-%s-%d", lrp.guid, index)
					if row.cellID == "" {
						row.cellID = "cell-a"
					}
				}
				if row.state == "CRASHED" {
					row.crashCount = 1 + r.Int32N(6)
				}
				ordinary := row
				if !strings.HasPrefix(lrp.guid, "gone-") {
					// An ORDINARY row on another definition than the
					// active one would start a rolling update, which
					// takes passes of its own (convergence's rollout
					// specs), and so would a SUSPECT one promoted back.
					// Rows of LRPs that are gone keep either definition.
					ordinary.definitionID = "v2"
				}
				rows = append(rows, ordinary)
				row = ordinary
				if r.IntN(8) == 0 {
					suspect := row
					suspect.presence, suspect.state = "SUSPECT", []string{"RUNNING", "CLAIMED", "CRASHED"}[r.IntN(3)]
					suspect.cellID = []string{"cell-x", "cell-a"}[r.IntN(2)]
					suspect.instanceGuid += "-s"
					rows = append(rows, suspect)
				}
			}
		}
		Expect(seed.desired(b.ctx, lrps)).To(Succeed())
		for _, l := range lrps {
			Expect(seed.definition(b.ctx, l.guid, "v1", 32, 32)).To(Succeed())
		}
		Expect(seed.actual(b.ctx, len(rows), func(i int) seedActual { return rows[i] })).To(Succeed())
	}

	for _, seedValue := range []uint64{1, 2, 3, 4, 5, 6} {
		It(fmt.Sprintf("applies a plan so that the next pass has nothing to do (board %d)", seedValue), func() {
			seedRandomBoard(rand.New(rand.NewPCG(seedValue, 42)))
			plan, result := pass(b.store, convergence.DefaultConfig())
			Expect(plan.Writes.Empty()).To(BeFalse())
			Expect(result.Skipped).To(BeZero())
			w := &plan.Writes
			total := len(w.Delete) + len(w.Promote) + len(w.MarkSuspect) + len(w.Retire) + len(w.RequestStop) +
				len(w.Create) + len(w.Restart) + len(w.Redefine) + len(w.Unassign) + len(w.Place) +
				len(w.PlacementFailed) + len(w.Rollouts) + len(w.DeleteDefinitions)
			Expect(result.Applied).To(Equal(total))

			again, _ := pass(b.store, convergence.DefaultConfig())
			Expect(again.Writes.Empty()).To(BeTrue(), "second pass: %v", again.Reasons)
		})
	}

	It("deletes a removed LRP's definitions once nothing references them, then its rollout record", func() {
		_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 2))
		Expect(err).NotTo(HaveOccurred())
		_, err = b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
			Definition: newDefinition("", "/bin/web-2"), UpdateIdentifier: "v2",
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(b.store.RemoveDesiredLRP(b.ctx, "web")).To(Succeed())
		count := func(query string) int {
			GinkgoHelper()
			var n int
			Expect(b.conn.QueryRow(query).Scan(&n)).To(Succeed())
			return n
		}
		Expect(count("SELECT COUNT(*) FROM run_infos WHERE process_guid = 'web'")).To(Equal(2))

		pass(b.store, convergence.DefaultConfig())
		Expect(count("SELECT COUNT(*) FROM run_infos WHERE process_guid = 'web'")).To(BeZero())
		Expect(count("SELECT COUNT(*) FROM rollouts WHERE process_guid = 'web'")).To(Equal(1))
		pass(b.store, convergence.DefaultConfig())
		Expect(count("SELECT COUNT(*) FROM rollouts WHERE process_guid = 'web'")).To(BeZero())
	})

	It("never undoes a claim or a start that committed after the plan was made", func() {
		const instances = 400
		// One zone: which cell wins each race is chance, and two zones
		// left a few instances apart would rightly be evened out by moves
		// after the race, which is not what this spec is about.
		Expect(seed.cells(b.ctx, []seedCell{
			{cellID: "cell-a", zone: "z1", memoryMB: 1 << 20, diskMB: 1 << 20, maxInstance: 1000, expiresAt: b.clock.Now().Add(time.Hour).UnixNano()},
			{cellID: "cell-b", zone: "z1", memoryMB: 1 << 20, diskMB: 1 << 20, maxInstance: 1000, expiresAt: b.clock.Now().Add(time.Hour).UnixNano()},
		})).To(Succeed())
		Expect(seed.desired(b.ctx, []seedLRP{{guid: "web", domain: "apps", instances: instances, definitionID: "v1", memoryMB: 1, diskMB: 1}})).To(Succeed())
		Expect(seed.actual(b.ctx, instances, func(i int) seedActual {
			return seedActual{guid: "web", index: int32(i), domain: "apps", definitionID: "v1"}
		})).To(Succeed())

		events := &recordedEvents{}
		store := newStore(b.conn, b.dialect, sqldb.WithClock(b.clock.Now), sqldb.WithEvents(events))
		// Every placement is stale at once, so each pass unassigns and
		// places again every instance that is not claimed yet: the most
		// writes racing with the cells' claims.
		cfg := convergence.DefaultConfig()
		cfg.StaleUnclaimed = 0

		// A cell claims the instances placed on it and starts the ones it
		// claimed, each write conditional on the state as it read it and
		// moving the modification index on, as a lifecycle call does.
		ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
		defer cancel()
		repDone := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			repDone <- simulateCells(ctx, b.conn, b.dialect, instances)
		}()
		passes := 0
		for running := false; !running; passes++ {
			pass(store, cfg)
			time.Sleep(time.Millisecond)
			select {
			case err := <-repDone:
				Expect(err).NotTo(HaveOccurred())
				running = true
			default:
			}
		}

		Expect(b.count("SELECT COUNT(*) FROM actual_lrps WHERE state = 'RUNNING'")).To(Equal(instances))
		for _, e := range events.all() {
			if changed, ok := e.Payload.(*models.ActualLRPChangedEvent); ok {
				Expect(changed.Before.State).NotTo(Equal(models.ActualLRP_RUNNING), "a pass changed a running instance: %v", changed)
				Expect(changed.Before.State).NotTo(Equal(models.ActualLRP_CLAIMED), "a pass undid a claim on a present cell: %v", changed)
			}
			Expect(e.Type).NotTo(Equal(models.EventActualLRPRemoved))
		}
		plan, _ := pass(store, cfg)
		Expect(plan.Writes.Empty()).To(BeTrue(), "%+v", plan.Reasons)
		GinkgoWriter.Printf("%d passes raced with the cells\n", passes)
	})
})

// simulateCells plays the cells: it claims every placed UNCLAIMED instance
// and starts every CLAIMED one, until all instances run. Each write is one
// statement that checks the row is still what it read, and moves the
// modification index on, as a lifecycle call does; a write the database
// chose as a deadlock victim is read again and retried, as a lifecycle
// call's transaction is.
func simulateCells(ctx context.Context, conn *sql.DB, dialectName string, instances int) error {
	claim := dialect.Rebind(dialect.Name(dialectName), `UPDATE actual_lrps SET state = 'CLAIMED', instance_guid = ?,
 modification_tag_index = modification_tag_index + 1
 WHERE process_guid = 'web' AND instance_index = ? AND presence = 'ORDINARY' AND state = 'UNCLAIMED' AND cell_id = ?`)
	start := dialect.Rebind(dialect.Name(dialectName), `UPDATE actual_lrps SET state = 'RUNNING', routable = ?,
 modification_tag_index = modification_tag_index + 1
 WHERE process_guid = 'web' AND instance_index = ? AND presence = 'ORDINARY' AND state = 'CLAIMED' AND cell_id = ?`)
	type pending struct {
		index       int32
		state, cell string
	}
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("instances still not running: %w", err)
		}
		rows, err := conn.QueryContext(ctx, `SELECT instance_index, state, cell_id FROM actual_lrps
 WHERE process_guid = 'web' AND state IN ('UNCLAIMED', 'CLAIMED')`)
		if err != nil {
			return err
		}
		var todo []pending
		for rows.Next() {
			var p pending
			if err := rows.Scan(&p.index, &p.state, &p.cell); err != nil {
				rows.Close()
				return err
			}
			todo = append(todo, p)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(todo) == 0 {
			return nil
		}
		for _, p := range todo {
			switch {
			case p.state == "CLAIMED":
				_, err = conn.ExecContext(ctx, start, true, p.index, p.cell)
			case p.cell != "":
				_, err = conn.ExecContext(ctx, claim, fmt.Sprintf("ig-%d", p.index), p.index, p.cell)
			}
			if err != nil && !sqldb.IsRetryable(err) {
				return err
			}
		}
	}
}
