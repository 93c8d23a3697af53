package testdb

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// In package testdb: the specs check that Close leaves no process on the
// nodes' data directories, which only unexported fields name.
var _ = Describe("Patroni pair", Ordered, func() {
	var (
		p     *Patroni
		front *sql.DB
		// killed is the node KillWriter took down, for the rejoin spec.
		killed string
	)

	BeforeAll(func() {
		began := time.Now()
		var err error
		p, err = StartPatroni()
		// As Dialects does: a machine without the packages runs a smaller
		// suite unless CORKBOARD_REQUIRE_DBS=1 asks for every database.
		if errors.Is(err, ErrNoPatroniBinaries) && os.Getenv(RequireEnv) != "1" {
			Skip("skipping: " + err.Error() + " (set " + RequireEnv + "=1 to make this a failure)")
		}
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("pair up in %v, in %s\n", time.Since(began).Round(time.Millisecond), p.dir)
		DeferCleanup(func() {
			dataDirs := []string{}
			for _, n := range p.nodes {
				dataDirs = append(dataDirs, n.dataDir)
			}
			procs := []*child{p.etcdProc, p.haproxyProc}
			for _, n := range p.nodes {
				procs = append(procs, n.proc)
			}
			Expect(p.Close()).To(Succeed())
			Expect(p.dir).NotTo(BeADirectory())
			for _, c := range procs {
				if c != nil {
					Expect(c.running()).To(BeFalse(), "%s %d still running after Close", c.name, c.proc.Pid)
				}
			}
			// No postgres left on either data directory.
			Expect(postgresOn(dataDirs)).To(BeEmpty())
		})
		front, err = sql.Open(Postgres, p.AdminDSN())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(front.Close)
	})

	It("has one primary and one synchronous standby behind the front", func() {
		writer, err := p.Writer()
		Expect(err).NotTo(HaveOccurred())
		standby := otherNode(p, writer)

		// The front reaches the primary: not in recovery, on the writer's port.
		var inRecovery bool
		var port int
		Expect(front.QueryRow("SELECT pg_is_in_recovery(), current_setting('port')::int").Scan(&inRecovery, &port)).To(Succeed())
		Expect(inRecovery).To(BeFalse())
		n, _ := p.node(writer)
		Expect(port).To(Equal(n.pgPort))

		var name, state string
		Expect(front.QueryRow("SELECT application_name, sync_state FROM pg_stat_replication").Scan(&name, &state)).To(Succeed())
		Expect(name).To(Equal(standby))
		Expect(state).To(Equal("sync"))

		// The standby's own connection refuses a write.
		dsn, err := p.NodeDSN(standby)
		Expect(err).NotTo(HaveOccurred())
		direct := openDB(dsn)
		Expect(direct.QueryRow("SELECT pg_is_in_recovery()").Scan(&inRecovery)).To(Succeed())
		Expect(inRecovery).To(BeTrue())
		_, err = direct.Exec("CREATE TABLE refused (id int)")
		Expect(err).To(MatchError(ContainSubstring("read-only")))

		// What the board's tests do with an admin DSN works through the front.
		database, err := CreateOn(p.Dialect(), p.AdminDSN())
		Expect(err).NotTo(HaveOccurred())
		db := openDB(database.DSN)
		_, err = db.Exec("CREATE TABLE probe (id int PRIMARY KEY)")
		Expect(err).NotTo(HaveOccurred())
		db.Close()
		Expect(database.Drop()).To(Succeed())
	})

	It("loses no acknowledged write when the primary is killed, and takes writes again on the standby", func() {
		_, err := front.Exec("CREATE TABLE acked (id bigint PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())")
		Expect(err).NotTo(HaveOccurred())
		before, err := p.Writer()
		Expect(err).NotTo(HaveOccurred())

		// A loop of writes through the front, each a new id, each
		// remembered once the server acknowledged its commit. It runs
		// through the kill and the failover.
		w := startWriteLoop(p.AdminDSN())
		Eventually(w.ackCount).WithTimeout(30 * time.Second).Should(BeNumerically(">=", 200))

		killAt := time.Now()
		name, err := p.KillWriter()
		Expect(err).NotTo(HaveOccurred())
		killed = name
		killDone := time.Now()
		Expect(killed).To(Equal(before))
		GinkgoWriter.Printf("killed %s in %v\n", killed, time.Since(killAt).Round(time.Millisecond))
		lastBefore, _ := w.lastAckBefore(killAt)
		ackedBeforeKill := w.ackCount()

		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		waited, err := p.WaitForWriter(ctx)
		Expect(err).NotTo(HaveOccurred())
		writer, err := p.Writer()
		Expect(err).NotTo(HaveOccurred())
		Expect(writer).To(Equal(otherNode(p, killed)))

		// The loop writes again by itself, then stops.
		Eventually(func() bool { _, ok := w.firstAckAfter(killDone); return ok }).WithTimeout(30 * time.Second).Should(BeTrue())
		acked, failed := w.stop()
		firstAfter, _ := w.firstAckAfter(killDone)

		// Writes were being acknowledged right up to the kill: the last
		// one before it is at most a few loop turns old.
		Expect(killAt.Sub(lastBefore)).To(BeNumerically("<", 500*time.Millisecond))

		// Every acknowledged id is on the new primary.
		have := map[int64]bool{}
		rows, err := front.Query("SELECT id FROM acked")
		Expect(err).NotTo(HaveOccurred())
		for rows.Next() {
			var id int64
			Expect(rows.Scan(&id)).To(Succeed())
			have[id] = true
		}
		Expect(rows.Err()).NotTo(HaveOccurred())
		var lost []int64
		for _, id := range acked {
			if !have[id] {
				lost = append(lost, id)
			}
		}
		report := map[string]any{
			"killed":                       killed,
			"new primary":                  writer,
			"acknowledged before the kill": ackedBeforeKill,
			"last ack before the kill":     killAt.Sub(lastBefore).Round(time.Millisecond).String() + " before it",
			"acknowledged in all":          len(acked),
			"failed writes":                failed,
			"lost":                         len(lost),
			"kill to WaitForWriter":        waited.Round(time.Millisecond).String(),
			"kill to the loop's next ack":  firstAfter.Sub(killAt).Round(time.Millisecond).String(),
		}
		AddReportEntry("failover", report)
		GinkgoWriter.Printf("failover: %v\n", report)
		Expect(lost).To(BeEmpty(), "acknowledged ids missing after the failover")
		Expect(len(have)).To(BeNumerically(">=", len(acked)))
	})

	It("rejoins the killed primary as a synchronous standby", func() {
		Expect(killed).NotTo(BeEmpty())
		logPath, err := p.LogPath(killed)
		Expect(err).NotTo(HaveOccurred())
		info, err := os.Stat(logPath)
		Expect(err).NotTo(HaveOccurred())
		logBefore := info.Size()
		began := time.Now()
		Expect(p.Restart(killed)).To(Succeed())
		rejoined := time.Since(began)

		// Restart returned: the new primary streams to it, naming it
		// synchronous.
		var name, state string
		Expect(front.QueryRow("SELECT application_name, sync_state FROM pg_stat_replication").Scan(&name, &state)).To(Succeed())
		Expect(name).To(Equal(killed))
		Expect(state).To(Equal("sync"))

		// And it holds what the new primary took while it was down.
		var want int
		Expect(front.QueryRow("SELECT count(*) FROM acked").Scan(&want)).To(Succeed())
		dsn, err := p.NodeDSN(killed)
		Expect(err).NotTo(HaveOccurred())
		direct := openDB(dsn)
		defer direct.Close()
		Eventually(func(g Gomega) {
			var inRecovery bool
			var count int
			g.Expect(direct.QueryRow("SELECT pg_is_in_recovery(), (SELECT count(*) FROM acked)").Scan(&inRecovery, &count)).To(Succeed())
			g.Expect(inRecovery).To(BeTrue())
			g.Expect(count).To(Equal(want))
		}).WithTimeout(30 * time.Second).Should(Succeed())

		// How Patroni brought it back: pg_rewind, or a new copy. Its log
		// since the restart says.
		whole, err := os.ReadFile(logPath)
		Expect(err).NotTo(HaveOccurred())
		log := whole[logBefore:]
		for _, line := range strings.Split(string(log), "\n") {
			if strings.Contains(line, "rewind") || strings.Contains(line, "reinit") || strings.Contains(line, "recovery") || strings.Contains(line, "INFO: ") {
				GinkgoWriter.Println(line)
			}
		}
		how := "neither pg_rewind nor a reinitialization (the timelines had not diverged)"
		switch {
		case strings.Contains(string(log), "pg_rewind exited with"), strings.Contains(string(log), "running pg_rewind from"):
			how = "pg_rewind"
		case strings.Contains(string(log), "reinitialize"), strings.Contains(string(log), "removing data directory"):
			how = "a new copy (reinit)"
		}
		report := map[string]any{
			"node":               killed,
			"sync standby after": rejoined.Round(time.Millisecond).String(),
			"rejoined by":        how,
		}
		AddReportEntry("rejoin", report)
		GinkgoWriter.Printf("rejoin: %v\n", report)
	})
})

