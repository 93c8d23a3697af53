package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// What the chaos specs hold the cluster to while a fault happens (DESIGN
// §10), checked by polling the board every invariantLookInterval:
//
//   - at most one ORDINARY row per index;
//   - the DesiredLRP is there, with its instance count (no desired LRP
//     lost);
//   - at least instances − max_unavailable indices have a RUNNING,
//     routable row (any presence: what a router sends requests to) at
//     every look. A fault that takes instances away unannounced (a rep
//     SIGKILLed with its instances) may excuse a dip of up to as many
//     indices as it took, for as long as the spec says (excuse); such
//     dips are listed apart, and a deeper one is a violation still.
//
// A look the board cannot answer (its database is down) is counted as
// unanswered and proves nothing either way. The router-like client
// (router_test.go) checks the rest: every request it sends to an instance
// the board calls routable must succeed.
const invariantLookInterval = 100 * time.Millisecond

type invariantWatch struct {
	api       *client.Client
	guid      string
	instances int32
	// floor is instances − max_unavailable.
	floor int

	quit, done chan struct{}
	stopOnce   sync.Once

	mu         sync.Mutex
	looks      int
	unanswered int
	violations []string
	// excused lists dips below floor within the allowance of the moment.
	excused   []string
	allowance int
	fewest    int
	worst     string
	// suspects lists each SUSPECT row seen, once per instance.
	suspects    []string
	seenSuspect map[string]bool
}

// watchInvariants starts looking at guid's rows on b: instances wanted,
// maxUnavailable of them allowed down.
func watchInvariants(b *board, guid string, instances, maxUnavailable int32) *invariantWatch {
	w := &invariantWatch{
		api: b.client(), guid: guid, instances: instances, floor: int(instances - maxUnavailable),
		quit: make(chan struct{}), done: make(chan struct{}), fewest: -1, seenSuspect: map[string]bool{},
	}
	go func() {
		defer GinkgoRecover()
		defer close(w.done)
		ticker := time.NewTicker(invariantLookInterval)
		defer ticker.Stop()
		for {
			w.look()
			select {
			case <-w.quit:
				return
			case <-ticker.C:
			}
		}
	}()
	DeferCleanup(w.stop)
	return w
}

