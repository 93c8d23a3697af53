package sqldb_test

import (
	"fmt"
	"sync"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("ActualLRPLifecycleDB", func(b *board) {
	var sink *recordingSink

	key := func(index int32) models.ActualLRPKey {
		return models.ActualLRPKey{ProcessGuid: "web", Index: index, Presence: models.ActualLRP_ORDINARY}
	}
	rep := models.Caller{InstanceGuid: "ig-1", CellID: "cell-1"}
	netInfo := &models.NetInfo{
		Address: "10.0.0.1", InstanceAddress: "172.16.0.5",
		Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61001}},
	}

	instance := func(index int32) *models.ActualLRP {
		GinkgoHelper()
		return b.instances("web")[index]
	}
	// place assigns an instance to a cell, as placement does.
	place := func(index int32, cellID string) {
		GinkgoHelper()
		Expect(b.exec(`UPDATE actual_lrps SET cell_id = ? WHERE process_guid = 'web' AND instance_index = ?`,
			cellID, index)).To(BeEquivalentTo(1))
	}
	// expectRefused checks that a refused call wrote nothing and said so,
	// and returns its error.
	expectRefused := func(errType models.Error_Type, call func() error) error {
		GinkgoHelper()
		before := b.instances("web")
		sink.take()
		err := call()
		Expect(err).To(HaveErrorType(errType))
		after := b.instances("web")
		Expect(after).To(HaveLen(len(before)))
		for i := range before {
			Expect(after[i]).To(EqualProto(before[i]))
		}
		Expect(sink.take()).To(BeEmpty(), "a refused call announces nothing")
		return err
	}
	claim := func(index int32, caller models.Caller) (*models.ActualLRP, error) {
		return b.store.ClaimActualLRP(b.ctx, key(index), caller)
	}
	start := func(index int32, caller models.Caller) (*models.ActualLRP, error) {
		return b.store.StartActualLRP(b.ctx, key(index), caller, netInfo, true)
	}
	mustRun := func(index int32, caller models.Caller) *models.ActualLRP {
		GinkgoHelper()
		_, err := claim(index, caller)
		Expect(err).NotTo(HaveOccurred())
		running, err := start(index, caller)
		Expect(err).NotTo(HaveOccurred())
		return running
	}
	// expectChanged checks the one event a write announced.
	expectChanged := func(before, after *models.ActualLRP) {
		GinkgoHelper()
		events := sink.take()
		Expect(events).To(HaveLen(1))
		expectEvent(events[0], "actual_lrp_changed", "web", &models.ActualLRPChangedEvent{Before: before, After: after})
	}

	BeforeEach(func() {
		sink = recordEvents(b)
		_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 3))
		Expect(err).NotTo(HaveOccurred())
		place(0, "cell-1")
		place(1, "cell-2")
		b.clock.Advance(1000)
		sink.take()
	})

	Describe("claim", func() {
		It("moves an UNCLAIMED instance placed on the caller's cell to CLAIMED, owned by the caller", func() {
			before := instance(0)
			claimed, err := claim(0, rep)
			Expect(err).NotTo(HaveOccurred())

			Expect(claimed.State).To(Equal(models.ActualLRP_CLAIMED))
			Expect(claimed.InstanceGuid).To(Equal("ig-1"))
			Expect(claimed.CellId).To(Equal("cell-1"))
			Expect(claimed.Since).To(Equal(b.clock.Now().UnixNano()))
			Expect(claimed.DefinitionId).To(Equal("v1"))
			Expect(claimed.ModificationTag.Epoch).To(Equal(before.ModificationTag.Epoch))
			Expect(claimed.ModificationTag.Index).To(Equal(before.ModificationTag.Index + 1))
			Expect(instance(0)).To(EqualProto(claimed), "it returns the row as stored")
			expectChanged(before, claimed)
		})

		It("clears a placement error left from an earlier cell", func() {
			b.exec(`UPDATE actual_lrps SET placement_error = 'no room' WHERE process_guid = 'web' AND instance_index = 0`)
			claimed, err := claim(0, rep)
			Expect(err).NotTo(HaveOccurred())
			Expect(claimed.PlacementError).To(BeEmpty())
		})

		It("is a no-op for the instance that claimed it, or runs it already", func() {
			claimed, err := claim(0, rep)
			Expect(err).NotTo(HaveOccurred())
			sink.take()
			b.clock.Advance(1000)

			again, err := claim(0, rep)
			Expect(err).NotTo(HaveOccurred())
			Expect(again).To(EqualProto(claimed))
			Expect(instance(0)).To(EqualProto(claimed))

			running, err := start(0, rep)
			Expect(err).NotTo(HaveOccurred())
			sink.take()
			again, err = claim(0, rep)
			Expect(err).NotTo(HaveOccurred())
			Expect(again).To(EqualProto(running), "a repeated claim does not demote a running instance")
			Expect(sink.take()).To(BeEmpty())
		})

		It("refuses an instance placed on another cell, naming both cells", func() {
			err := expectRefused(models.Error_InvalidStateTransition, func() error {
				_, err := claim(1, rep)
				return err
			})
			Expect(err.Error()).To(ContainSubstring(`"cell-1"`))
			Expect(err.Error()).To(ContainSubstring(`"cell-2"`))
			Expect(err.Error()).To(ContainSubstring("web/1"))
		})

		It("refuses an instance placed on no cell", func() {
			err := expectRefused(models.Error_InvalidStateTransition, func() error {
				_, err := claim(2, rep)
				return err
			})
			Expect(err.Error()).To(ContainSubstring("not placed on any cell"))
		})

		It("refuses an instance another instance claimed, on this cell or another", func() {
			mustRun(0, rep)
			expectRefused(models.Error_InvalidStateTransition, func() error {
				_, err := claim(0, models.Caller{InstanceGuid: "ig-2", CellID: "cell-1"})
				return err
			})
			expectRefused(models.Error_InvalidStateTransition, func() error {
				_, err := claim(0, models.Caller{InstanceGuid: "ig-1", CellID: "cell-2"})
				return err
			})
		})

		It("refuses a CRASHED instance: it restarts by being placed anew", func() {
			mustRun(0, rep)
			_, err := b.store.CrashActualLRP(b.ctx, key(0), rep, "exit 1")
			Expect(err).NotTo(HaveOccurred())
			place(0, "cell-1")
			b.exec(`UPDATE actual_lrps SET instance_guid = 'ig-1' WHERE process_guid = 'web' AND instance_index = 0`)
			expectRefused(models.Error_InvalidStateTransition, func() error {
				_, err := claim(0, rep)
				return err
			})
		})

		It("is ResourceNotFound for a missing instance", func() {
			err := expectRefused(models.Error_ResourceNotFound, func() error {
				_, err := claim(7, rep)
				return err
			})
			Expect(err.Error()).To(ContainSubstring("web/7"))
		})

		It("needs the instance and its cell", func() {
			expectRefused(models.Error_InvalidRequest, func() error {
				_, err := claim(0, models.Caller{CellID: "cell-1"})
				return err
			})
			expectRefused(models.Error_InvalidRequest, func() error {
				_, err := claim(0, models.Caller{InstanceGuid: "ig-1"})
				return err
			})
			expectRefused(models.Error_InvalidRequest, func() error {
				_, err := b.store.ClaimActualLRP(b.ctx, models.ActualLRPKey{ProcessGuid: "web"}, rep)
				return err
			})
		})

		It("lets exactly one of many racing instances claim an instance", func() {
			const racers = 8
			var wins atomic.Int32
			var wg sync.WaitGroup
			for i := range racers {
				wg.Add(1)
				go func() {
					defer GinkgoRecover()
					defer wg.Done()
					_, err := claim(0, models.Caller{InstanceGuid: fmt.Sprintf("racer-%d", i), CellID: "cell-1"})
					if err == nil {
						wins.Add(1)
						return
					}
					Expect(err).To(HaveErrorType(models.Error_InvalidStateTransition))
				}()
			}
			wg.Wait()
			Expect(wins.Load()).To(BeEquivalentTo(1))
			Expect(instance(0).ModificationTag.Index).To(BeEquivalentTo(1))
			Expect(sink.take()).To(HaveLen(1))
		})

		It("waits for an instance another transaction holds, then claims it", func() {
			tx, err := b.conn.Begin()
			Expect(err).NotTo(HaveOccurred())
			lockRow := "SELECT state FROM actual_lrps WHERE process_guid = 'web' AND instance_index = 0"
			if b.dialect != sqldb.SQLite {
				lockRow += " FOR UPDATE"
			}
			var state string
			Expect(tx.QueryRow(lockRow).Scan(&state)).To(Succeed())

			done := make(chan error, 1)
			go func() {
				_, err := claim(0, rep)
				done <- err
			}()
			Expect(tx.Commit()).To(Succeed())
			Eventually(done).Should(Receive(BeNil()))
			Expect(instance(0).State).To(Equal(models.ActualLRP_CLAIMED))
		})
	})

	Describe("start", func() {
		It("moves the caller's CLAIMED instance to RUNNING with its net info", func() {
			claimed, err := claim(0, rep)
			Expect(err).NotTo(HaveOccurred())
			sink.take()
			b.clock.Advance(1000)

			running, err := start(0, rep)
			Expect(err).NotTo(HaveOccurred())
			Expect(running.State).To(Equal(models.ActualLRP_RUNNING))
			Expect(running.NetInfo).To(EqualProto(netInfo))
			Expect(running.Routable).To(BeTrue())
			Expect(running.Since).To(Equal(b.clock.Now().UnixNano()))
			Expect(running.ModificationTag.Index).To(Equal(claimed.ModificationTag.Index + 1))
			Expect(instance(0)).To(EqualProto(running))
			expectChanged(claimed, running)
		})

		It("starts an UNCLAIMED instance placed on the caller's cell straight away", func() {
			before := instance(0)
			running, err := b.store.StartActualLRP(b.ctx, key(0), rep, netInfo, false)
			Expect(err).NotTo(HaveOccurred())
			Expect(running.State).To(Equal(models.ActualLRP_RUNNING))
			Expect(running.InstanceGuid).To(Equal("ig-1"))
			Expect(running.Routable).To(BeFalse())
			expectChanged(before, running)
		})

		It("is a no-op when repeated, and updates net info and routability when they change", func() {
			running := mustRun(0, rep)
			sink.take()
			b.clock.Advance(1000)

			again, err := start(0, rep)
			Expect(err).NotTo(HaveOccurred())
			Expect(again).To(EqualProto(running))
			Expect(sink.take()).To(BeEmpty())

			moved := &models.NetInfo{Address: "10.0.0.2", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61002}}}
			updated, err := b.store.StartActualLRP(b.ctx, key(0), rep, moved, true)
			Expect(err).NotTo(HaveOccurred())
			Expect(updated.NetInfo).To(EqualProto(moved))
			Expect(updated.Since).To(Equal(running.Since), "since is the last state change")
			Expect(updated.ModificationTag.Index).To(Equal(running.ModificationTag.Index + 1))
			expectChanged(running, updated)

			hidden, err := b.store.StartActualLRP(b.ctx, key(0), rep, moved, false)
			Expect(err).NotTo(HaveOccurred())
			Expect(hidden.Routable).To(BeFalse())
			expectChanged(updated, hidden)
		})

		It("refuses another instance's instance, one placed elsewhere, and a CRASHED one", func() {
			mustRun(0, rep)
			expectRefused(models.Error_InvalidStateTransition, func() error {
				_, err := start(0, models.Caller{InstanceGuid: "ig-2", CellID: "cell-1"})
				return err
			})
			expectRefused(models.Error_InvalidStateTransition, func() error {
				_, err := start(1, rep)
				return err
			})
			_, err := b.store.CrashActualLRP(b.ctx, key(0), rep, "oom")
			Expect(err).NotTo(HaveOccurred())
			expectRefused(models.Error_InvalidStateTransition, func() error {
				_, err := start(0, rep)
				return err
			})
		})
	})

	Describe("crash", func() {
		It("moves the caller's instance to CRASHED, counts the crash and frees its cell", func() {
			running := mustRun(0, rep)
			sink.take()
			b.clock.Advance(1000)

			crashed, err := b.store.CrashActualLRP(b.ctx, key(0), rep, "exit status 2")
			Expect(err).NotTo(HaveOccurred())
			Expect(crashed.State).To(Equal(models.ActualLRP_CRASHED))
			Expect(crashed.CrashCount).To(BeEquivalentTo(1))
			Expect(crashed.CrashReason).To(Equal("exit status 2"))
			Expect(crashed.Since).To(Equal(b.clock.Now().UnixNano()))
			Expect(crashed.CellId).To(BeEmpty())
			Expect(crashed.InstanceGuid).To(BeEmpty())
			Expect(crashed.NetInfo).To(BeNil())
			Expect(crashed.Routable).To(BeFalse())
			Expect(crashed.DefinitionId).To(Equal("v1"))
			Expect(crashed.ModificationTag.Index).To(Equal(running.ModificationTag.Index + 1))
			Expect(instance(0)).To(EqualProto(crashed))

			events := sink.take()
			Expect(eventTypes(events)).To(Equal([]string{"actual_lrp_crashed", "actual_lrp_changed"}))
			expectEvent(events[0], "actual_lrp_crashed", "web", &models.ActualLRPCrashedEvent{
				ActualLrp: crashed, CrashCount: 1, CrashReason: "exit status 2",
			})
			expectEvent(events[1], "actual_lrp_changed", "web", &models.ActualLRPChangedEvent{Before: running, After: crashed})
		})

		It("crashes a CLAIMED instance too", func() {
			_, err := claim(0, rep)
			Expect(err).NotTo(HaveOccurred())
			crashed, err := b.store.CrashActualLRP(b.ctx, key(0), rep, "image pull failed")
			Expect(err).NotTo(HaveOccurred())
			Expect(crashed.State).To(Equal(models.ActualLRP_CRASHED))
		})

		It("counts every crash across restarts", func() {
			for crash := int32(1); crash <= 3; crash++ {
				caller := models.Caller{InstanceGuid: fmt.Sprintf("ig-%d", crash), CellID: "cell-1"}
				mustRun(0, caller)
				crashed, err := b.store.CrashActualLRP(b.ctx, key(0), caller, fmt.Sprintf("crash %d", crash))
				Expect(err).NotTo(HaveOccurred())
				Expect(crashed.CrashCount).To(Equal(crash))
				Expect(crashed.CrashReason).To(Equal(fmt.Sprintf("crash %d", crash)))
				// The crash policy restarts it: UNCLAIMED, placed anew.
				b.exec(`UPDATE actual_lrps SET state = 'UNCLAIMED', cell_id = 'cell-1',
 modification_tag_index = modification_tag_index + 1 WHERE process_guid = 'web' AND instance_index = 0`)
			}
		})

		It("refuses an UNCLAIMED instance, a crashed one again, and another instance's", func() {
			expectRefused(models.Error_InvalidStateTransition, func() error {
				_, err := b.store.CrashActualLRP(b.ctx, key(0), rep, "boom")
				return err
			})
			mustRun(0, rep)
			expectRefused(models.Error_InvalidStateTransition, func() error {
				_, err := b.store.CrashActualLRP(b.ctx, key(0), models.Caller{InstanceGuid: "ig-2", CellID: "cell-1"}, "boom")
				return err
			})
			_, err := b.store.CrashActualLRP(b.ctx, key(0), rep, "boom")
			Expect(err).NotTo(HaveOccurred())
			expectRefused(models.Error_InvalidStateTransition, func() error {
				_, err := b.store.CrashActualLRP(b.ctx, key(0), rep, "boom")
				return err
			})
			Expect(instance(0).CrashCount).To(BeEquivalentTo(1))
		})
	})

	Describe("fail", func() {
		It("takes an UNCLAIMED instance off the cell that cannot run it, with the reason", func() {
			before := instance(0)
			b.clock.Advance(1000)
			failed, err := b.store.FailActualLRP(b.ctx, key(0), "cell-1", "not enough disk")
			Expect(err).NotTo(HaveOccurred())
			Expect(failed.State).To(Equal(models.ActualLRP_UNCLAIMED))
			Expect(failed.CellId).To(BeEmpty())
			Expect(failed.PlacementError).To(Equal("not enough disk"))
			Expect(failed.Since).To(Equal(b.clock.Now().UnixNano()))
			Expect(failed.ModificationTag.Index).To(Equal(before.ModificationTag.Index + 1))
			Expect(instance(0)).To(EqualProto(failed))
			expectChanged(before, failed)
		})

		It("refuses an instance placed elsewhere or nowhere, naming the cells", func() {
			err := expectRefused(models.Error_InvalidStateTransition, func() error {
				_, err := b.store.FailActualLRP(b.ctx, key(1), "cell-1", "no")
				return err
			})
			Expect(err.Error()).To(And(ContainSubstring(`"cell-1"`), ContainSubstring(`"cell-2"`)))
			expectRefused(models.Error_InvalidStateTransition, func() error {
				_, err := b.store.FailActualLRP(b.ctx, key(2), "cell-1", "no")
				return err
			})
		})

		It("refuses a claimed instance: that one crashes", func() {
			_, err := claim(0, rep)
			Expect(err).NotTo(HaveOccurred())
			expectRefused(models.Error_InvalidStateTransition, func() error {
				_, err := b.store.FailActualLRP(b.ctx, key(0), "cell-1", "no")
				return err
			})
		})

		It("needs the cell", func() {
			expectRefused(models.Error_InvalidRequest, func() error {
				_, err := b.store.FailActualLRP(b.ctx, key(0), "", "no")
				return err
			})
		})
	})

	Describe("remove", func() {
		It("deletes the caller's instance and announces it", func() {
			running := mustRun(0, rep)
			sink.take()
			Expect(b.store.RemoveActualLRP(b.ctx, key(0), rep)).To(Succeed())
			Expect(b.instances("web")).To(HaveLen(2))
			events := sink.take()
			Expect(events).To(HaveLen(1))
			expectEvent(events[0], "actual_lrp_removed", "web", &models.ActualLRPRemovedEvent{ActualLrp: running})
		})

		It("deletes the row of the presence named, leaving the others", func() {
			mustRun(0, rep)
			b.putActual(&models.ActualLRP{
				ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_SUSPECT, Domain: "apps",
				InstanceGuid: "ig-old", CellId: "cell-9", DefinitionId: "v1", State: models.ActualLRP_RUNNING,
				ModificationTag: &models.ModificationTag{Epoch: "e"},
			})
			suspect := models.ActualLRPKey{ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_SUSPECT}
			Expect(b.store.RemoveActualLRP(b.ctx, suspect, models.Caller{InstanceGuid: "ig-old", CellID: "cell-9"})).To(Succeed())
			left := b.instances("web")
			Expect(left).To(HaveLen(3))
			Expect(left[0].Presence).To(Equal(models.ActualLRP_ORDINARY))
			Expect(left[0].State).To(Equal(models.ActualLRP_RUNNING))
		})

		It("refuses another instance's row, an unowned one, and a missing one", func() {
			mustRun(0, rep)
			err := expectRefused(models.Error_InvalidStateTransition, func() error {
				return b.store.RemoveActualLRP(b.ctx, key(0), models.Caller{InstanceGuid: "ig-2", CellID: "cell-1"})
			})
			Expect(err.Error()).To(ContainSubstring(`"ig-1"`))
			expectRefused(models.Error_InvalidStateTransition, func() error {
				return b.store.RemoveActualLRP(b.ctx, key(1), models.Caller{InstanceGuid: "ig-2", CellID: "cell-2"})
			})
			expectRefused(models.Error_ResourceNotFound, func() error {
				return b.store.RemoveActualLRP(b.ctx, key(9), rep)
			})
		})
	})

	It("announces each instance's changes in the order they committed", func() {
		_, err := b.store.DesireLRP(b.ctx, newLRP("many", "apps", 16))
		Expect(err).NotTo(HaveOccurred())
		b.exec(`UPDATE actual_lrps SET cell_id = 'cell-1' WHERE process_guid = 'many'`)
		sink.take()

		var wg sync.WaitGroup
		for i := range int32(16) {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				k := models.ActualLRPKey{ProcessGuid: "many", Index: i, Presence: models.ActualLRP_ORDINARY}
				caller := models.Caller{InstanceGuid: fmt.Sprintf("ig-%d", i), CellID: "cell-1"}
				_, err := b.store.ClaimActualLRP(b.ctx, k, caller)
				Expect(err).NotTo(HaveOccurred())
				_, err = b.store.StartActualLRP(b.ctx, k, caller, netInfo, true)
				Expect(err).NotTo(HaveOccurred())
				_, err = b.store.CrashActualLRP(b.ctx, k, caller, "boom")
				Expect(err).NotTo(HaveOccurred())
			}()
		}
		wg.Wait()

		seen := map[int32]uint32{}
		for _, e := range sink.take() {
			if e.Type != "actual_lrp_changed" {
				continue
			}
			after := e.Payload.(*models.ActualLRPChangedEvent).After
			Expect(after.ModificationTag.Index).To(Equal(seen[after.Index]+1), "instance %d", after.Index)
			seen[after.Index] = after.ModificationTag.Index
		}
		Expect(seen).To(HaveLen(16))
		for index, last := range seen {
			Expect(last).To(BeEquivalentTo(3), "instance %d: claim, start, crash", index)
		}
	})
})
