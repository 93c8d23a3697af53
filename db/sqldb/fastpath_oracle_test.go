package sqldb_test

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// The Postgres fast paths (desire_postgres.go, update_postgres.go,
// lifecycle_postgres.go and the fast verbs of driver_postgres.go) write
// what the general path writes in fewer statements, some with its
// conditions in SQL. These specs hold each to the general path: the same calls run on
// fresh tables through a store with the fast paths and through one without
// (sqldb.WithoutFastPaths), and everything a user sees must be equal: what
// each call returns (models, errors, the operation it noted), then every
// desired and actual LRP, definition, operation and rollout status as the
// read API returns them, and the event log as the events API serves it.
//
// What differs by nature is normalized (witness.lines): the random ids,
// modification tag epochs and operation ids, become their order of first
// appearance ("epoch-3", "op-1"), so that a row and its events must still
// name the same tag epoch; event positions count from the run's first event;
// a convergence pass's placement epoch is written down as set or not.
// Every time is the test clock's, equal on both sides (the seeder's wall
// clock stamps are overwritten with it); the one time the database stamps,
// when an event was logged, is not part of an event as served.
//
// The lifecycle calls' fast path is held to models.DecideLifecycle row by
// row by lifecycle_oracle_test.go; here the lifecycle calls appear only as
// far as their events and removals are concerned.
var _ = Describe("the Postgres fast paths against the general path", func() {
	if !slices.Contains(testdb.MustDialects(), testdb.Postgres) {
		return
	}
	b := &board{dialect: testdb.Postgres}

	// differential runs scenario through both paths and compares what
	// they showed.
	differential := func(scenario func(w *witness)) {
		GinkgoHelper()
		fast := runWitnessed(b, false, scenario)
		general := runWitnessed(b, true, scenario)
		expectSameLines("fast path", fast, "general path", general)
	}

	It("desires as the general path does: new LRPs and their variants, repeats, left-overs and refusals", func() {
		differential(func(w *witness) {
			w.desireTaking("web", newLRP("web", "apps", 2), true)
			w.desireTaking("web again", newLRP("web", "apps", 2), false)
			w.desireTaking("web again, other content", newLRP("web", "apps", 3), false)

			bare := &models.DesiredLRP{ProcessGuid: "bare", Domain: "apps", Instances: 1, Definition: newDefinition("", "/bin/bare")}
			w.desireTaking("bare: no routes, annotation or tags, a generated definition id", bare, true)

			routes, err := structpb.NewStruct(map[string]any{
				"http": []any{
					map[string]any{"hostname": "a.example.com", "port": 8080},
					map[string]any{"hostname": "b.example.com", "port": 8080},
				},
				"tcp": []any{map[string]any{"external_port": 9000, "port": 8080}},
			})
			Expect(err).NotTo(HaveOccurred())
			routed := newLRP("routed", "apps", 1)
			routed.Routes, routed.Annotation = routes, strings.Repeat("x", 300)
			w.desireTaking("routed: two hostnames, tcp, a long annotation", routed, true)

			strategy := newLRP("strategy", "apps", 1)
			strategy.UpdateStrategy = &models.UpdateStrategy{MaxSurge: "25%", MaxUnavailable: "1", MinReadyMs: 5000, AutoRevert: true}
			w.desireTaking("with an update strategy", strategy, true)

			scaled := newLRP("scaled", "apps", 9)
			scaled.Autoscaling = autoscalingSettings(2, 5)
			w.desireTaking("autoscaled, instances clamped to the maximum", scaled, true)
			fromZero := newLRP("from-zero", "apps", 0)
			fromZero.Autoscaling = autoscalingSettings(2, 5)
			w.desireTaking("autoscaled from 0, which becomes the minimum", fromZero, true)
			w.desireTaking("no instances", newLRP("none", "apps", 0), true)

			// A running instance left over at index 0 (no LRP, no
			// operations): kept, and only index 1 is created.
			w.b.putActual(&models.ActualLRP{
				ProcessGuid: "left", Index: 0, Presence: models.ActualLRP_ORDINARY, Domain: "apps", DefinitionId: "old",
				State: models.ActualLRP_RUNNING, InstanceGuid: "ig-left", CellId: "cell-1", Since: 5,
				ModificationTag: &models.ModificationTag{Epoch: "left-epoch", Index: 4},
			})
			w.desireTaking("over a left-over running instance", newLRP("left", "apps", 2), false)

			// A definition left over from an LRP whose rows are gone: the
			// same id with other content is a conflict, with the same
			// content it is reused.
			w.desireTaking("kept", newLRP("kept", "apps", 1), true)
			for _, table := range []string{"desired_lrps", "actual_lrps", "operations"} {
				w.b.exec("DELETE FROM "+table+" WHERE process_guid = ?", "kept")
			}
			w.b.clock.Advance(time.Second)
			other := newLRP("kept", "apps", 1)
			other.Definition.Action.Path = "/bin/other"
			w.desireTaking("kept again, its stored definition id with other content", other, false)
			w.desireTaking("kept again, its stored definition", newLRP("kept", "apps", 1), false)

			// Removed and desired again: the guid's operations live on.
			w.record("remove web", nil, w.store.RemoveDesiredLRP(w.ctx, "web"))
			w.b.clock.Advance(time.Second)
			w.desireTaking("web after its removal", newLRP("web", "apps", 1), false)

			w.desireTaking("no LRP", nil, false)
			w.desireTaking("no guid", newLRP("", "apps", 1), false)
			noDefinition := newLRP("nodef", "apps", 1)
			noDefinition.Definition = nil
			w.desireTaking("no definition", noDefinition, false)
			w.desireTaking("negative instances", newLRP("negative", "apps", -1), false)
			w.desireTaking("a guid too long", newLRP(strings.Repeat("g", 129), "apps", 1), false)
			w.desireTaking("a guid with a trailing space", newLRP("space ", "apps", 1), false)
			w.desireTaking("a domain too long", newLRP("domain", strings.Repeat("d", 256), 1), false)
			longID := newLRP("longid", "apps", 1)
			longID.Definition.DefinitionId = strings.Repeat("v", 65)
			w.desireTaking("a definition id too long", longID, false)
			badScaling := newLRP("badscaling", "apps", 1)
			badScaling.Autoscaling = autoscalingSettings(5, 2)
			w.desireTaking("autoscaling with min above max", badScaling, false)
			w.readBack("web", "kept", "nodef", "negative")
		})
	})

	It("updates as the general path does: annotation, scales up and down, and those it leaves to the general path", func() {
		differential(func(w *witness) {
			w.desire("web", newLRP("web", "apps", 1))
			w.desire("api", newLRP("api", "apps", 3))
			scaled := newLRP("scaled", "apps", 2)
			scaled.Autoscaling = autoscalingSettings(1, 4)
			w.desire("scaled", scaled)
			tag := func(guid string) *models.ModificationTag {
				lrp, err := w.store.DesiredLRPByProcessGuid(w.ctx, guid)
				Expect(err).NotTo(HaveOccurred())
				return lrp.ModificationTag
			}
			annotation := func(text string) *string { return &text }
			instances := func(n int32) *int32 { return &n }

			// Taken by the fast path (a fast store's counter must show it).
			w.update("annotation", "web", &models.DesiredLRPUpdate{Annotation: annotation("v1 notes")}, true)
			w.update("annotation with the current tag", "web",
				&models.DesiredLRPUpdate{Annotation: annotation("v2 notes"), ModificationTag: tag("web")}, true)
			w.update("instances 1 → 3", "web", &models.DesiredLRPUpdate{Instances: instances(3)}, true)
			w.update("instances 3 → 1", "web", &models.DesiredLRPUpdate{Instances: instances(1)}, true)
			w.update("instances stay 1", "web", &models.DesiredLRPUpdate{Instances: instances(1)}, true)
			w.update("nothing", "web", &models.DesiredLRPUpdate{}, true)
			strategy := &models.UpdateStrategy{MaxSurge: "50%", MaxUnavailable: "0", MinReadyMs: 1000}
			w.update("an update strategy", "web", &models.DesiredLRPUpdate{UpdateStrategy: strategy}, true)
			w.update("autoscaling bounds, instances clamped", "scaled", &models.DesiredLRPUpdate{Autoscaling: autoscalingSettings(3, 4)}, true)
			w.update("autoscaling off", "scaled", &models.DesiredLRPUpdate{Autoscaling: &models.Autoscaling{}}, true)

			// api/2 claimed: a scale down deletes the UNCLAIMED api/1 only,
			// and a scale up creates api/1 again, keeping api/2. That scale
			// up meets an instance at an index it would create (the
			// statement's insert fails on it), so the general path keeps it.
			w.b.exec("UPDATE actual_lrps SET cell_id = 'cell-1' WHERE process_guid = 'api'")
			key := models.ActualLRPKey{ProcessGuid: "api", Index: 2, Presence: models.ActualLRP_ORDINARY}
			claimed, err := w.store.ClaimActualLRP(w.ctx, key, models.Caller{InstanceGuid: "ig-api-2", CellID: "cell-1"})
			w.record("claim api/2", claimed, err)
			w.update("instances 3 → 1 past a claimed instance", "api", &models.DesiredLRPUpdate{Instances: instances(1)}, true)
			w.update("instances 1 → 3 over the claimed instance", "api", &models.DesiredLRPUpdate{Instances: instances(3)}, false)

			// Left to the general path.
			stale := tag("web")
			stale.Index--
			w.update("a stale tag", "web", &models.DesiredLRPUpdate{Annotation: annotation("late"), ModificationTag: stale}, false)
			w.update("a missing LRP", "nope", &models.DesiredLRPUpdate{Annotation: annotation("x")}, false)
			w.update("autoscaling on, instances clamped 3 → 2", "api", &models.DesiredLRPUpdate{Autoscaling: autoscalingSettings(1, 2)}, true)
			w.update("instances while autoscaled", "api", &models.DesiredLRPUpdate{Instances: instances(2)}, false)
			routes, err := structpb.NewStruct(map[string]any{
				"http": []any{map[string]any{"hostname": "web.example.org", "port": 8080}},
			})
			Expect(err).NotTo(HaveOccurred())
			w.update("routes", "web", &models.DesiredLRPUpdate{Routes: routes}, false)
			w.update("the active definition again", "web", &models.DesiredLRPUpdate{Definition: newLRP("web", "apps", 1).Definition}, false)
			w.update("a definition change", "web", &models.DesiredLRPUpdate{Definition: newDefinition("v2", "/bin/web2")}, false)
			w.update("annotation while the change is unfinished", "web", &models.DesiredLRPUpdate{Annotation: annotation("v3 notes")}, false)
			w.update("instances while the change is unfinished", "web", &models.DesiredLRPUpdate{Instances: instances(2)}, false)
			w.readBack()
		})
	})

	It("leaves an update to the general path when a row it would write is locked, with the same outcome", func() {
		differential(func(w *witness) {
			w.desire("web", newLRP("web", "apps", 3))
			for _, held := range []string{
				"SELECT 1 FROM desired_lrps WHERE process_guid = 'web' FOR UPDATE",
				"SELECT 1 FROM actual_lrps WHERE process_guid = 'web' AND instance_index = 2 FOR UPDATE",
			} {
				tx, err := w.b.conn.Begin()
				Expect(err).NotTo(HaveOccurred())
				_, err = tx.Exec(held)
				Expect(err).NotTo(HaveOccurred())
				instances := int32(1)
				updated := make(chan struct{})
				go func() {
					defer GinkgoRecover()
					defer close(updated)
					w.update("instances 3 → 1 while another transaction holds a row", "web", &models.DesiredLRPUpdate{Instances: &instances}, false)
				}()
				time.Sleep(100 * time.Millisecond)
				Expect(tx.Commit()).To(Succeed())
				<-updated
				instances = 3
				w.update("instances 1 → 3", "web", &models.DesiredLRPUpdate{Instances: &instances}, true)
			}
			w.readBack()
		})
	})

	It("keeps concurrent updates of one LRP whole: each moves the tag on once, numbers its operation next and logs its events once", func() {
		b.reset()
		store := newStore(b.conn, b.dialect, sqldb.WithClock(b.clock.Now))
		_, err := store.DesireLRP(b.ctx, newLRP("web", "apps", 1))
		Expect(err).NotTo(HaveOccurred())
		Expect(store.SequenceEvents(b.ctx, 1000)).To(Equal(1), "the desire's events logged, one bundle")
		_, head, err := store.EventLogBounds(b.ctx)
		Expect(err).NotTo(HaveOccurred())

		const writers, each = 8, 10
		var wg sync.WaitGroup
		errs := make(chan error, writers*each)
		for g := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range each {
					update := &models.DesiredLRPUpdate{}
					if (g+j)%2 == 0 {
						n := int32(1 + (g+j)%3)
						update.Instances = &n
					} else {
						note := fmt.Sprintf("writer %d, update %d", g, j)
						update.Annotation = &note
					}
					_, err := store.UpdateDesiredLRP(b.ctx, "web", update)
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			Expect(err).NotTo(HaveOccurred())
		}
		if injectedFaults(store) == 0 {
			// Under injected commit faults every fast attempt may fail
			// and leave its update to the general path (as w.update allows).
			Expect(store.FastUpdates()).To(BeNumerically(">", 0), "some updates took the fast path")
		}

		lrp, err := store.DesiredLRPByProcessGuid(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		Expect(lrp.ModificationTag.Index).To(BeEquivalentTo(writers * each))
		var indices []int32
		for _, instance := range b.instances("web") {
			Expect(instance.State).To(Equal(models.ActualLRP_UNCLAIMED))
			indices = append(indices, instance.Index)
		}
		slices.Sort(indices)
		var want []int32
		for i := range lrp.Instances {
			want = append(want, i)
		}
		Expect(indices).To(Equal(want), "an UNCLAIMED instance per index below the count, none above")

		ops, _, err := store.Operations(b.ctx, db.OperationFilter{ProcessGuid: "web", Limit: 1000})
		Expect(err).NotTo(HaveOccurred())
		Expect(ops).To(HaveLen(1 + writers*each))
		for i, op := range ops {
			Expect(op.Sequence).To(BeEquivalentTo(len(ops)-i), "operations numbered without gaps, newest first")
			Expect(op.Status).To(Equal(models.Operation_FINISHED))
		}

		Expect(store.SequenceEvents(b.ctx, 10_000)).To(BeNumerically(">", 0))
		logged, err := store.ReadEvents(b.ctx, head, 10_000)
		Expect(err).NotTo(HaveOccurred())
		counts := map[string]int{}
		for _, e := range logged {
			counts[e.Type]++
		}
		Expect(counts[models.EventDesiredLRPChanged]).To(Equal(writers*each), "one desired_lrp_changed per update")
		Expect(counts[models.EventOperationChanged]).To(Equal(writers*each), "one operation_changed per update")
		Expect(1+counts[models.EventActualLRPCreated]-counts[models.EventActualLRPRemoved]).To(BeEquivalentTo(lrp.Instances),
			"the desire's instance and those created since, less those removed")
		Expect(len(logged)).To(Equal(2*writers*each+counts[models.EventActualLRPCreated]+counts[models.EventActualLRPRemoved]), "no other events")
	})

	It("removes, and logs the lifecycle calls' events, as the general path does", func() {
		differential(func(w *witness) {
			w.desire("web", newLRP("web", "apps", 4))
			key := func(index int32) models.ActualLRPKey {
				return models.ActualLRPKey{ProcessGuid: "web", Index: index, Presence: models.ActualLRP_ORDINARY}
			}
			owner := func(index int32) models.Caller {
				return models.Caller{InstanceGuid: fmt.Sprintf("ig-%d", index), CellID: "cell-1"}
			}
			net := &models.NetInfo{Address: "10.0.0.1", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61001}}}
			w.b.exec("UPDATE actual_lrps SET cell_id = 'cell-1'") // placed
			for index := range int32(4) {
				w.b.clock.Advance(time.Millisecond)
				lrp, err := w.store.ClaimActualLRP(w.ctx, key(index), owner(index))
				w.record(fmt.Sprintf("claim %d", index), lrp, err)
			}
			lrp, err := w.store.StartActualLRP(w.ctx, key(0), owner(0), net, true)
			w.record("start 0", lrp, err)
			lrp, err = w.store.StartActualLRP(w.ctx, key(1), owner(1), net, false)
			w.record("start 1 unroutable", lrp, err)
			lrp, err = w.store.CrashActualLRP(w.ctx, key(1), owner(1), "boom")
			w.record("crash 1", lrp, err)

			remove := func(label string, key models.ActualLRPKey, caller models.Caller) {
				w.b.clock.Advance(time.Millisecond)
				w.record(label, nil, w.store.RemoveActualLRP(w.ctx, key, caller))
			}
			remove("remove 0 by another cell", key(0), models.Caller{InstanceGuid: "ig-0", CellID: "cell-2"})
			remove("remove 0 by another instance", key(0), models.Caller{InstanceGuid: "ig-9", CellID: "cell-1"})
			remove("remove 0 by its owner", key(0), owner(0))
			remove("remove 0 again", key(0), owner(0))
			remove("remove a missing index", key(7), owner(7))
			remove("remove a missing LRP", models.ActualLRPKey{ProcessGuid: "nope", Index: 0, Presence: models.ActualLRP_ORDINARY}, owner(0))
			remove("remove 1, crashed, by its owner", key(1), owner(1))

			w.b.putActual(&models.ActualLRP{
				ProcessGuid: "web", Index: 2, Presence: models.ActualLRP_SUSPECT, Domain: "apps", DefinitionId: "v1",
				State: models.ActualLRP_RUNNING, InstanceGuid: "ig-s", CellId: "cell-3", Since: 5,
				ModificationTag: &models.ModificationTag{Epoch: "suspect-epoch", Index: 2},
			})
			suspect := models.ActualLRPKey{ProcessGuid: "web", Index: 2, Presence: models.ActualLRP_SUSPECT}
			remove("remove the suspect by the ordinary row's owner", suspect, owner(2))
			remove("remove the suspect by its owner", suspect, models.Caller{InstanceGuid: "ig-s", CellID: "cell-3"})

			// A row another transaction holds locked: the fast path must
			// leave it to the general path, which waits its turn.
			tx, err := w.b.conn.Begin()
			Expect(err).NotTo(HaveOccurred())
			_, err = tx.Exec(`SELECT 1 FROM actual_lrps WHERE process_guid = 'web' AND instance_index = 3 FOR UPDATE`)
			Expect(err).NotTo(HaveOccurred())
			removed := make(chan error, 1)
			go func() { removed <- w.store.RemoveActualLRP(w.ctx, key(3), owner(3)) }()
			time.Sleep(100 * time.Millisecond)
			Expect(tx.Commit()).To(Succeed())
			w.record("remove 3 once another transaction let go of it", nil, <-removed)
			w.readBack("web")
		})
	})

	It("stores bulk reports, occupancy and route changes (batched actual writes) as the general path does", func() {
		differential(func(w *witness) {
			w.desire("web", newLRP("web", "apps", 4))
			w.desire("api", newLRP("api", "apps", 2))
			w.b.clock.Advance(time.Second)
			net := func(host uint32) *models.NetInfo {
				return &models.NetInfo{Address: fmt.Sprintf("10.0.0.%d", host), Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61000 + host}}}
			}
			reported := func(guid string, index int32, state models.ActualLRP_State, netInfo *models.NetInfo, routable bool) *models.ReportedInstance {
				return &models.ReportedInstance{
					ProcessGuid: guid, Index: index, Presence: models.ActualLRP_ORDINARY, InstanceGuid: fmt.Sprintf("ig-%s-%d", guid, index), DefinitionId: "v1",
					State: state, NetInfo: netInfo, Routable: routable,
				}
			}
			report := func(label, cellID string, instances ...*models.ReportedInstance) {
				w.b.clock.Advance(time.Second)
				result, err := w.store.BulkReport(w.ctx, cellID, instances)
				w.note("%s: %+v (%v)", label, result, err)
			}
			// Placed (web/3 on cell-2) and claimed, as reps would.
			w.b.exec("UPDATE actual_lrps SET cell_id = CASE WHEN process_guid = 'web' AND instance_index = 3 THEN 'cell-2' ELSE 'cell-1' END")
			for _, lrp := range w.b.instances("") {
				caller := models.Caller{InstanceGuid: fmt.Sprintf("ig-%s-%d", lrp.ProcessGuid, lrp.Index), CellID: lrp.CellId}
				claimed, err := w.store.ClaimActualLRP(w.ctx, models.ActualLRPKey{ProcessGuid: lrp.ProcessGuid, Index: lrp.Index, Presence: lrp.Presence}, caller)
				w.record("claim", claimed, err)
			}
			report("first report", "cell-1",
				reported("web", 0, models.ActualLRP_RUNNING, net(1), true),
				reported("web", 1, models.ActualLRP_CLAIMED, nil, false),
				reported("web", 2, models.ActualLRP_RUNNING, net(2), false),
				reported("api", 0, models.ActualLRP_RUNNING, net(3), true),
				reported("gone", 0, models.ActualLRP_RUNNING, net(4), true),
			)
			report("second report", "cell-1",
				reported("web", 0, models.ActualLRP_RUNNING, net(1), true),
				reported("web", 1, models.ActualLRP_RUNNING, net(5), true),
				reported("web", 2, models.ActualLRP_RUNNING, net(6), true),
				reported("api", 0, models.ActualLRP_RUNNING, net(3), false),
			)
			report("another cell's report of a row on cell-1", "cell-2",
				reported("web", 0, models.ActualLRP_RUNNING, net(1), true),
				reported("web", 3, models.ActualLRP_RUNNING, net(7), true),
			)

			occupancy := func(label, cellID string, changes ...*models.OccupancyChange) {
				w.b.clock.Advance(time.Second)
				result, err := w.store.ReportOccupancy(w.ctx, cellID, changes)
				w.note("%s: %+v (%v)", label, result, err)
			}
			occupied := func(guid string, index int32, on bool) *models.OccupancyChange {
				return &models.OccupancyChange{ProcessGuid: guid, Index: index, Presence: models.ActualLRP_ORDINARY, InstanceGuid: fmt.Sprintf("ig-%s-%d", guid, index), Occupied: on}
			}
			occupancy("occupied", "cell-1", occupied("web", 0, true), occupied("web", 1, true), occupied("api", 0, true))
			occupancy("some freed, one repeated", "cell-1", occupied("web", 0, false), occupied("web", 1, true))
			occupancy("a change of an instance on another cell", "cell-2", occupied("web", 2, true))

			routes, err := structpb.NewStruct(map[string]any{
				"http": []any{map[string]any{"hostname": "new.example.com", "port": 8080}},
			})
			Expect(err).NotTo(HaveOccurred())
			w.b.clock.Advance(time.Second)
			updated, err := w.store.UpdateDesiredLRP(w.ctx, "web", &models.DesiredLRPUpdate{Routes: routes})
			w.record("new routes for web's running instances", updated, err)
			w.readBack()
		})
	})

	It("applies a convergence pass's creates (and the rest of its plan) as the general path does", func() {
		differential(func(w *witness) {
			seed := seeder{conn: w.b.conn, dialect: w.b.dialect}
			now := w.b.clock.Now()
			at := func(d time.Duration) int64 { return now.Add(d).UnixNano() }
			Expect(seed.cells(w.ctx, []seedCell{
				{cellID: "cell-a", zone: "z1", memoryMB: 4096, diskMB: 1 << 20, maxInstance: 100, expiresAt: at(time.Hour)},
				{cellID: "cell-b", zone: "z2", memoryMB: 4096, diskMB: 1 << 20, maxInstance: 100, tags: `["ssd"]`, expiresAt: at(time.Hour)},
				{cellID: "cell-x", zone: "z1", memoryMB: 4096, diskMB: 1 << 20, maxInstance: 100, expiresAt: at(-time.Second)},
			})).To(Succeed())
			Expect(seed.domain(w.ctx, "apps", at(time.Hour))).To(Succeed())
			Expect(seed.desired(w.ctx, []seedLRP{
				{guid: "web", domain: "apps", instances: 5, definitionID: "v2", memoryMB: 64, diskMB: 64},
				{guid: "api", domain: "apps", instances: 3, definitionID: "v1", memoryMB: 64, diskMB: 64, tags: `["ssd"]`},
				{guid: "gpu", domain: "apps", instances: 2, definitionID: "v1", memoryMB: 64, diskMB: 64, tags: `["gpu"]`},
				{guid: "huge", domain: "apps", instances: 2, definitionID: "v1", memoryMB: 1 << 20, diskMB: 64},
				{guid: "stale", domain: "stale", instances: 2, definitionID: "v1", memoryMB: 64, diskMB: 64},
			})).To(Succeed())
			// The seeder stamps desired rows and definitions with the
			// wall clock; the test clock's time makes both runs' equal.
			w.b.exec("UPDATE desired_lrps SET created_at = ?, updated_at = ?", now.UnixNano(), now.UnixNano())
			w.b.exec("UPDATE run_infos SET created_at = ?", now.UnixNano())
			Expect(seed.definition(w.ctx, "web", "v1", 64, 64)).To(Succeed())
			rows := []seedActual{
				{guid: "web", index: 0, state: "RUNNING", domain: "apps", instanceGuid: "ig-w0", cellID: "cell-a", definitionID: "v2", since: at(-time.Minute)},
				{guid: "web", index: 1, state: "CRASHED", domain: "apps", instanceGuid: "ig-w1", cellID: "cell-a", definitionID: "v2", crashCount: 1, since: at(-time.Minute)},
				{guid: "web", index: 2, state: "RUNNING", domain: "apps", instanceGuid: "ig-w2", cellID: "cell-x", definitionID: "v2", since: at(-time.Minute)},
				{guid: "web", index: 7, state: "RUNNING", domain: "apps", instanceGuid: "ig-w7", cellID: "cell-a", definitionID: "v2", since: at(-time.Minute)},
				{guid: "gone", index: 0, state: "RUNNING", domain: "apps", instanceGuid: "ig-g0", cellID: "cell-b", definitionID: "v1", since: at(-time.Minute)},
				{guid: "stale", index: 0, domain: "stale", definitionID: "v1", since: at(-time.Hour)},
			}
			Expect(seed.actual(w.ctx, len(rows), func(i int) seedActual { return rows[i] })).To(Succeed())

			for pass := range 3 {
				snapshot, err := w.store.ConvergenceSnapshot(w.ctx, nil)
				Expect(err).NotTo(HaveOccurred())
				plan := convergence.Compute(snapshot, w.b.clock.Now(), convergence.DefaultConfig())
				w.note("pass %d plans %s", pass, writeCounts(&plan.Writes))
				result, err := w.store.ApplyConvergence(w.ctx, &plan.Writes)
				Expect(err).NotTo(HaveOccurred())
				w.note("pass %d applied %d, skipped %d, placement epoch set: %v", pass, result.Applied, result.Skipped, result.PlacementEpoch != 0)
				w.b.clock.Advance(2 * time.Minute)
			}
			w.readBack("gone")
		})
	})
})