func (w *invariantWatch) look() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	now := time.Now().Format(time.StampMilli)
	desired, err := w.api.DesiredLRPByProcessGuid(ctx, w.guid)
	if models.IsErrorType(err, models.Error_ResourceNotFound) {
		w.violate(now + " the DesiredLRP is gone")
		return
	}
	if err != nil {
		w.note(func() { w.unanswered++ })
		return
	}
	rows, err := w.api.ActualLRPs(ctx, client.ActualLRPFilter{ProcessGuid: w.guid})
	if err != nil {
		w.note(func() { w.unanswered++ })
		return
	}
	if desired.GetInstances() != w.instances {
		w.violate(fmt.Sprintf("%s the DesiredLRP wants %d instances, not %d", now, desired.GetInstances(), w.instances))
	}
	ordinary := map[int32]int{}
	routable := map[int32]bool{}
	var suspects []*models.ActualLRP
	for _, row := range rows {
		switch row.GetPresence() {
		case models.ActualLRP_ORDINARY:
			ordinary[row.GetIndex()]++
		case models.ActualLRP_SUSPECT:
			suspects = append(suspects, row)
		}
		if row.GetState() == models.ActualLRP_RUNNING && row.GetRoutable() && row.GetIndex() < w.instances {
			routable[row.GetIndex()] = true
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.looks++
	for index, n := range ordinary {
		if n > 1 {
			w.violations = append(w.violations, fmt.Sprintf("%s index %d has %d ORDINARY rows: %s", now, index, n, describe(rows)))
		}
	}
	for _, row := range suspects {
		if !w.seenSuspect[row.GetInstanceGuid()] {
			w.seenSuspect[row.GetInstanceGuid()] = true
			w.suspects = append(w.suspects, fmt.Sprintf("%s %d on %s", now, row.GetIndex(), row.GetCellId()))
		}
	}
	if w.fewest == -1 || len(routable) < w.fewest {
		w.fewest = len(routable)
		w.worst = now + " " + describe(rows)
	}
	if len(routable) < w.floor {
		dip := fmt.Sprintf("%s %d routable indices, want %d: %s", now, len(routable), w.floor, describe(rows))
		if len(routable) >= w.floor-w.allowance {
			w.excused = append(w.excused, dip)
		} else {
			w.violations = append(w.violations, dip)
		}
	}
}

// excuse allows dips of up to n indices below the floor from now on (0:
// none again).
func (w *invariantWatch) excuse(n int) {
	w.note(func() { w.allowance = n })
}

func (w *invariantWatch) violate(what string) {
	w.note(func() {
		w.looks++
		w.violations = append(w.violations, what)
	})
}

func (w *invariantWatch) note(change func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	change()
}

// invariantReport is what a watch saw.
type invariantReport struct {
	looks, unanswered int
	violations        []string
	excused           []string
	fewest            int
	worst             string
	suspects          []string
}

func (r invariantReport) String() string {
	return fmt.Sprintf("%d looks (%d unanswered), %d violations, %d excused dips, fewest routable indices %d, %d SUSPECT rows seen",
		r.looks, r.unanswered, len(r.violations), len(r.excused), r.fewest, len(r.suspects))
}

// stop ends the watch and returns what it saw.
func (w *invariantWatch) stop() invariantReport {
	w.stopOnce.Do(func() { close(w.quit) })
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return invariantReport{
		looks: w.looks, unanswered: w.unanswered, violations: slices.Clone(w.violations), excused: slices.Clone(w.excused),
		fewest: w.fewest, worst: w.worst, suspects: slices.Clone(w.suspects),
	}
}

// expectHeld: the watch looked often enough to mean something, and saw
// no violation.
func (r invariantReport) expectHeld() {
	GinkgoHelper()
	Expect(r.looks-r.unanswered).To(BeNumerically(">", 20), "the watch saw the board often enough to mean something")
	Expect(r.violations).To(BeEmpty(), "invariant violations")
}

// failedSoFar is how many requests the router has seen fail so far.
func (r *router) failedSoFar() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.stats.Failures)
}

// repDataDir is the data dir startRep gave r: its instances' working
// directories are under it.
func repDataDir(r *runningRep) string {
	return filepath.Join(filepath.Dir(r.configPath), "data")
}

// processesUnder lists the live processes (not zombies) whose working
// directory is dir or under it: the instances a rep with that data dir
// started, whether or not that rep still runs.
func processesUnder(dir string) []int {
	GinkgoHelper()
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		dir = resolved
	}
	entries, err := os.ReadDir("/proc")
	Expect(err).NotTo(HaveOccurred(), "the orphan check reads /proc")
	var pids []int
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", entry.Name(), "cwd"))
		if err != nil {
			continue // gone meanwhile, or a kernel thread
		}
		if (cwd == dir || strings.HasPrefix(cwd, dir+"/")) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// orphansOf lists the processes under a rep's data dir that the rep does
// not account for: any at all once it has exited, otherwise those that
// are not among its instances. An instance is its process group, led by
// the pid the rep reports: an isolated instance's action runs under its
// init, in the init's group.
func orphansOf(r *runningRep) []int {
	GinkgoHelper()
	running := processesUnder(repDataDir(r))
	if r.session.ExitCode() != -1 {
		return running
	}
	known := r.pids()
	var orphans []int
	for _, pid := range running {
		if !slices.Contains(known, pid) && !slices.Contains(known, processGroup(pid)) {
			orphans = append(orphans, pid)
		}
	}
	return orphans
}

// instancesUnder counts the process groups of the processes under dir:
// one per instance, isolated (init and action) or not.
func instancesUnder(dir string) int {
	groups := map[int]bool{}
	for _, pid := range processesUnder(dir) {
		groups[processGroup(pid)] = true
	}
	return len(groups)
}

// processGroup is pid's process group (field 5 of /proc/<pid>/stat), or
// pid itself when it cannot be read (gone meanwhile).
func processGroup(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return pid
	}
	end := strings.LastIndexByte(string(data), ')')
	fields := strings.Fields(string(data[end+1:]))
	if end < 0 || len(fields) < 3 {
		return pid
	}
	pgid, err := strconv.Atoi(fields[2])
	if err != nil {
		return pid
	}
	return pgid
}

