package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/internal/netns"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// The writer-kill scenario on a replicated database with automatic
// failover (issue 29), once per engine: the node taking writes is
// SIGKILLed in the middle of a rolling update, with two boards on the
// cluster's front address (one converging under the lease), two reps
// running hello, a router-like client, a client writing other LRPs and
// counting what it was told was written, and an event-stream subscriber.
// Each board and each rep runs on a host of its own (a network namespace,
// internal/netns): the boards reach the database's front, the reps their
// board, and the router the instances over veth links routed by this
// host, as separate machines would.
//
// It holds the cluster to: a new writer within the failover's time (kill
// to the first write through the front, reported), the boards answering
// and writing again by themselves (no restart, no reconfiguration), the
// rollout completing, every acknowledged desire and update there
// afterwards, no failed router request, no index lost or doubled at any
// look (chaos_watch_test.go), and an event stream whose ids follow each
// other without a gap or a repeat (event ids are log positions,
// consecutive on every board: DESIGN §10.8). Then the killed node starts
// again and rejoins as a replica, with no write failing meanwhile.
//
// make test runs one kill per engine; CORKBOARD_CHAOS=full (make chaos,
// make ha-galera) runs haFullKills in sequence, each under a rollout of
// its own, the killed node restarted before the next, and reports the
// failover times' median and maximum.

// haEngine is one replicated database the scenario runs on.
type haEngine struct {
	name  string // as the spec names it: "galera"
	label string // the spec's label beside "chaos": "ha-galera", "ha-postgres"
	// start starts a cluster whose front also listens on frontAlso; its
	// error wraps noBinaries when the machine lacks the engine's packages.
	start      func(frontAlso ...string) (testdb.HACluster, error)
	noBinaries error
}

// snapshotRestarter is a cluster that can also take a node back after it
// lost its state (testdb.Galera: by SST).
type snapshotRestarter interface {
	RestartBySnapshot(node string) error
}

// haEngines are the engines the scenario runs on. Each start function
// returns the engine's testdb type as an HACluster.
var haEngines = []haEngine{
	{
		name:  "galera",
		label: "ha-galera",
		start: func(frontAlso ...string) (testdb.HACluster, error) {
			g, err := testdb.StartGalera(frontAlso...)
			if err != nil {
				return nil, err
			}
			return g, nil
		},
		noBinaries: testdb.ErrNoGaleraBinaries,
	},
	{
		name:  "postgres-patroni",
		label: "ha-postgres",
		start: func(frontAlso ...string) (testdb.HACluster, error) {
			p, err := testdb.StartPatroni(frontAlso...)
			if err != nil {
				return nil, err
			}
			return p, nil
		},
		noBinaries: testdb.ErrNoPatroniBinaries,
	},
}

const (
	// haInstances is the rolled LRP's size (issue 29's 12).
	haInstances = 12
	// haFullKills is how many kills the full variant makes in sequence.
	haFullKills = 10
	// haMinReady is each new instance's min_ready: a rollout of 12 takes
	// well over the failover, so the kill lands mid-rollout.
	haMinReady = time.Second
	// haPresenceTTL is longer than a failover: this scenario is about the
	// database, not about cells whose renewals fail meanwhile (which
	// chaos_database_test.go covers).
	haPresenceTTL = 10 * time.Second
	// haFailoverLimit bounds the wait for a new writer; haRolloutLimit a
	// rollout's end after a kill. Deadlines against hanging, not speed
	// requirements.
	haFailoverLimit = 2 * time.Minute
	haRolloutLimit  = 3 * time.Minute
	// haStopGrace is how long a rep keeps an instance serving after the
	// board logged it unroutable: longer than a failover (6–7 s here).
	// Routers follow one board each. An unroutable event logged by one
	// board just before the writer dies reaches a router following the
	// other only once that board reads the log again, after the
	// failover; a shorter grace (the e2e suites' 500 ms, the rep's default
	// 5 s) let a rep stop an instance such a router still sent requests
	// to (docs/ha.md).
	haStopGrace = 8 * time.Second
	// haWritePause is the writer client's pause between two writes.
	haWritePause = 50 * time.Millisecond
)

// haKills is how many kills this run makes.
func haKills() int {
	if os.Getenv("CORKBOARD_CHAOS") == "full" {
		return haFullKills
	}
	return 1
}

