package runner_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/tedsuo/ifrit"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/convergence/runner"
	"github.com/corkboard/corkboard/db"
	dialectpkg "github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
	"github.com/corkboard/corkboard/models"
)

// runnerLimit bounds how long a spec waits for the runner to act. It is a
// deadline against hanging, not a speed requirement.
const runnerLimit = 10 * time.Second

// The runner against a real store, on every dialect. Intervals are long
// (an hour) wherever a spec shows that something other than the periodic
// pass did the work: the pass on taking the lease, a trigger, a wake-up.
var _ = Describe("Runner", func() {
	for _, dialect := range testdb.MustDialects() {
		Describe("on "+dialect, func() {
			var (
				database *testdb.Database
				ctx      context.Context
			)

			BeforeEach(func() {
				ctx = context.Background()
				var err error
				database, err = testdb.Create(dialect)
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(database.Drop)
				conn, err := sqldb.Open(ctx, dialect, database.DSN)
				Expect(err).NotTo(HaveOccurred())
				Expect(migrations.Up(ctx, conn, dialect)).To(Succeed())
				Expect(conn.Close()).To(Succeed())
			})

			// open is a connection to the database, closed after the spec;
			// newStore is one board's store over a connection of its own.
			open := func() *sql.DB {
				conn, err := sqldb.Open(ctx, dialect, database.DSN)
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(conn.Close)
				return conn
			}
			newStore := func(opts ...sqldb.Option) *sqldb.SQLDB {
				return sqldb.New(open(), dialect, opts...)
			}

			if dialect != testdb.SQLite { // SQLite keeps no commit receipts
				It("deletes old commit receipts every ReceiptPruneInterval, between full passes an hour apart, and keeps fresh ones", func() {
					// The store's clock, which stamps and prunes receipts, and
					// the planner's, jumped a minute ahead below.
					var ahead atomic.Int64
					now := func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
					conn := open()
					store := sqldb.New(conn, dialect, sqldb.WithClock(now))
					registerCell(ctx, store, "cell-1")
					desire(ctx, store, "web", 2)
					r := startRunner(store, runner.RunnerConfig{Owner: "board-a", Interval: time.Hour, ReceiptPruneInterval: 50 * time.Millisecond, Now: now})
					Eventually(cellsOf(ctx, store, "web")).WithTimeout(runnerLimit).Should(Equal([]string{"cell-1", "cell-1"}))
					// Crashes keep their receipts in commit_receipts on both
					// databases (claims keep none, their repeat writing
					// nothing; MySQL's other writes keep theirs on their events).
					lrps, err := store.ActualLRPs(ctx, db.ActualLRPFilter{ProcessGuid: "web"})
					Expect(err).NotTo(HaveOccurred())
					for _, lrp := range lrps {
						key := models.ActualLRPKey{ProcessGuid: lrp.ProcessGuid, Index: lrp.Index, Presence: lrp.Presence}
						caller := models.Caller{InstanceGuid: fmt.Sprintf("instance-%d", lrp.Index), CellID: lrp.CellId}
						_, err := store.ClaimActualLRP(ctx, key, caller)
						Expect(err).NotTo(HaveOccurred())
						_, err = store.CrashActualLRP(ctx, key, caller, "OOM")
						Expect(err).NotTo(HaveOccurred())
					}
					var newest []byte
					Expect(conn.QueryRow("SELECT token FROM commit_receipts ORDER BY token DESC LIMIT 1").Scan(&newest)).To(Succeed(), "the crashes left receipts")
					madeByNow := func() int {
						var n int
						Expect(conn.QueryRow(dialectpkg.Rebind(dialectpkg.Name(dialect), "SELECT COUNT(*) FROM commit_receipts WHERE token <= ?"), newest).Scan(&n)).To(Succeed())
						return n
					}
					before := madeByNow()
					Expect(before).To(BeNumerically(">=", 2))
					Consistently(madeByNow).WithTimeout(500*time.Millisecond).Should(Equal(before), "receipts younger than 30 s are kept")

					ahead.Store(int64(time.Minute))
					Eventually(madeByNow).WithTimeout(runnerLimit).Should(BeZero(), "a minute on, the next prune deletes them")
					Expect(r.counter("corkboard_convergence_lrp_runs_total", "full")()).To(Equal(1.0), "only the pass on taking the lease")
				})
			}

			It("spaces triggered passes by TriggerSpacing: one after a quiet spell runs at once, later triggers wait and share a pass", func() {
				store := newStore()
				registerCell(ctx, store, "cell-1")
				r := startRunner(store, runner.RunnerConfig{Owner: "board-a", Interval: time.Hour, TriggerSpacing: 3 * time.Second})
				Eventually(r.counter("corkboard_convergence_lrp_runs_total", "full")).WithTimeout(runnerLimit).Should(Equal(1.0), "the pass on taking the lease")

				desire(ctx, store, "first", 1)
				r.runner.Trigger("first")
				Eventually(cellsOf(ctx, store, "first")).WithTimeout(runnerLimit).Should(Equal([]string{"cell-1"}), "no triggered pass ran before: at once")

				desire(ctx, store, "second", 1)
				desire(ctx, store, "third", 1)
				r.runner.Trigger("second")
				r.runner.Trigger("third")
				Consistently(cellsOf(ctx, store, "second"), time.Second, 100*time.Millisecond).Should(Equal([]string{""}),
					"within 3 s of the last triggered pass: waiting")
				Eventually(cellsOf(ctx, store, "second")).WithTimeout(runnerLimit).Should(Equal([]string{"cell-1"}))
				Eventually(cellsOf(ctx, store, "third")).WithTimeout(runnerLimit).Should(Equal([]string{"cell-1"}))
				Expect(r.counter("corkboard_convergence_lrp_runs_total", "targeted")()).To(Equal(2.0), "first, then second and third together")
				Expect(r.counter("corkboard_convergence_lrp_runs_total", "full")()).To(Equal(1.0))
			})

			It("publishes each autoscaled LRP's occupied, wanted and current instances", func() {
				store := newStore()
				registerCell(ctx, store, "cell-1")
				desire(ctx, store, "plain", 1)
				_, err := store.DesireLRP(ctx, &models.DesiredLRP{
					ProcessGuid: "rooms", Domain: "apps", Instances: 1,
					Definition: &models.LRPDefinition{DefinitionId: "v1", Action: &models.RunAction{Path: "/bin/rooms"}, MemoryMb: 64, DiskMb: 64},
					Autoscaling: &models.Autoscaling{Enabled: true, Min: 3, Max: 10, Policy: &models.AutoscalingPolicy{
						Type:       models.RoomOccupancyPolicy,
						Parameters: &models.AutoscalingPolicyParameters{RoomOccupancy: &models.RoomOccupancyParameters{ReadyTarget: 0.5}},
					}},
				})
				Expect(err).NotTo(HaveOccurred())

				r := startRunner(store, runner.RunnerConfig{Owner: "board-a", Interval: time.Hour})
				labelled := func(name string) func() map[string]float64 {
					return func() map[string]float64 {
						values := map[string]float64{}
						for _, m := range r.families()[name].GetMetric() {
							values[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
						}
						return values
					}
				}
				Eventually(labelled("corkboard_autoscaler_current_instances")).WithTimeout(runnerLimit).
					Should(Equal(map[string]float64{"rooms": 3}), "min 3 clamps the desired 1; plain is not autoscaled")
				Expect(labelled("corkboard_autoscaler_wanted_instances")()).To(Equal(map[string]float64{"rooms": 3}))
				Expect(labelled("corkboard_autoscaler_occupied_instances")()).To(Equal(map[string]float64{"rooms": 0}))
				Expect(labelled("corkboard_autoscaler_max_instances")()).To(Equal(map[string]float64{"rooms": 10}), "plain has no max")
				Eventually(cellsOf(ctx, store, "rooms")).WithTimeout(runnerLimit).Should(Equal([]string{"cell-1", "cell-1", "cell-1"}))
			})

			It("restarts a crashed instance on another cell, and reports a cell whose crashes spike", func() {
				store := newStore()
				registerCell(ctx, store, "cell-1")
				registerCell(ctx, store, "cell-2")
				desire(ctx, store, "web", 1)
				planner := convergence.DefaultConfig()
				planner.CrashMemory.SpikeMin, planner.CrashMemory.SpikeFactor = 1, 1

				r := startRunner(store, runner.RunnerConfig{Owner: "board-a", Interval: 200 * time.Millisecond, Planner: planner})
				Eventually(cellsOf(ctx, store, "web")).WithTimeout(runnerLimit).Should(Equal([]string{"cell-1"}), "the tie goes to the lower cell id")
				key := models.ActualLRPKey{ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_ORDINARY}
				caller := models.Caller{InstanceGuid: "ig-0", CellID: "cell-1"}
				_, err := store.ClaimActualLRP(ctx, key, caller)
				Expect(err).NotTo(HaveOccurred())
				_, err = store.CrashActualLRP(ctx, key, caller, "exit 1")
				Expect(err).NotTo(HaveOccurred())
				r.runner.Trigger("web")

				Eventually(cellsOf(ctx, store, "web")).WithTimeout(runnerLimit).Should(Equal([]string{"cell-2"}), "cell-1 is avoided: web crashed there")
				spikes := func() map[string]float64 {
					values := map[string]float64{}
					for _, m := range r.families()["corkboard_cell_crash_spike"].GetMetric() {
						values[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
					}
					return values
				}
				Eventually(spikes).WithTimeout(runnerLimit).Should(Equal(map[string]float64{"cell-1": 1}), "1 crash, median 0")
				Expect(r.logger.LogMessages()).To(ContainElement("test.convergence.pass.cell-crash-spike"))
			})

			It("publishes the rollouts the full pass leaves under way, failed and held", func() {
				store := newStore()
				registerCell(ctx, store, "cell-1")
				desire(ctx, store, "steady", 1)
				desire(ctx, store, "rolling", 2)
				_, err := store.UpdateDesiredLRP(ctx, "rolling", &models.DesiredLRPUpdate{Definition: &models.LRPDefinition{
					DefinitionId: "v2", Action: &models.RunAction{Path: "/bin/rolling"}, MemoryMb: 64, DiskMb: 64,
				}})
				Expect(err).NotTo(HaveOccurred())

				r := startRunner(store, runner.RunnerConfig{Owner: "board-a", Interval: time.Hour})
				Eventually(r.gauge("corkboard_rollouts_under_way")).WithTimeout(runnerLimit).Should(Equal(1.0), "no instance of rolling runs v2 yet")
				Expect(r.gauge("corkboard_rollouts_failed")()).To(Equal(0.0))
				Expect(r.gauge("corkboard_rollouts_held")()).To(Equal(0.0))
			})

			It("publishes the blocked rollouts by kind and reason, and those blocked too long", func() {
				store := newStore()
				registerCell(ctx, store, "cell-1")
				desire(ctx, store, "rolling", 1)
				_, err := store.UpdateDesiredLRP(ctx, "rolling", &models.DesiredLRPUpdate{Definition: &models.LRPDefinition{
					DefinitionId: "huge", Action: &models.RunAction{Path: "/bin/rolling"}, MemoryMb: 1 << 30, DiskMb: 64,
				}})
				Expect(err).NotTo(HaveOccurred())
				planner := convergence.DefaultConfig()
				planner.BlockedAlertAfter = time.Nanosecond

				r := startRunner(store, runner.RunnerConfig{Owner: "board-a", Interval: 200 * time.Millisecond, Planner: planner})
				blocked := func() map[string]float64 {
					values := map[string]float64{}
					for _, m := range r.families()["corkboard_blocked"].GetMetric() {
						if v := m.GetGauge().GetValue(); v != 0 {
							values[m.GetLabel()[0].GetValue()+"/"+m.GetLabel()[1].GetValue()] = v
						}
					}
					return values
				}
				Eventually(blocked).WithTimeout(runnerLimit).Should(Equal(map[string]float64{
					"rollout/" + models.BlockedNoCapacity: 1, "operation/" + models.BlockedNoCapacity: 1,
				}), "v2 fits no cell, and the update's operation waits on its rollout")
				Expect(r.families()["corkboard_blocked"].GetMetric()).To(HaveLen(3*len(models.BlockedReasons)), "every kind and reason has a series")
				Eventually(r.gauge("corkboard_rollouts_blocked_too_long")).WithTimeout(runnerLimit).Should(Equal(1.0), "blocked by one cause for longer than 1ns, once a later pass sees it")
				st, err := store.RolloutStatus(ctx, "rolling")
				Expect(err).NotTo(HaveOccurred())
				Expect(st.GetBlockedBy().GetDetail()).To(HavePrefix("index 0 fits no cell: zone "))
			})

			It("publishes a drain whose evacuation a spent disruption budget holds, as kind drain", func() {
				store := newStore()
				registerCell(ctx, store, "cell-1")
				desire(ctx, store, "web", 2)
				r := startRunner(store, runner.RunnerConfig{Owner: "board-a", Interval: 200 * time.Millisecond})
				Eventually(cellsOf(ctx, store, "web")).WithTimeout(runnerLimit).Should(Equal([]string{"cell-1", "cell-1"}))
				By("index 0 runs, index 1 never starts: web's budget of 0 is spent")
				key := models.ActualLRPKey{ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_ORDINARY}
				caller := models.Caller{InstanceGuid: "instance-0", CellID: "cell-1"}
				_, err := store.ClaimActualLRP(ctx, key, caller)
				Expect(err).NotTo(HaveOccurred())
				_, err = store.StartActualLRP(ctx, key, caller, &models.NetInfo{Address: "10.0.0.1"}, true)
				Expect(err).NotTo(HaveOccurred())
				Expect(store.DrainCell(ctx, "cell-1")).To(Succeed())
				drains := func() float64 {
					for _, m := range r.families()["corkboard_blocked"].GetMetric() {
						if m.GetLabel()[0].GetValue() == "drain" && m.GetLabel()[1].GetValue() == models.BlockedBudgetExhausted {
							return m.GetGauge().GetValue()
						}
					}
					return -1
				}
				Eventually(drains).WithTimeout(runnerLimit).Should(Equal(1.0), "web/0's hand-over waits for web/1")
			})

			It("converges as soon as it owns the lease, and on a trigger without waiting for the interval", func() {
				store := newStore()
				registerCell(ctx, store, "cell-1")
				desire(ctx, store, "early", 2)

				r := startRunner(store, runner.RunnerConfig{Owner: "board-a", Interval: time.Hour})
				Eventually(r.gauge("corkboard_convergence_lease_held")).WithTimeout(runnerLimit).Should(Equal(1.0))
				Eventually(cellsOf(ctx, store, "early")).WithTimeout(runnerLimit).Should(Equal([]string{"cell-1", "cell-1"}))
				Eventually(r.gauge("corkboard_lrps_desired")).WithTimeout(runnerLimit).Should(Equal(2.0))
				Expect(r.gauge("corkboard_lrps_unclaimed")()).To(Equal(2.0))
				Expect(r.gauge("corkboard_present_cells")()).To(Equal(1.0))

				desire(ctx, store, "late", 3)
				r.runner.Trigger("late")
				Eventually(cellsOf(ctx, store, "late")).WithTimeout(runnerLimit).Should(Equal([]string{"cell-1", "cell-1", "cell-1"}))
				// A pass counts itself once its writes are in, just after
				// they show.
				Eventually(r.counter("corkboard_convergence_lrp_runs_total", "targeted")).WithTimeout(runnerLimit).Should(BeNumerically(">=", 1))
				Expect(r.counter("corkboard_convergence_lrp_runs_total", "full")()).To(Equal(1.0), "only the pass on taking the lease")
				Eventually(r.counter("corkboard_convergence_writes_applied_total")).WithTimeout(runnerLimit).Should(Equal(5.0), "five placements")
				Expect(r.logger.LogMessages()).To(ContainElement("test.convergence.pass.done"))
			})

			It("follows a move pass after pass, without waiting for the full pass", func() {
				store := newStore()
				registerCell(ctx, store, "cell-1")
				desire(ctx, store, "web", 2)
				r := startRunner(store, runner.RunnerConfig{Owner: "board-a", Interval: time.Hour, RolloutInterval: 100 * time.Millisecond})
				Eventually(cellsOf(ctx, store, "web")).WithTimeout(runnerLimit).Should(Equal([]string{"cell-1", "cell-1"}))
				run := func(lrp *models.ActualLRP) {
					GinkgoHelper()
					key := models.ActualLRPKey{ProcessGuid: lrp.ProcessGuid, Index: lrp.Index, Presence: lrp.Presence}
					caller := models.Caller{InstanceGuid: fmt.Sprintf("instance-%d-%s", lrp.Index, lrp.CellId), CellID: lrp.CellId}
					_, err := store.ClaimActualLRP(ctx, key, caller)
					Expect(err).NotTo(HaveOccurred())
					_, err = store.StartActualLRP(ctx, key, caller, &models.NetInfo{Address: "10.0.0.1"}, true)
					Expect(err).NotTo(HaveOccurred())
				}
				lrps, err := store.ActualLRPs(ctx, db.ActualLRPFilter{ProcessGuid: "web"})
				Expect(err).NotTo(HaveOccurred())
				for _, lrp := range lrps {
					run(lrp)
				}

				By("a cell in another zone: web's two instances are two apart, one moves there")
				Expect(store.RegisterCell(ctx, &models.Cell{
					CellId: "cell-2", RepUrl: "http://cell-2:1800", Zone: "z2",
					Capacity: &models.CellCapacity{MemoryMb: 4096, DiskMb: 8192, Instances: 50},
				}, time.Hour)).To(Succeed())
				r.runner.Trigger("web")
				var successor *models.ActualLRP
				Eventually(func() *models.ActualLRP {
					lrps, err := store.ActualLRPs(ctx, db.ActualLRPFilter{ProcessGuid: "web", CellID: "cell-2"})
					Expect(err).NotTo(HaveOccurred())
					if len(lrps) == 0 {
						return nil
					}
					successor = lrps[0]
					return successor
				}).WithTimeout(runnerLimit).ShouldNot(BeNil())

				By("once the replacement runs, the next rollout tick tells the old instance to stop")
				run(successor)
				Eventually(func() bool {
					lrps, err := store.ActualLRPs(ctx, db.ActualLRPFilter{ProcessGuid: "web"})
					Expect(err).NotTo(HaveOccurred())
					for _, lrp := range lrps {
						if lrp.Presence == models.ActualLRP_RETIRING {
							return lrp.StopRequested
						}
					}
					return false
				}).WithTimeout(runnerLimit).Should(BeTrue())
				Expect(r.counter("corkboard_convergence_lrp_runs_total", "full")()).To(Equal(1.0), "only the pass on taking the lease")
			})

			It("runs a pass when a crash backoff ends", func() {
				store := newStore()
				registerCell(ctx, store, "cell-1")
				desire(ctx, store, "crashy", 1)
				planner := convergence.DefaultConfig()
				planner.CrashPolicy.ImmediateRestarts = 0
				planner.CrashPolicy.BaseDelay = 300 * time.Millisecond

				r := startRunner(store, runner.RunnerConfig{Owner: "board-a", Interval: time.Hour, Planner: planner})
				Eventually(cellsOf(ctx, store, "crashy")).WithTimeout(runnerLimit).Should(Equal([]string{"cell-1"}))
				key := models.ActualLRPKey{ProcessGuid: "crashy", Index: 0, Presence: models.ActualLRP_ORDINARY}
				caller := models.Caller{InstanceGuid: "instance-1", CellID: "cell-1"}
				_, err := store.ClaimActualLRP(ctx, key, caller)
				Expect(err).NotTo(HaveOccurred())
				_, err = store.CrashActualLRP(ctx, key, caller, "exit status 1")
				Expect(err).NotTo(HaveOccurred())
				r.runner.Trigger("crashy")

				// The targeted pass finds the backoff running and asks to
				// wake when it ends; the pass then restarts and places it.
				Eventually(func() models.ActualLRP_State { return onlyInstance(ctx, store, "crashy").GetState() }).
					WithTimeout(runnerLimit).Should(Equal(models.ActualLRP_UNCLAIMED))
				restarted := onlyInstance(ctx, store, "crashy")
				Expect(restarted.GetCrashCount()).To(Equal(int32(1)))
				Eventually(cellsOf(ctx, store, "crashy")).WithTimeout(runnerLimit).Should(Equal([]string{"cell-1"}))
				Eventually(r.counter("corkboard_convergence_lrp_runs_total", "full")).WithTimeout(runnerLimit).
					Should(BeNumerically(">=", 2), "the pass on taking the lease and the wake-up")
			})

			It("wakes when a crash backoff ends on its own clock, not the machine's", func() {
				// A board keeps its times on the database's (internal/dbclock),
				// here an hour ahead of this machine's clock: a wake-up timer
				// armed for the time until NextWake by the machine's clock
				// would fire an hour late.
				ahead := func() time.Time { return time.Now().Add(time.Hour) }
				store := newStore(sqldb.WithClock(ahead))
				registerCell(ctx, store, "cell-1")
				desire(ctx, store, "crashy", 1)
				planner := convergence.DefaultConfig()
				planner.CrashPolicy.ImmediateRestarts = 0
				planner.CrashPolicy.BaseDelay = 300 * time.Millisecond

				r := startRunner(store, runner.RunnerConfig{Owner: "board-a", Interval: time.Hour, Planner: planner, Now: ahead})
				Eventually(cellsOf(ctx, store, "crashy")).WithTimeout(runnerLimit).Should(Equal([]string{"cell-1"}))
				key := models.ActualLRPKey{ProcessGuid: "crashy", Index: 0, Presence: models.ActualLRP_ORDINARY}
				caller := models.Caller{InstanceGuid: "instance-1", CellID: "cell-1"}
				_, err := store.ClaimActualLRP(ctx, key, caller)
				Expect(err).NotTo(HaveOccurred())
				_, err = store.CrashActualLRP(ctx, key, caller, "exit status 1")
				Expect(err).NotTo(HaveOccurred())
				r.runner.Trigger("crashy")

				Eventually(func() models.ActualLRP_State { return onlyInstance(ctx, store, "crashy").GetState() }).
					WithTimeout(runnerLimit).Should(Equal(models.ActualLRP_UNCLAIMED), "restarted by the wake-up")
				Eventually(r.counter("corkboard_convergence_lrp_runs_total", "full")).WithTimeout(runnerLimit).
					Should(BeNumerically(">=", 2), "the pass on taking the lease and the wake-up")
			})

			It("lets one of two boards converge, and the other take over when the owner stops", func() {
				storeA, storeB := newStore(), newStore()
				registerCell(ctx, storeA, "cell-1")
				cfg := runner.RunnerConfig{Interval: 100 * time.Millisecond, LeaseTTL: 600 * time.Millisecond}
				cfg.Owner = "board-a"
				a := startRunner(storeA, cfg)
				Eventually(a.gauge("corkboard_convergence_lease_held")).WithTimeout(runnerLimit).Should(Equal(1.0))
				cfg.Owner = "board-b"
				b := startRunner(storeB, cfg)

				desire(ctx, storeA, "shared", 1)
				Eventually(cellsOf(ctx, storeA, "shared")).WithTimeout(runnerLimit).Should(Equal([]string{"cell-1"}))
				Consistently(b.gauge("corkboard_convergence_lease_held"), 2*cfg.LeaseTTL).Should(Equal(0.0))
				Expect(b.counter("corkboard_convergence_lrp_runs_total", "full")()).To(Equal(0.0))
				Expect(b.familyNames()()).NotTo(ContainElement("corkboard_lrps_desired"), "a board that does not converge publishes no counts")
				Expect(a.familyNames()()).To(ContainElement("corkboard_lrps_desired"))

				a.stop()
				Expect(a.logger.LogMessages()).To(ContainElement("test.convergence.lease.released"))
				Eventually(b.gauge("corkboard_convergence_lease_held")).WithTimeout(runnerLimit).Should(Equal(1.0))
				desire(ctx, storeB, "after-failover", 1)
				Eventually(cellsOf(ctx, storeB, "after-failover")).WithTimeout(runnerLimit).Should(Equal([]string{"cell-1"}))
			})

			It("gives up its operations' leases when it stops, and the next board takes them up at once", func() {
				storeA, storeB := newStore(), newStore()
				registerCell(ctx, storeA, "cell-1")
				desire(ctx, storeA, "rolling", 2)
				note := &db.OperationNote{}
				_, err := storeA.UpdateDesiredLRP(db.WithOperationNote(ctx, note), "rolling", &models.DesiredLRPUpdate{Definition: &models.LRPDefinition{
					DefinitionId: "v2", Action: &models.RunAction{Path: "/bin/rolling-v2"}, MemoryMb: 64, DiskMb: 64,
				}})
				Expect(err).NotTo(HaveOccurred())
				operation := func() *models.Operation {
					op, err := storeA.Operation(ctx, note.Operation.Id)
					Expect(err).NotTo(HaveOccurred())
					return op
				}
				leaseOwner := func() string { return operation().LeaseOwner }
				lastLine := func() string {
					history := operation().History
					return history[len(history)-1].GetMessage()
				}

				// An hour's lease: left to expire, it would hold the
				// operation for the rest of the spec.
				cfg := runner.RunnerConfig{Owner: "board-a", Interval: time.Hour, LeaseTTL: time.Hour}
				a := startRunner(storeA, cfg)
				Eventually(leaseOwner).WithTimeout(runnerLimit).Should(Equal("board-a"), "no instance runs v2: the rollout stays under way")
				a.stop()
				Expect(a.logger.LogMessages()).To(ContainElements("test.convergence.handed-over", "test.convergence.lease.released"))
				Expect(operation().Status).To(Equal(models.Operation_IN_PROGRESS))
				Expect(leaseOwner()).To(BeEmpty())
				Expect(operation().LeaseExpiresAt).To(BeZero())
				Expect(lastLine()).To(Equal("released by board board-a: it stopped"))

				cfg.Owner = "board-b"
				startRunner(storeB, cfg)
				Eventually(leaseOwner).WithTimeout(runnerLimit).Should(Equal("board-b"))
				Expect(lastLine()).To(Equal("taken up by board board-b"), "not adopted once a lease expired")
			})

			It("writes nothing once another board took the lease, even before it notices", func() {
				// board-a froze (a long pause, a partition) past its lease;
				// board-b took it, in a new tenure. board-a's timers have not
				// fired yet: it still believes it converges.
				store := newStore()
				registerCell(ctx, store, "cell-1")
				cfg := runner.RunnerConfig{Owner: "board-a", Interval: time.Hour, LeaseTTL: 30 * time.Second}
				a := startRunner(store, cfg)
				Eventually(a.gauge("corkboard_convergence_lease_held")).WithTimeout(runnerLimit).Should(Equal(1.0))
				desire(ctx, store, "before", 1)
				a.runner.Trigger("before")
				Eventually(cellsOf(ctx, store, "before")).WithTimeout(runnerLimit).Should(Equal([]string{"cell-1"}))

				_, err := open().ExecContext(ctx, dialectpkg.Rebind(dialectpkg.Name(dialect),
					"UPDATE leases SET owner = ?, tenure = tenure + 1, expires_at = ? WHERE name = ?"),
					"board-b", time.Now().Add(time.Hour).UnixNano(), runner.LeaseName)
				Expect(err).NotTo(HaveOccurred())
				Expect(a.gauge("corkboard_convergence_lease_held")()).To(Equal(1.0), "board-a has not noticed")

				desire(ctx, store, "after", 1)
				a.runner.Trigger("after")
				Eventually(func() string { return string(a.logger.Buffer().Contents()) }).WithTimeout(runnerLimit).
					Should(ContainSubstring("refused a write of a lease tenure that ended"), "the pass's write was refused")
				Consistently(cellsOf(ctx, store, "after"), time.Second).Should(Equal([]string{""}), "board-a placed nothing")
			})

			It("stops converging when it cannot renew the lease in time, and another board takes over", func() {
				flaky := &flakyLease{SQLDB: newStore()}
				registerCell(ctx, flaky, "cell-1")
				cfg := runner.RunnerConfig{Owner: "board-a", Interval: 100 * time.Millisecond, LeaseTTL: 600 * time.Millisecond}
				a := startRunner(flaky, cfg)
				Eventually(a.gauge("corkboard_convergence_lease_held")).WithTimeout(runnerLimit).Should(Equal(1.0))
				Eventually(a.familyNames()).WithTimeout(runnerLimit).Should(ContainElement("corkboard_lrps_desired"))

				flaky.failing.Store(true)
				Eventually(a.gauge("corkboard_convergence_lease_held")).WithTimeout(runnerLimit).Should(Equal(0.0))
				Expect(a.familyNames()()).NotTo(ContainElement("corkboard_lrps_desired"))
				Expect(a.logger.LogMessages()).To(ContainElement("test.convergence.lease.lost"))
				runs := a.counter("corkboard_convergence_lrp_runs_total", "full")()
				Consistently(a.counter("corkboard_convergence_lrp_runs_total", "full"), 3*cfg.Interval).Should(Equal(runs))

				cfg.Owner = "board-b"
				b := startRunner(newStore(), cfg)
				Eventually(b.gauge("corkboard_convergence_lease_held")).WithTimeout(runnerLimit).Should(Equal(1.0))
				flaky.failing.Store(false)
				Consistently(a.gauge("corkboard_convergence_lease_held"), 2*cfg.LeaseTTL).Should(Equal(0.0), "board-b holds it now")
				desire(ctx, flaky, "converged-by-b", 1)
				Eventually(cellsOf(ctx, flaky, "converged-by-b")).WithTimeout(runnerLimit).Should(Equal([]string{"cell-1"}))
				Expect(a.counter("corkboard_convergence_lrp_runs_total", "full")()).To(Equal(runs))
			})
		})
	}
})

var _ = DescribeTable("a triggered pass's wait (triggeredPassWait's worked example, spacing 50 ms)",
	func(lastEnded, now, want time.Duration) {
		at := func(d time.Duration) time.Time { return time.Unix(10, 0).Add(d) }
		var last time.Time
		if lastEnded >= 0 {
			last = at(lastEnded)
		}
		Expect(runner.TriggeredPassWait(last, at(now), 50*time.Millisecond)).To(Equal(want))
	},
	Entry("a trigger 10 ms after a pass ended waits 40 ms", time.Duration(0), 10*time.Millisecond, 40*time.Millisecond),
	Entry("one 45 ms after, 5 ms", time.Duration(0), 45*time.Millisecond, 5*time.Millisecond),
	Entry("one 50 ms after runs at once", time.Duration(0), 50*time.Millisecond, time.Duration(0)),
	Entry("one 130 ms after a pass that ended at 70 ms runs at once", 70*time.Millisecond, 200*time.Millisecond, time.Duration(0)),
	Entry("the first triggered pass runs at once", time.Duration(-1), time.Duration(0), time.Duration(0)),
)

var _ = Describe("Runner triggers", func() {
	var r *runner.Runner

	BeforeEach(func() {
		r = runner.NewRunner(lagertest.NewTestLogger("test"), nil, nil, runner.RunnerConfig{Owner: "board-a"})
	})

	It("coalesce: each LRP once, however often it was triggered", func() {
		for range 3 {
			r.Trigger("web")
			r.Trigger("worker")
		}
		guids, full := r.TakeTriggered()
		Expect(full).To(BeFalse())
		Expect(guids).To(ConsistOf("web", "worker"))
		guids, _ = r.TakeTriggered()
		Expect(guids).To(BeEmpty())
	})

	DescribeTable("become a full pass when more LRPs wait than a targeted pass names",
		func(lrps int, full bool) {
			for i := range lrps {
				r.Trigger(fmt.Sprintf("lrp-%d", i))
			}
			guids, gotFull := r.TakeTriggered()
			Expect(gotFull).To(Equal(full))
			if full {
				Expect(guids).To(BeEmpty())
			} else {
				Expect(guids).To(HaveLen(lrps))
			}
			guids, gotFull = r.TakeTriggered()
			Expect(gotFull).To(BeFalse(), "the full pass covers them all")
			Expect(guids).To(BeEmpty())
		},
		Entry("1,000 LRPs", 1000, false),
		Entry("1,001 LRPs", 1001, true),
	)
})

// runningRunner is a Runner invoked as an ifrit process, with its own
// registry and logger.
type runningRunner struct {
	runner   *runner.Runner
	process  ifrit.Process
	registry *prometheus.Registry
	logger   *lagertest.TestLogger
	stopped  bool
}

func startRunner(store runner.Store, cfg runner.RunnerConfig) *runningRunner {
	GinkgoHelper()
	r := &runningRunner{registry: prometheus.NewRegistry(), logger: lagertest.NewTestLogger("test")}
	r.runner = runner.NewRunner(r.logger, store, r.registry, cfg)
	r.process = ifrit.Invoke(r.runner)
	DeferCleanup(r.stop)
	return r
}

func (r *runningRunner) stop() {
	GinkgoHelper()
	if r.stopped {
		return
	}
	r.stopped = true
	r.process.Signal(os.Interrupt)
	Eventually(r.process.Wait()).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
}

func (r *runningRunner) families() map[string]*dto.MetricFamily {
	families, err := r.registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	return byName
}

// familyNames names every metric family the registry exposes.
func (r *runningRunner) familyNames() func() []string {
	return func() []string {
		var names []string
		for name := range r.families() {
			names = append(names, name)
		}
		return names
	}
}

// gauge reads an unlabelled gauge; -1 when it is not exposed.
func (r *runningRunner) gauge(name string) func() float64 {
	return func() float64 {
		f, ok := r.families()[name]
		if !ok || len(f.GetMetric()) == 0 {
			return -1
		}
		return f.GetMetric()[0].GetGauge().GetValue()
	}
}

// counter reads a counter, the one with the given "pass" label when one
// is given.
func (r *runningRunner) counter(name string, pass ...string) func() float64 {
	return func() float64 {
		f, ok := r.families()[name]
		if !ok {
			return -1
		}
		for _, m := range f.GetMetric() {
			if len(pass) == 0 {
				return m.GetCounter().GetValue()
			}
			for _, label := range m.GetLabel() {
				if label.GetName() == "pass" && label.GetValue() == pass[0] {
					return m.GetCounter().GetValue()
				}
			}
		}
		return -1
	}
}

// flakyLease is a real store whose lease renewals can be made to fail, as
// they would with the database out of reach.
type flakyLease struct {
	*sqldb.SQLDB
	failing atomic.Bool
}

func (f *flakyLease) AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (int64, error) {
	if f.failing.Load() {
		return 0, errors.New("database out of reach (injected by the test)")
	}
	return f.SQLDB.AcquireLease(ctx, name, owner, ttl)
}

type cellStore interface {
	db.DesiredLRPDB
	db.ActualLRPDB
	db.CellDB
}

func registerCell(ctx context.Context, store cellStore, id string) {
	GinkgoHelper()
	cell := &models.Cell{
		CellId: id, RepUrl: "http://" + id + ":1800", Zone: "z1",
		Capacity: &models.CellCapacity{MemoryMb: 4096, DiskMb: 8192, Instances: 50},
	}
	Expect(store.RegisterCell(ctx, cell, time.Hour)).To(Succeed())
}

func desire(ctx context.Context, store cellStore, guid string, instances int32) {
	GinkgoHelper()
	_, err := store.DesireLRP(ctx, &models.DesiredLRP{
		ProcessGuid: guid, Domain: "apps", Instances: instances,
		Definition: &models.LRPDefinition{
			DefinitionId: "v1",
			Action:       &models.RunAction{Path: "/bin/" + guid},
			MemoryMb:     64, DiskMb: 64,
		},
	})
	Expect(err).NotTo(HaveOccurred())
}

// cellsOf lists the cell of each instance of guid, in index order.
func cellsOf(ctx context.Context, store cellStore, guid string) func() []string {
	return func() []string {
		lrps, err := store.ActualLRPs(ctx, db.ActualLRPFilter{ProcessGuid: guid})
		Expect(err).NotTo(HaveOccurred())
		cells := make([]string, len(lrps))
		for _, lrp := range lrps {
			if int(lrp.GetIndex()) < len(cells) {
				cells[lrp.GetIndex()] = lrp.GetCellId()
			}
		}
		return cells
	}
}

func onlyInstance(ctx context.Context, store cellStore, guid string) *models.ActualLRP {
	GinkgoHelper()
	lrps, err := store.ActualLRPs(ctx, db.ActualLRPFilter{ProcessGuid: guid})
	Expect(err).NotTo(HaveOccurred())
	Expect(lrps).To(HaveLen(1))
	return lrps[0]
}