func otherNode(p *Patroni, name string) string {
	for _, n := range p.Nodes() {
		if n != name {
			return n
		}
	}
	return ""
}

func openDB(dsn string) *sql.DB {
	db, err := sql.Open(Postgres, dsn)
	Expect(err).NotTo(HaveOccurred())
	return db
}

// postgresOn lists the processes running postgres -D on one of dirs.
func postgresOn(dirs []string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		args, err := processArgs(pid)
		if err != nil {
			continue
		}
		for _, dir := range dirs {
			if hasDirOption(args, "-D", dir) {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// writeLoop inserts rows with ids 1, 2, 3... through one DSN until stopped,
// each on its own bounded attempt, and remembers which the server
// acknowledged and when.
type writeLoop struct {
	mu     sync.Mutex
	acked  []int64
	sent   []time.Time // when each acknowledged write was sent
	at     []time.Time // and when it was acknowledged
	failed int
	done   chan struct{}
	exited chan struct{}
}

func startWriteLoop(dsn string) *writeLoop {
	w := &writeLoop{done: make(chan struct{}), exited: make(chan struct{})}
	db := openDB(dsn)
	go func() {
		defer GinkgoRecover()
		defer close(w.exited)
		defer db.Close()
		for id := int64(1); ; id++ {
			select {
			case <-w.done:
				return
			default:
			}
			sent := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err := db.ExecContext(ctx, "INSERT INTO acked (id) VALUES ($1)", id)
			cancel()
			w.mu.Lock()
			if err == nil {
				w.acked = append(w.acked, id)
				w.sent = append(w.sent, sent)
				w.at = append(w.at, time.Now())
			} else {
				w.failed++
			}
			w.mu.Unlock()
			if err != nil {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}()
	return w
}

func (w *writeLoop) ackCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

func (w *writeLoop) lastAckBefore(t time.Time) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.at) - 1; i >= 0; i-- {
		if w.at[i].Before(t) {
			return w.at[i], true
		}
	}
	return time.Time{}, false
}

// firstAckAfter is the acknowledgement of the first write sent after t
// that succeeded: after a kill, the loop's first write on the new primary.
func (w *writeLoop) firstAckAfter(t time.Time) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, sent := range w.sent {
		if sent.After(t) {
			return w.at[i], true
		}
	}
	return time.Time{}, false
}

func (w *writeLoop) stop() (acked []int64, failed int) {
	close(w.done)
	<-w.exited
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]int64(nil), w.acked...), w.failed
}