var _ = Describe("Chaos: the database's writer SIGKILLed mid-rollout, behind a failover front", func() {
	for _, engine := range haEngines {
		It(fmt.Sprintf("on %s: a new writer, boards reconnecting by themselves, the rollout complete, no acknowledged write lost, no failed request, no index lost or doubled, an event stream without gaps", engine.name),
			Label("chaos", engine.label), func() {
				runWriterKill(engine, haKills())
			})
	}
})

// The converging board cut off from everything — the database's front,
// the other board, its clients — on a replicated database, once per
// engine, while it places an LRP: the other board takes the lease over
// once it runs out and places what is desired meanwhile. When the
// partition heals, the first board answers again by itself, writes
// through the front again, and changes nothing it should not: it does not
// take the lease back, and no instance is placed twice or lost.
//
// A board cut off like this usually learns it lost the lease from its own
// timer before it can write again. The fence is for one that does not (a
// long pause, a partition that heals within a renewal): so the spec then
// moves the lease away from the other board right after one of its
// renewals, as a board that took it while this one was frozen would, and
// has it converge a new LRP before its next renewal: the write is refused
// (db/rowlock), through the real front, and the LRP is placed once the
// lease has an owner that converges. The reps follow the other board, so
// the cells keep their board throughout.
var _ = Describe("Chaos: the converging board partitioned from a replicated database", func() {
	for _, engine := range haEngines {
		It(fmt.Sprintf("on %s: the other board takes the lease and converges; healed, the cut board changes nothing and writes again; a write of an ended tenure is refused", engine.name),
			Label("chaos", engine.label), func() {
				runBoardPartition(engine)
			})
	}
})

const (
	// The partition spec's convergence leases: the cut board's is short,
	// so the other board takes over soon after the cut; the other board
	// renews its own every 4 s (a third of it), the fence step's window.
	haCutLeaseTTL   = 3 * time.Second
	haOtherLeaseTTL = 12 * time.Second
	leaseHeld       = "corkboard_convergence_lease_held"
)