// witness runs a scenario against one store and writes down what a user
// would see of it, one line per answer or read row.
type witness struct {
	b     *board
	store *sqldb.SQLDB
	ctx   context.Context
	lines []string
	// eventsFrom is the log's head when the run began.
	eventsFrom uint64
}

// The event move's fast verb (driver_postgres.go's one statement,
// driver_sqlite.go's four of fixed text) against the general path's, on
// every database whose driver has one.
var _ = Describe("the event move's fast path against the general path", func() {
	for _, dialectName := range testdb.MustDialects() {
		if !sqldb.HasEventMoveFastPath(dialectName) {
			continue
		}
		b := &board{dialect: dialectName}
		outboxInsert := dialect.Rebind(dialect.Name(dialectName), `INSERT INTO event_outbox (event_type, event_key, payload) VALUES (?, 'held', ?)`)

		It("moves events into the log as the general path does: in limits, past gaps and a late commit, on "+dialectName, func() {
			fast := runWitnessed(b, false, func(w *witness) { moveEventsScenario(w, outboxInsert) })
			general := runWitnessed(b, true, func(w *witness) { moveEventsScenario(w, outboxInsert) })
			expectSameLines("fast path", fast, "general path", general)
		})
	}
})

// moveEventsScenario sequences events in limits smaller and larger than a
// batch, past a gap in the outbox's ids and, where writers run at once, past
// an event whose transaction commits after later ones did.
func moveEventsScenario(w *witness, outboxInsert string) {
	GinkgoHelper()
	// More events than one of the general path's insert batches.
	w.desire("many", newLRP("many", "apps", 1100))
	for _, limit := range []int{7, 500, 1000, 1000} {
		moved, err := w.store.SequenceEvents(w.ctx, limit)
		w.note("sequenced %d of at most %d (%v)", moved, limit, err)
	}

	// A gap in the outbox's ids: an insert rolled back.
	tx, err := w.b.conn.Begin()
	Expect(err).NotTo(HaveOccurred())
	held, err := proto.Marshal(models.CellChanged(nil, &models.Cell{CellId: "held"}).Payload)
	Expect(err).NotTo(HaveOccurred())
	_, err = tx.Exec(outboxInsert, models.EventCellChanged, held)
	Expect(err).NotTo(HaveOccurred())
	Expect(tx.Rollback()).To(Succeed())
	w.desire("after a gap", newLRP("gap", "apps", 1))

	if w.b.dialect == testdb.SQLite {
		// One write transaction at a time: no event commits late.
		moved, err := w.store.SequenceEvents(w.ctx, 1000)
		w.note("sequenced %d (%v)", moved, err)
		w.readBack()
		return
	}
	// An event whose transaction commits after later ones did: it is
	// logged after them, by the next move.
	tx, err = w.b.conn.Begin()
	Expect(err).NotTo(HaveOccurred())
	_, err = tx.Exec(outboxInsert, models.EventCellChanged, held)
	Expect(err).NotTo(HaveOccurred())
	w.desire("while an event is uncommitted", newLRP("late", "apps", 2))
	moved, err := w.store.SequenceEvents(w.ctx, 1000)
	w.note("sequenced %d before the late commit (%v)", moved, err)
	Expect(tx.Commit()).To(Succeed())
	moved, err = w.store.SequenceEvents(w.ctx, 1000)
	w.note("sequenced %d after it (%v)", moved, err)
	w.readBack()
}