// expectNoOrphans waits until no rep has a process under its data dir it
// does not account for, and the reps run want instances in all (a stop
// may be under way, or a stopped instance's row removed a moment before
// its process is reaped).
func expectNoOrphans(want int, reps ...*runningRep) {
	GinkgoHelper()
	Eventually(func() error {
		total := 0
		for _, r := range reps {
			if orphans := orphansOf(r); len(orphans) > 0 {
				return fmt.Errorf("processes under %s's data dir it does not run: %v", r.cellID, orphans)
			}
			total += instancesUnder(repDataDir(r))
		}
		if total != want {
			return fmt.Errorf("the reps run %d processes, want %d", total, want)
		}
		return nil
	}).Should(Succeed())
}

// stopRepsAndExpectNoProcesses stops every rep (SIGINT: each stops its
// instances and exits) and checks that no process is left under any rep's
// data dir.
func stopRepsAndExpectNoProcesses(reps ...*runningRep) {
	GinkgoHelper()
	for _, r := range reps {
		stopProcess(r.session, os.Interrupt)
	}
	for _, r := range reps {
		Eventually(func() []int { return processesUnder(repDataDir(r)) }).Should(BeEmpty(),
			"processes left under %s's data dir after it exited", r.cellID)
	}
}

// lrpEventLog records one LRP's actual LRP events from the moment it is
// made, resuming its stream after a break (a board whose database went
// away may end it).
type lrpEventLog struct {
	guid   string
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	created  int
	suspects []string
	crashes  int
	// lost counts events_lost: the counts may then miss events.
	lost   int
	breaks int
}