func runBoardPartition(engine haEngine) {
	ctx := context.Background()
	hosts, _, database, settings := startHACluster(engine)
	withLease := func(id string, ttl time.Duration) map[string]any {
		s := settings(id)
		s["convergence_lease_ttl"] = ttl.String()
		return s
	}
	cut := startBoardOn(hosts["board-a"], withLease("board-a", haCutLeaseTTL))
	Eventually(func() float64 { return cut.metric(leaseHeld) }).Should(Equal(1.0), "the first board owns the lease")
	other := startBoardOn(hosts["board-b"], withLease("board-b", haOtherLeaseTTL))
	other.cork("set-domain", "cork")
	reps := []*runningRep{
		startRepOn(hosts["cell-a"], other, "cell-a", "z1"),
		startRepOn(hosts["cell-b"], other, "cell-b", "z2"),
	}
	all := cellsOf(reps...)
	sizes := map[string]int{"chaos-cut-before": 2, "chaos-cut-during": 12, "chaos-cut-after": 2, "chaos-cut-fenced": 2}
	desire := func(guid string) {
		GinkgoHelper()
		_, err := other.client().DesireLRP(ctx, chaosHelloLRP(guid, int32(sizes[guid])))
		Expect(err).NotTo(HaveOccurred())
	}
	// expectPlaced checks that every LRP desired so far keeps exactly its
	// instances, once each, over several passes.
	expectPlaced := func(guids ...string) {
		GinkgoHelper()
		Consistently(func() error {
			for _, guid := range guids {
				if err := checkSteady(other.lrps(guid), sizes[guid], all); err != nil {
					return fmt.Errorf("%s: %w", guid, err)
				}
			}
			return nil
		}, 5*time.Second, 250*time.Millisecond).Should(Succeed())
	}
	desire("chaos-cut-before")
	steady(other, "chaos-cut-before", sizes["chaos-cut-before"], all...)

	By("partitioning the converging board while it places an LRP of 12")
	desire("chaos-cut-during")
	Expect(hosts["board-a"].Partition()).To(Succeed())
	partitioned := time.Now()
	Eventually(func() float64 { return other.metric(leaseHeld) }).Should(Equal(1.0), "the other board takes the lease")
	chaosEntry(engine.name+" partition: cut to the other board owning the lease (lease TTL "+haCutLeaseTTL.String()+
		", the other board trying every "+(haOtherLeaseTTL/3).String()+")", since(partitioned))
	steady(other, "chaos-cut-during", sizes["chaos-cut-during"], all...)

	By("healing the partition")
	Expect(hosts["board-a"].Heal()).To(Succeed())
	healed := time.Now()
	desire("chaos-cut-after")
	steady(other, "chaos-cut-after", sizes["chaos-cut-after"], all...)
	Eventually(func() error {
		_, err := cut.client().UpdateDesiredLRP(ctx, "chaos-cut-after", &models.DesiredLRPUpdate{Annotation: ptr("through the healed board")})
		return err
	}).Should(Succeed(), "the healed board writes through the front again by itself")
	chaosEntry(engine.name+" partition: heal to the cut board writing again", since(healed))
	expectPlaced("chaos-cut-before", "chaos-cut-during", "chaos-cut-after")
	Expect(cut.metric(leaseHeld)).To(Equal(0.0), "the healed board does not take the lease back")
	Expect(other.metric(leaseHeld)).To(Equal(1.0))
	Expect(string(cut.session.Out.Contents())).To(ContainSubstring(`"bbs.convergence.lease.lost"`))

	By("moving the lease away from the converging board between two of its renewals")
	admin, err := sqldb.Open(ctx, database.Dialect, database.DSN)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(admin.Close)
	expiry := func() int64 {
		var expires int64
		Expect(admin.QueryRowContext(ctx, dialect.Rebind(dialect.Name(database.Dialect),
			"SELECT expires_at FROM leases WHERE name = ?"), "convergence").Scan(&expires)).To(Succeed())
		return expires
	}
	renewed := expiry()
	Eventually(expiry).WithPolling(20*time.Millisecond).ShouldNot(Equal(renewed), "a renewal moves the expiry")
	// The next renewal is 4 s away: the board believes it converges
	// until then. The lease's new owner lets it expire in 5 s.
	_, err = admin.ExecContext(ctx, dialect.Rebind(dialect.Name(database.Dialect),
		"UPDATE leases SET owner = ?, tenure = tenure + 1, expires_at = ? WHERE name = ?"),
		"board-elsewhere", time.Now().Add(5*time.Second).UnixNano(), "convergence")
	Expect(err).NotTo(HaveOccurred())
	Expect(other.metric(leaseHeld)).To(Equal(1.0), "the converging board has not noticed")
	desire("chaos-cut-fenced")
	Eventually(func() string { return string(other.session.Out.Contents()) }).WithTimeout(haOtherLeaseTTL/3).
		Should(ContainSubstring("refused a write of a lease tenure that ended"), "its pass's write is refused")
	steady(other, "chaos-cut-fenced", sizes["chaos-cut-fenced"], all...)
	expectPlaced("chaos-cut-before", "chaos-cut-during", "chaos-cut-after", "chaos-cut-fenced")
	Expect(cut.metric(leaseHeld)+other.metric(leaseHeld)).To(Equal(1.0), "one board owns the lease again")
	expectNoOrphans(18, reps...)
	chaosEntry(engine.name+" partition: writes refused by the fence (cut board, converging board)",
		fmt.Sprint(strings.Count(string(cut.session.Out.Contents()), "refused a write of a lease tenure that ended"), ", ",
			strings.Count(string(other.session.Out.Contents()), "refused a write of a lease tenure that ended")))
	stopRepsAndExpectNoProcesses(reps...)
}