// runWitnessed runs scenario on fresh tables, through a store with the
// fast paths or, when general, without them, and returns its lines.
func runWitnessed(b *board, general bool, scenario func(w *witness)) []string {
	GinkgoHelper()
	b.reset()
	opts := []sqldb.Option{sqldb.WithClock(b.clock.Now)}
	if general {
		opts = append(opts, sqldb.WithoutFastPaths())
	}
	store := newStore(b.conn, b.dialect, opts...)
	Expect(store.HasFastPaths()).To(Equal(!general), "the store compared must have fast paths, the other none")
	_, head, err := store.EventLogBounds(b.ctx)
	Expect(err).NotTo(HaveOccurred())
	w := &witness{b: b, store: store, ctx: b.ctx, eventsFrom: head}
	scenario(w)
	return w.normalized()
}

// note writes down a line.
func (w *witness) note(format string, args ...any) {
	w.lines = append(w.lines, fmt.Sprintf(format, args...))
}

// record writes down a call's answer: the model it returned, or its error.
func (w *witness) record(label string, m proto.Message, err error) {
	switch {
	case err != nil:
		w.note("%s: error %s: %v", label, models.ConvertError(err).GetType(), err)
	case m == nil || !m.ProtoReflect().IsValid():
		w.note("%s: none", label)
	default:
		w.note("%s: %s", label, prototext.MarshalOptions{}.Format(m))
	}
}