func recordLRPEvents(b *board, guid string) *lrpEventLog {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(context.Background())
	api := b.client()
	types := []string{models.EventActualLRPCreated, models.EventActualLRPChanged, models.EventActualLRPCrashed}
	stream, err := api.Events(ctx, client.EventsOptions{Types: types})
	Expect(err).NotTo(HaveOccurred())
	log := &lrpEventLog{guid: guid, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(log.done)
		for ctx.Err() == nil {
			event, err := stream.Next()
			if err != nil {
				last := stream.LastEventID()
				stream.Close()
				if ctx.Err() != nil {
					return // stopped
				}
				log.note(func() { log.breaks++ })
				for ctx.Err() == nil {
					if stream, err = api.Events(ctx, client.EventsOptions{Types: types, LastEventID: last}); err == nil {
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
				continue
			}
			log.apply(event)
		}
		if stream != nil {
			stream.Close()
		}
	}()
	DeferCleanup(log.stop)
	return log
}

func (l *lrpEventLog) apply(event client.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch p := event.Payload.(type) {
	case *models.ActualLRPCreatedEvent:
		if p.GetActualLrp().GetProcessGuid() == l.guid {
			l.created++
		}
	case *models.ActualLRPChangedEvent:
		after := p.GetAfter()
		if after.GetProcessGuid() == l.guid && after.GetPresence() == models.ActualLRP_SUSPECT &&
			p.GetBefore().GetPresence() != models.ActualLRP_SUSPECT {
			l.suspects = append(l.suspects, fmt.Sprintf("%s %d on %s", time.Now().Format(time.StampMilli), after.GetIndex(), after.GetCellId()))
		}
	case *models.ActualLRPCrashedEvent:
		if p.GetActualLrp().GetProcessGuid() == l.guid {
			l.crashes++
		}
	}
	if event.Type == models.EventEventsLost {
		l.lost++
	}
}

func (l *lrpEventLog) note(change func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	change()
}

// lrpEvents is what an lrpEventLog recorded.
type lrpEvents struct {
	created, crashes, lost, breaks int
	suspects                       []string
}

func (l *lrpEventLog) stop() lrpEvents {
	l.cancel()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return lrpEvents{created: l.created, crashes: l.crashes, lost: l.lost, breaks: l.breaks, suspects: slices.Clone(l.suspects)}
}

// snapshot is what the log holds so far.
func (l *lrpEventLog) snapshot() lrpEvents {
	l.mu.Lock()
	defer l.mu.Unlock()
	return lrpEvents{created: l.created, crashes: l.crashes, lost: l.lost, breaks: l.breaks, suspects: slices.Clone(l.suspects)}
}

// failuresOn splits failure descriptions (router_test.go's "... on CELL
// (def ...) at ...: why") into those about instances on cell and the
// others.
func failuresOn(failures []string, cell string) (on, elsewhere []string) {
	for _, f := range failures {
		if strings.Contains(f, " on "+cell+" (def ") {
			on = append(on, f)
		} else {
			elsewhere = append(elsewhere, f)
		}
	}
	return on, elsewhere
}

// chaosHelloLRP is hello-local.json with n instances and the default strategy
// (surge 1, none unavailable), named guid.
func chaosHelloLRP(guid string, n int32) *models.DesiredLRP {
	GinkgoHelper()
	lrp := &models.DesiredLRP{}
	readFixture("hello-local.json", lrp)
	lrp.ProcessGuid = guid
	lrp.Instances = n
	lrp.UpdateStrategy = nil
	return lrp
}

// rollHello starts a rolling update of guid to hello on version (a new
// definition: its VERSION env), surge 1 and none unavailable, each new
// instance ready for minReady before its predecessor goes; it returns
// the new definition's id.
func rollHello(b *board, guid, version string, minReady time.Duration) string {
	GinkgoHelper()
	def := definitionFixture("hello-local-v2-definition.json")
	def.Action.Env = []*models.EnvironmentVariable{{Name: "VERSION", Value: version}}
	lrp, err := b.client().UpdateDesiredLRP(context.Background(), guid, &models.DesiredLRPUpdate{
		Definition:     def,
		UpdateStrategy: &models.UpdateStrategy{MaxSurge: "1", MaxUnavailable: "0", MinReadyMs: minReady.Milliseconds()},
	})
	Expect(err).NotTo(HaveOccurred())
	return lrp.GetActiveDefinitionId()
}

// waitForProgress waits until guid's rollout to definitionID has
// replaced at least n instances and is still under way.
func waitForProgress(b *board, guid, definitionID string, n int32) {
	GinkgoHelper()
	waitForRollout(b, guid, time.Minute, rolloutCondition{fmt.Sprintf("PROGRESSING with %d updated", n), func(s *models.RolloutStatus) bool {
		return s.GetState() == models.RolloutStatus_PROGRESSING && s.GetActiveDefinitionId() == definitionID &&
			s.GetUpdatedInstances() >= n
	}})
}

// completeOn: the rollout to definitionID completed.
func completeOn(definitionID string) rolloutCondition {
	return rolloutCondition{"COMPLETE on " + definitionID, func(s *models.RolloutStatus) bool {
		return complete().ok(s) && s.GetActiveDefinitionId() == definitionID
	}}
}

// cellsOf lists the cell ids of reps.
func cellsOf(reps ...*runningRep) []string {
	var cells []string
	for _, r := range reps {
		cells = append(cells, r.cellID)
	}
	return cells
}

// chaosEntry adds a report entry named "chaos: what" (hack/chaos.sh
// prints report entries).
func chaosEntry(what string, value any) {
	AddReportEntry("chaos: "+what, value, Offset(1))
}

// failureSpan is the time from the first to the last of the router's
// failure descriptions (each starts with its time, time.StampMilli), and
// those two times as written.
func failureSpan(failures []string) (first, last string, span time.Duration) {
	if len(failures) == 0 {
		return "", "", 0
	}
	stamp := func(f string) (string, time.Time) {
		if len(f) < len(time.StampMilli) {
			return f, time.Time{}
		}
		t, err := time.Parse(time.StampMilli, f[:len(time.StampMilli)])
		if err != nil {
			return f, time.Time{}
		}
		return f[:len(time.StampMilli)], t
	}
	first, t0 := stamp(failures[0])
	last, t1 := stamp(failures[len(failures)-1])
	return first, last, t1.Sub(t0)
}

// since is d rounded for a report.
func since(t time.Time) string {
	return time.Since(t).Round(time.Millisecond).String()
}