func runWriterKill(engine haEngine, kills int) {
	ctx := context.Background()
	const guid = "chaos-ha"
	hosts, cluster, _, settings := startHACluster(engine)

	// Both on the front's address; the first to start owns the
	// convergence lease, the other takes it only if the first dies.
	boardA := startBoardOn(hosts["board-a"], settings("board-a"))
	boardB := startBoardOn(hosts["board-b"], settings("board-b"))
	boardA.cork("set-domain", "cork")
	slots := map[string]any{"capacity": map[string]int{"memory_mb": 1024, "disk_mb": 1024, "instances": haInstances}}
	// The reps' stop grace outlasts a failover (haStopGrace).
	slots["stop_grace_period"] = haStopGrace.String()
	reps := []*runningRep{
		startRepOn(hosts["cell-a"], boardA, "cell-a", "z1", slots),
		startRepOn(hosts["cell-b"], boardB, "cell-b", "z2", slots),
	}
	all := cellsOf(reps...)
	_, err := boardA.client().DesireLRP(ctx, chaosHelloLRP(guid, haInstances))
	Expect(err).NotTo(HaveOccurred())
	steady(boardA, guid, haInstances, all...)

	r := startRouter(boardA, guid)
	Eventually(r.routable).Should(Equal(haInstances), "the router sees every instance before the kills")
	watch := watchInvariants(boardB, guid, haInstances, 0)
	events := recordLRPEvents(boardA, guid)
	stream := followEventIDs(boardB)
	writes := startHAWriter(boardB, guid+"-w")

	var failovers []time.Duration
	// rejoins are the spans of the killed nodes' restarts: the writer
	// client must see no failure in them (a node rejoining by a state
	// transfer is invisible to the boards).
	var rejoins [][2]time.Time
	for kill := 1; kill <= kills; kill++ {
		version := fmt.Sprintf("v%d", kill+1)
		By(fmt.Sprintf("kill %d of %d: SIGKILLing the writer under a rollout to %s", kill, kills, version))
		definition := rollHello(boardA, guid, version, haMinReady)
		waitForProgress(boardA, guid, definition, 2)
		before, err := cluster.Writer()
		Expect(err).NotTo(HaveOccurred())
		killed, err := cluster.KillWriter()
		Expect(err).NotTo(HaveOccurred())
		Expect(killed).To(Equal(before))
		waitCtx, cancel := context.WithTimeout(ctx, haFailoverLimit)
		took, err := cluster.WaitForWriter(waitCtx)
		cancel()
		Expect(err).NotTo(HaveOccurred(), "a new writer after killing %s", killed)
		failovers = append(failovers, took)
		after, err := cluster.Writer()
		Expect(err).NotTo(HaveOccurred())
		Expect(after).NotTo(Equal(killed))
		chaosEntry(fmt.Sprintf("%s kill %d: %s killed, kill to the first write through the front (new writer %s)", engine.name, kill, killed, after),
			took.Round(time.Millisecond).String())

		reconnected := time.Now()
		for _, b := range []*board{boardA, boardB} {
			Expect(b.session.ExitCode()).To(Equal(-1), "the board stays up through the failover")
			Eventually(func() error {
				// A write through each board: its pool has dropped the
				// dead node's connections and dialled the new writer.
				_, err := b.client().UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{Annotation: ptr(fmt.Sprintf("kill %d via %s", kill, b.url))})
				return err
			}).WithTimeout(haFailoverLimit).Should(Succeed(), "the board writes again by itself")
		}
		chaosEntry(fmt.Sprintf("%s kill %d: new writer to both boards writing", engine.name, kill), since(reconnected))

		waitForRollout(boardA, guid, haRolloutLimit, completeOn(definition))
		expectVersion(steady(boardA, guid, haInstances, all...), definition, version)

		// Every second kill of a cluster that can, the node comes back
		// having lost its state (Galera: a whole snapshot, SST, instead
		// of the write sets it missed, IST).
		restart, how := cluster.Restart, "restarted"
		if s, ok := cluster.(snapshotRestarter); ok && kill%2 == 0 {
			restart, how = s.RestartBySnapshot, "restarted by snapshot"
		}
		By(fmt.Sprintf("%s %s: it rejoins as a replica", how, killed))
		began := time.Now()
		Expect(restart(killed)).To(Succeed())
		rejoins = append(rejoins, [2]time.Time{began, time.Now()})
		chaosEntry(fmt.Sprintf("%s kill %d: %s %s and synced", engine.name, kill, killed, how), since(began))
		Expect(cluster.Writer()).To(Equal(after), "the front stays on the new writer")
	}

	Eventually(r.sent).Should(BeNumerically(">", r.sent()+100), "the router goes on a while after the last kill")
	writes.stop()
	stats := r.stop()
	report := watch.stop()
	seen := events.stop()
	ids := stream.stop()
	written := writes.check(boardA)

	slices.Sort(failovers)
	chaosEntry(engine.name+" failover (kill to the first write), median of "+fmt.Sprint(len(failovers)),
		failovers[len(failovers)/2].Round(time.Millisecond).String())
	chaosEntry(engine.name+" failover (kill to the first write), max of "+fmt.Sprint(len(failovers)),
		failovers[len(failovers)-1].Round(time.Millisecond).String())
	chaosEntry(engine.name+" router", fmt.Sprintf("%d requests, %d failed %v, fewest routable indices %d, answers by version %v",
		stats.Requests, len(stats.Failures), stats.Failures, stats.Fewest, stats.Versions))
	chaosEntry(engine.name+" invariants", report.String())
	chaosEntry(engine.name+" writer client", written.String())
	chaosEntry(engine.name+" event stream", ids.String())
	chaosEntry(engine.name+" actual LRP events", fmt.Sprintf("%d instances created, %d marked SUSPECT, %d crashes, %d stream breaks, %d events_lost",
		seen.created, len(seen.suspects), seen.crashes, seen.breaks, seen.lost))

	var failedInRejoins []string
	for _, span := range rejoins {
		failedInRejoins = append(failedInRejoins, written.failedWithin(span[0], span[1])...)
	}
	chaosEntry(engine.name+" writer client failures while a killed node rejoined", fmt.Sprint(len(failedInRejoins), " ", failedInRejoins))

	Expect(written.lost).To(BeEmpty(), "acknowledged writes missing afterwards")
	Expect(failedInRejoins).To(BeEmpty(), "writes that failed while a killed node rejoined")
	Expect(written.acked).To(BeNumerically(">", 20), "the writer client was told of enough writes to mean something")
	expectServedThroughout(stats, haInstances)
	report.expectHeld()
	Expect(seen.suspects).To(BeEmpty(), "rows marked SUSPECT")
	Expect(seen.crashes).To(BeZero())
	Expect(ids.gaps).To(BeEmpty(), "event ids skipped")
	Expect(ids.repeats).To(BeEmpty(), "event ids repeated")
	Expect(ids.lost).To(BeZero(), "events_lost")
	Expect(ids.received).To(BeNumerically(">", 100), "the subscriber saw enough events to mean something")
	expectNoOrphans(haInstances, reps...)
	stopRepsAndExpectNoProcesses(reps...)
}