// desire desires lrp and writes down what it returned and the operation
// it noted.
func (w *witness) desire(label string, lrp *models.DesiredLRP) {
	note := &db.OperationNote{RequestedBy: "oracle"}
	stored, err := w.store.DesireLRP(db.WithOperationNote(w.ctx, note), lrp)
	w.record("desire "+label, stored, err)
	w.record("desire "+label+": its operation", note.Operation, nil)
}

// desireTaking is desire, and fast says whether a store with the fast
// paths must have taken its desire fast path (desireNewPostgres), held
// as update holds its fast (heldToPath).
func (w *witness) desireTaking(label string, lrp *models.DesiredLRP, fast bool) {
	GinkgoHelper()
	w.heldToPath(fmt.Sprintf("desire %q", label), w.store.FastDesires, fast, func() { w.desire(label, lrp) })
}

// update updates the LRP guid and writes down what it returned and the
// operation it noted. fast says whether a store with the fast paths must
// have taken its update fast path (updateNowPostgres; heldToPath).
func (w *witness) update(label, guid string, update *models.DesiredLRPUpdate, fast bool) {
	GinkgoHelper()
	w.b.clock.Advance(time.Millisecond)
	w.heldToPath(fmt.Sprintf("update %q", label), w.store.FastUpdates, fast, func() {
		note := &db.OperationNote{RequestedBy: "oracle"}
		updated, err := w.store.UpdateDesiredLRP(db.WithOperationNote(w.ctx, note), guid, update)
		w.record("update "+label, updated, err)
		w.record("update "+label+": its operation", note.Operation, nil)
	})
}

