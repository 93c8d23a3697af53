package dbclock_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/tedsuo/ifrit"

	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/internal/dbclock"
	"github.com/corkboard/corkboard/internal/testdb"
)

func TestDBClock(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Database clock suite")
}

// closeTo is how near a synced clock must come to the database's time.
// The database runs on this machine: a read takes well under a
// millisecond, and SQLite's clock has milliseconds; the rest is room for
// a loaded machine.
const closeTo = 50 * time.Millisecond

// shiftedMachine is this machine's clock moved by an amount the spec can
// change, as a machine whose clock is off (or is stepped) would be.
type shiftedMachine struct{ shift atomic.Int64 }

func (m *shiftedMachine) set(d time.Duration) { m.shift.Store(int64(d)) }
func (m *shiftedMachine) now() time.Time      { return time.Now().Add(time.Duration(m.shift.Load())) }

var _ = Describe("Clock", func() {
	for _, dialect := range testdb.MustDialects() {
		Describe("on "+dialect, func() {
			var (
				conn    *sql.DB
				machine *shiftedMachine
				read    func(context.Context) (time.Time, error)
			)

			BeforeEach(func() {
				database, err := testdb.Create(dialect)
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(database.Drop)
				conn, err = sqldb.Open(context.Background(), dialect, database.DSN)
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(conn.Close)
				machine = &shiftedMachine{}
				read = func(ctx context.Context) (time.Time, error) { return sqldb.DatabaseTime(ctx, conn, dialect) }
			})

			for _, shift := range []time.Duration{90 * time.Second, -90 * time.Second} {
				It("puts a machine clock "+shift.String()+" off on the database's time", func() {
					machine.set(shift)
					registry := prometheus.NewRegistry()
					clock := dbclock.New(lagertest.NewTestLogger("clock"), registry, dbclock.Config{Machine: machine.now, Read: read})
					Expect(clock.Now()).To(BeTemporally("~", time.Now().Add(shift), closeTo), "the machine's clock until the first sync")

					Expect(clock.Sync(context.Background())).To(Succeed())
					offset, synced := clock.Offset()
					Expect(synced).To(BeTrue())
					Expect(offset).To(BeNumerically("~", -shift, closeTo))
					Expect(clock.Now()).To(BeTemporally("~", time.Now(), closeTo), "the database's time, which is this machine's")
					Expect(gauge(registry, "corkboard_database_clock_offset_seconds")).To(BeNumerically("~", -shift.Seconds(), closeTo.Seconds()))
				})
			}

			It("keeps the offset of its quickest read", func() {
				// The first read waits 400 ms before the database reads its
				// clock: taken as read half way, it would put the clock
				// 200 ms behind.
				var calls atomic.Int32
				slowFirst := func(ctx context.Context) (time.Time, error) {
					if calls.Add(1) == 1 {
						time.Sleep(400 * time.Millisecond)
					}
					return read(ctx)
				}
				clock := dbclock.New(lagertest.NewTestLogger("clock"), nil, dbclock.Config{Read: slowFirst, Samples: 3})
				Expect(clock.Sync(context.Background())).To(Succeed())
				Expect(calls.Load()).To(BeEquivalentTo(3))
				Expect(clock.Now()).To(BeTemporally("~", time.Now(), closeTo))
			})

			It("refuses reads slower than MaxRoundTrip and keeps the offset it had", func() {
				machine.set(90 * time.Second)
				var slow atomic.Bool
				// A slow read answers 200 ms after the database read its
				// clock, past its context's deadline.
				maybeSlow := func(ctx context.Context) (time.Time, error) {
					t, err := read(ctx)
					if slow.Load() {
						time.Sleep(200 * time.Millisecond)
					}
					return t, err
				}
				clock := dbclock.New(lagertest.NewTestLogger("clock"), nil, dbclock.Config{Machine: machine.now, Read: maybeSlow, MaxRoundTrip: 100 * time.Millisecond})
				Expect(clock.Sync(context.Background())).To(Succeed())
				before, _ := clock.Offset()

				slow.Store(true)
				machine.set(0)
				err := clock.Sync(context.Background())
				Expect(err).To(MatchError(ContainSubstring("more than 100ms")))
				after, synced := clock.Offset()
				Expect(synced).To(BeTrue())
				Expect(after).To(Equal(before))
			})

			It("keeps the offset it had while the database cannot be read", func() {
				machine.set(-90 * time.Second)
				clock := dbclock.New(lagertest.NewTestLogger("clock"), nil, dbclock.Config{Machine: machine.now, Read: read})
				Expect(clock.Sync(context.Background())).To(Succeed())
				before, _ := clock.Offset()

				Expect(conn.Close()).To(Succeed())
				Expect(clock.Sync(context.Background())).To(MatchError(ContainSubstring("read the database's clock")))
				after, _ := clock.Offset()
				Expect(after).To(Equal(before))
				Expect(clock.Now()).To(BeTemporally("~", time.Now(), closeTo))
			})

			It("is ready once a sync succeeded, and follows a step of the machine's clock", func() {
				// The first two reads fail, as while the database restarts.
				var failures atomic.Int32
				failures.Store(2)
				failingFirst := func(ctx context.Context) (time.Time, error) {
					if failures.Add(-1) >= 0 {
						return time.Time{}, errors.New("connection refused")
					}
					return read(ctx)
				}
				machine.set(90 * time.Second)
				logger := lagertest.NewTestLogger("clock")
				clock := dbclock.New(logger, nil, dbclock.Config{Machine: machine.now, Read: failingFirst, Samples: 1, Interval: 50 * time.Millisecond})
				process := ifrit.Background(clock)
				DeferCleanup(stop, process)
				Consistently(process.Ready()).WithTimeout(500*time.Millisecond).ShouldNot(BeClosed(), "not ready while every read fails")
				Eventually(process.Ready()).WithTimeout(5 * time.Second).Should(BeClosed())
				Expect(clock.Now()).To(BeTemporally("~", time.Now(), closeTo))

				By("the machine's clock steps back by two minutes")
				machine.set(-30 * time.Second)
				Eventually(func() time.Duration { offset, _ := clock.Offset(); return offset }).WithTimeout(5 * time.Second).
					Should(BeNumerically("~", 30*time.Second, closeTo))
				Expect(clock.Now()).To(BeTemporally("~", time.Now(), closeTo))
				Expect(logger.LogMessages()).To(ContainElements("clock.database-clock.sync-failed", "clock.database-clock.synced"))
			})
		})
	}

	It("is the machine's clock when the database's is the machine's (no Read)", func() {
		machine := &shiftedMachine{}
		machine.set(time.Hour)
		clock := dbclock.New(lagertest.NewTestLogger("clock"), nil, dbclock.Config{Machine: machine.now})
		process := ifrit.Background(clock)
		DeferCleanup(stop, process)
		Eventually(process.Ready()).Should(BeClosed())
		Expect(clock.Now()).To(BeTemporally("~", time.Now().Add(time.Hour), closeTo))
	})
})

func stop(process ifrit.Process) {
	process.Signal(os.Interrupt)
	Eventually(process.Wait()).WithTimeout(5 * time.Second).Should(Receive(BeNil()))
}

// gauge is the value of the registry's gauge name.
func gauge(registry *prometheus.Registry, name string) float64 {
	GinkgoHelper()
	families, err := registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, family := range families {
		if family.GetName() == name {
			return family.GetMetric()[0].GetGauge().GetValue()
		}
	}
	Fail("no gauge " + name)
	return 0
}