func ptr[T any](v T) *T { return &v }

// startHACluster starts engine's cluster with a database of the spec's
// own (reached from this process on loopback), and hosts (network namespaces) board-a, board-b, cell-a and cell-b.
// settings is a board's config on that database, reaching the cluster's
// front at its host's end of its link; id is "board-a" or "board-b". A
// missing engine skips the spec, unless the databases are required.
// Boards started after it stop before the cluster does.
func startHACluster(engine haEngine) (hosts map[string]*netns.Namespace, cluster testdb.HACluster, database *testdb.Database, settings func(id string) map[string]any) {
	GinkgoHelper()
	hosts = startHosts("board-a", "board-b", "cell-a", "cell-b")
	cluster, err := engine.start(hosts["board-a"].HostIP, hosts["board-b"].HostIP)
	if errors.Is(err, engine.noBinaries) && os.Getenv(testdb.RequireEnv) != "1" {
		Skip(err.Error())
	}
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cluster.Close)
	database, err = testdb.CreateOn(cluster.Dialect(), cluster.AdminDSN())
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(database.Drop)
	Expect(database.DSN).To(ContainSubstring("127.0.0.1:"), "the front is on loopback here")
	// database_timeout is the board's default, 10 s. Galera holds every
	// commit while its membership changes: about 2 s when a node joins
	// (a killed node starting again), 5–6 s when one is lost. With 2 s,
	// one write in ten rejoins failed "invalid connection" at its
	// deadline (docs/ha-galera.md); a timeout shorter than those pauses
	// turns them into client errors.
	settings = func(id string) map[string]any {
		return map[string]any{
			"board_id":             id,
			"database_driver":      cluster.Dialect(),
			"database_dsn":         strings.Replace(database.DSN, "127.0.0.1:", hosts[id].HostIP+":", 1),
			"cell_presence_ttl":    haPresenceTTL.String(),
			"max_open_connections": 16,
		}
	}
	return hosts, cluster, database, settings
}

// startHosts makes a network namespace for each name, routed to each
// other through this host (forwarding on until the spec ends), and
// deletes them when the spec ends, after the processes in them stopped.
func startHosts(names ...string) map[string]*netns.Namespace {
	GinkgoHelper()
	restore, err := netns.EnableForwarding()
	Expect(err).NotTo(HaveOccurred(), "the HA specs run boards on hosts of their own: they need root")
	DeferCleanup(restore)
	hosts := map[string]*netns.Namespace{}
	for _, name := range names {
		host, err := netns.Create()
		Expect(err).NotTo(HaveOccurred(), "a network namespace needs root, iproute2 and nsenter")
		DeferCleanup(host.Delete)
		hosts[name] = host
	}
	return hosts
}