// heldToPath runs call, what, and holds it to the path fast names: a store
// with the fast paths must have counted one call of the fast path (taken,
// its counter), every other store none. Under injected commit faults
// (CORKBOARD_COMMIT_FAULTS) a call given one may leave it to the general
// path, and only the others are held to taking it.
func (w *witness) heldToPath(what string, taken func() int64, fast bool, call func()) {
	GinkgoHelper()
	before, faults := taken(), injectedFaults(w.store)
	call()
	want := int64(0)
	if fast && w.store.HasFastPaths() {
		want = 1
	}
	if injectedFaults(w.store) == faults || want == 0 {
		Expect(taken()-before).To(Equal(want), "%s took the fast path", what)
	}
}

// injectedFaults is how many commit faults the store injected so far.
func injectedFaults(store *sqldb.SQLDB) int {
	conflicts, lostBefore, lostAfter := store.InjectedCommitFaults()
	return conflicts + lostBefore + lostAfter
}

// readBack writes down everything the read API returns: the desired and
// actual LRPs, the definitions, operations and rollout status of every
// guid there and of guids, and the event log from the run's start.
func (w *witness) readBack(guids ...string) {
	GinkgoHelper()
	desired, err := w.store.DesiredLRPs(w.ctx, db.DesiredLRPFilter{})
	Expect(err).NotTo(HaveOccurred())
	for _, lrp := range desired {
		w.record("desired", lrp, nil)
		guids = append(guids, lrp.ProcessGuid)
	}
	actual, err := w.store.ActualLRPs(w.ctx, db.ActualLRPFilter{})
	Expect(err).NotTo(HaveOccurred())
	for _, lrp := range actual {
		w.record("actual", lrp, nil)
		guids = append(guids, lrp.ProcessGuid)
	}
	slices.Sort(guids)
	for _, guid := range slices.Compact(guids) {
		summaries, err := w.store.Definitions(w.ctx, guid)
		w.note("definitions of %s: %d (%v)", guid, len(summaries), err)
		for _, summary := range summaries {
			w.record("definition summary", summary, nil)
			def, err := w.store.Definition(w.ctx, guid, summary.DefinitionId)
			w.record("definition", def, err)
		}
		status, err := w.store.RolloutStatus(w.ctx, guid)
		w.record("rollout of "+guid, status, err)
	}
	for cursor := ""; ; {
		ops, next, err := w.store.Operations(w.ctx, db.OperationFilter{Cursor: cursor, Limit: 100})
		Expect(err).NotTo(HaveOccurred())
		for _, op := range ops {
			w.record("operation", op, nil)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	for {
		moved, err := w.store.SequenceEvents(w.ctx, 1000)
		Expect(err).NotTo(HaveOccurred())
		if moved == 0 {
			break
		}
	}
	for after := w.eventsFrom; ; {
		logged, err := w.store.ReadEvents(w.ctx, after, 1000)
		Expect(err).NotTo(HaveOccurred())
		if len(logged) == 0 {
			break
		}
		for _, e := range logged {
			w.note("event %d %s %s: %s", e.ID-w.eventsFrom, e.Type, e.Key, prototext.MarshalOptions{}.Format(e.Payload))
		}
		after = logged[len(logged)-1].ID
	}
}

// randomIDs are what a store makes at random: modification tag epochs
// (newEpoch), which the lines show after "epoch:" (prototext) or
// "Epoch:" (Go's %+v), and operation ids (models.NewOperationID). Each
// pattern's first group is the id.
var randomIDs = []struct {
	pattern *regexp.Regexp
	name    string
}{
	{regexp.MustCompile(`(?i)epoch:\s*"?([A-Za-z0-9_-]{16})`), "epoch"},
	{regexp.MustCompile(`\b([0-9a-f]{24})\b`), "op"},
}

// normalized is the lines with each random id replaced by its kind and
// the order of its first appearance, so that two runs compare equal when
// they made the same use of ids that differ.
func (w *witness) normalized() []string {
	out := slices.Clone(w.lines)
	for _, r := range randomIDs {
		seen := map[string]string{}
		for i, line := range out {
			var b strings.Builder
			last := 0
			for _, m := range r.pattern.FindAllStringSubmatchIndex(line, -1) {
				id := line[m[2]:m[3]]
				if _, ok := seen[id]; !ok {
					seen[id] = fmt.Sprintf("%s-%d", r.name, len(seen)+1)
				}
				b.WriteString(line[last:m[2]])
				b.WriteString(seen[id])
				last = m[3]
			}
			b.WriteString(line[last:])
			out[i] = b.String()
		}
	}
	return out
}

// expectSameLines fails at the first line where two runs, named by
// aName and bName, showed different things.
func expectSameLines(aName string, a []string, bName string, b []string) {
	GinkgoHelper()
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			Fail(fmt.Sprintf("line %d of %d differs:\n  %s: %s\n  %s: %s", i+1, len(a), aName, a[i], bName, b[i]))
		}
	}
	Expect(len(b)).To(Equal(len(a)), "lines written down by %s and %s", aName, bName)
	Expect(len(a)).To(BeNumerically(">", 5), "the scenario showed something")
}

// writeCounts is how many writes of each kind a plan holds.
func writeCounts(w *convergence.ConvergenceWrites) string {
	v := reflect.ValueOf(w).Elem()
	var parts []string
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Slice && f.Len() > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", v.Type().Field(i).Name, f.Len()))
		}
	}
	return strings.Join(parts, ", ")
}