// haWriter desires and updates LRPs of its own (none of them with
// instances) through one board as fast as it is answered, and records
// every write it was told succeeded, to look for each afterwards.
type haWriter struct {
	api    *client.Client
	prefix string
	cancel context.CancelFunc
	done   chan struct{}

	mu sync.Mutex
	// desired lists the LRPs whose desire succeeded; attempts, each
	// LRP's annotation updates in the order sent, acknowledged or not.
	desired  []string
	initial  map[string]string // each desired LRP's annotation as desired
	attempts map[string][]haAttempt
	acked    int
	failed   []string
	failedAt []time.Time // when each of failed was answered
}

type haAttempt struct {
	annotation string
	acked      bool
}

func startHAWriter(b *board, prefix string) *haWriter {
	ctx, cancel := context.WithCancel(context.Background())
	w := &haWriter{api: b.client(), prefix: prefix, cancel: cancel, done: make(chan struct{}), initial: map[string]string{}, attempts: map[string][]haAttempt{}}
	go func() {
		defer GinkgoRecover()
		defer close(w.done)
		for n := 0; ctx.Err() == nil; n++ {
			w.write(ctx, n)
			select {
			case <-ctx.Done():
			case <-time.After(haWritePause):
			}
		}
	}()
	DeferCleanup(w.stop)
	return w
}

// write makes the nth write: a desire every third, else an update of the
// annotation of an LRP desired earlier.
func (w *haWriter) write(ctx context.Context, n int) {
	callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	w.mu.Lock()
	desired := slices.Clone(w.desired)
	w.mu.Unlock()
	if n%3 == 0 || len(desired) == 0 {
		guid := fmt.Sprintf("%s-%d", w.prefix, n)
		lrp := chaosHelloLRP(guid, 0)
		_, err := w.api.DesireLRP(callCtx, lrp)
		if ctx.Err() != nil {
			return // stopped mid-call: the outcome is unknown, and not asked for
		}
		w.note(func() {
			if err != nil {
				w.failed = append(w.failed, time.Now().Format(time.StampMilli)+" desire "+guid+": "+err.Error())
				w.failedAt = append(w.failedAt, time.Now())
				return
			}
			w.acked++
			w.desired = append(w.desired, guid)
			w.initial[guid] = lrp.GetAnnotation()
		})
		return
	}
	guid := desired[n%len(desired)]
	annotation := fmt.Sprintf("write %d", n)
	_, err := w.api.UpdateDesiredLRP(callCtx, guid, &models.DesiredLRPUpdate{Annotation: &annotation})
	if ctx.Err() != nil {
		// Sent, outcome unknown: it may have applied.
		w.note(func() { w.attempts[guid] = append(w.attempts[guid], haAttempt{annotation: annotation}) })
		return
	}
	w.note(func() {
		w.attempts[guid] = append(w.attempts[guid], haAttempt{annotation: annotation, acked: err == nil})
		if err != nil {
			w.failed = append(w.failed, time.Now().Format(time.StampMilli)+" update "+guid+": "+err.Error())
			w.failedAt = append(w.failedAt, time.Now())
			return
		}
		w.acked++
	})
}

func (w *haWriter) note(change func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	change()
}

func (w *haWriter) stop() {
	w.cancel()
	<-w.done
}

// haWritten is what the writer client was told and what the board has.
type haWritten struct {
	acked    int
	failed   []string
	failedAt []time.Time
	// lost lists each acknowledged write missing afterwards: a desired
	// LRP gone, or an annotation other than the last acknowledged one
	// (or one sent after it, whose outcome the client never learnt).
	lost []string
}

func (h haWritten) String() string {
	s := fmt.Sprintf("%d writes acknowledged, %d failed, %d acknowledged and lost", h.acked, len(h.failed), len(h.lost))
	if len(h.failed) > 0 {
		first, last, span := failureSpan(h.failed)
		s += fmt.Sprintf("; failures from %s to %s (%v), the first: %s", first, last, span, h.failed[0])
	}
	return s
}

// failedWithin lists the failures answered between from and to.
func (h haWritten) failedWithin(from, to time.Time) []string {
	var within []string
	for i, at := range h.failedAt {
		if !at.Before(from) && !at.After(to) {
			within = append(within, h.failed[i])
		}
	}
	return within
}

// check reads every LRP the client was told it desired, through b.
func (w *haWriter) check(b *board) haWritten {
	GinkgoHelper()
	w.mu.Lock()
	defer w.mu.Unlock()
	result := haWritten{acked: w.acked, failed: slices.Clone(w.failed), failedAt: slices.Clone(w.failedAt)}
	for _, guid := range w.desired {
		var lrp *models.DesiredLRP
		Eventually(func() error {
			var err error
			lrp, err = b.client().DesiredLRPByProcessGuid(context.Background(), guid)
			if models.IsErrorType(err, models.Error_ResourceNotFound) {
				return nil
			}
			return err
		}).Should(Succeed())
		if lrp == nil {
			result.lost = append(result.lost, "desire of "+guid+": the LRP is not there")
			continue
		}
		// Allowed: the last acknowledged annotation, or one sent after
		// it (an update whose answer was lost may have applied).
		attempts := w.attempts[guid]
		allowed := []string{w.initial[guid]}
		lastAcked := -1
		for i, a := range attempts {
			if a.acked {
				lastAcked = i
			}
		}
		if lastAcked >= 0 {
			allowed = nil
		}
		for i := max(lastAcked, 0); i < len(attempts); i++ {
			allowed = append(allowed, attempts[i].annotation)
		}
		if !slices.Contains(allowed, lrp.GetAnnotation()) {
			result.lost = append(result.lost, fmt.Sprintf("update of %s: annotation %q, want one of %q", guid, lrp.GetAnnotation(), allowed))
		}
	}
	return result
}

// eventIDLog follows every event a board streams, resuming after a break
// from the last id it had, and checks that each id is the one after the
// last: the log's positions, on every board, with no hole.
type eventIDLog struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu                     sync.Mutex
	last                   uint64
	received, lost, breaks int
	gaps, repeats          []string
}

func followEventIDs(b *board) *eventIDLog {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(context.Background())
	api := b.client()
	stream, err := api.Events(ctx, client.EventsOptions{IdleTimeout: 45 * time.Second})
	Expect(err).NotTo(HaveOccurred())
	l := &eventIDLog{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for ctx.Err() == nil {
			event, err := stream.Next()
			if err != nil {
				last := stream.LastEventID()
				stream.Close()
				if ctx.Err() != nil {
					return
				}
				l.note(func() { l.breaks++ })
				for ctx.Err() == nil {
					if stream, err = api.Events(ctx, client.EventsOptions{LastEventID: last, IdleTimeout: 45 * time.Second}); err == nil {
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
				continue
			}
			l.note(func() { l.apply(event) })
		}
		if stream != nil {
			stream.Close()
		}
	}()
	DeferCleanup(l.stop)
	return l
}

func (l *eventIDLog) apply(event client.Event) {
	if event.Type == models.EventEventsLost {
		l.lost++
		return
	}
	l.received++
	now := time.Now().Format(time.StampMilli)
	switch {
	case l.last == 0:
	case event.ID <= l.last:
		l.repeats = append(l.repeats, fmt.Sprintf("%s id %d after %d", now, event.ID, l.last))
	case event.ID != l.last+1:
		l.gaps = append(l.gaps, fmt.Sprintf("%s id %d after %d", now, event.ID, l.last))
	}
	if event.ID > l.last {
		l.last = event.ID
	}
}

func (l *eventIDLog) note(change func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	change()
}

// eventIDs is what an eventIDLog saw.
type eventIDs struct {
	received, lost, breaks int
	last                   uint64
	gaps, repeats          []string
}

func (e eventIDs) String() string {
	return fmt.Sprintf("%d events up to id %d, %d stream breaks, %d gaps %s, %d repeats %s, %d events_lost",
		e.received, e.last, e.breaks, len(e.gaps), strings.Join(e.gaps, "; "), len(e.repeats), strings.Join(e.repeats, "; "), e.lost)
}

func (l *eventIDLog) stop() eventIDs {
	l.cancel()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return eventIDs{received: l.received, lost: l.lost, breaks: l.breaks, last: l.last,
		gaps: slices.Clone(l.gaps), repeats: slices.Clone(l.repeats)}
}
