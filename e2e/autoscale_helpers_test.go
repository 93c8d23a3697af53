package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep"
)

// Helpers of autoscale_e2e_test.go: occupancy through the app, the
// processes the reps run, and samplers that watch them all along.

// ordinaryAt is guid's ORDINARY, RUNNING row at index, waited for.
func ordinaryAt(b *board, guid string, index int32) *models.ActualLRP {
	GinkgoHelper()
	var found *models.ActualLRP
	Eventually(func() error {
		for _, row := range b.lrps(guid) {
			if row.GetIndex() == index && row.GetPresence() == models.ActualLRP_ORDINARY &&
				row.GetState() == models.ActualLRP_RUNNING && len(row.GetNetInfo().GetPorts()) > 0 {
				found = row
				return nil
			}
		}
		return fmt.Errorf("no ORDINARY RUNNING row at index %d in %s", index, describe(b.lrps(guid)))
	}).Should(Succeed())
	return found
}

// setOccupied tells the instance of row, through the app's /occupied or
// /ready, that it is occupied or ready, and waits until the board's row of
// that instance says so.
func setOccupied(b *board, guid string, row *models.ActualLRP, occupied bool) {
	GinkgoHelper()
	path := "/ready"
	if occupied {
		path = "/occupied"
	}
	Expect(post(row, path)).To(Equal(http.StatusNoContent), "POST %s to %s/%d", path, guid, row.GetIndex())
	Eventually(func() (bool, error) {
		rows, err := b.client().ActualLRPs(context.Background(), client.ActualLRPFilter{ProcessGuid: guid})
		if err != nil {
			return false, err
		}
		for _, r := range rows {
			if r.GetInstanceGuid() == row.GetInstanceGuid() {
				return r.GetOccupied(), nil
			}
		}
		return false, fmt.Errorf("instance %s of index %d is gone", row.GetInstanceGuid(), row.GetIndex())
	}).Should(Equal(occupied), "the board's row of %s/%d says occupied=%t", guid, row.GetIndex(), occupied)
}

// occupyIndex marks guid's ORDINARY instance at index occupied and returns
// its row.
func occupyIndex(b *board, guid string, index int32) *models.ActualLRP {
	GinkgoHelper()
	row := ordinaryAt(b, guid, index)
	setOccupied(b, guid, row, true)
	return row
}

// rowOf is the board's row of instanceGuid, waited for.
func rowOf(b *board, guid, instanceGuid string) *models.ActualLRP {
	GinkgoHelper()
	var found *models.ActualLRP
	Eventually(func() error {
		for _, row := range b.lrps(guid) {
			if row.GetInstanceGuid() == instanceGuid {
				found = row
				return nil
			}
		}
		return fmt.Errorf("no row of instance %s", instanceGuid)
	}).Should(Succeed())
	return found
}

// listInstances is every rep's GET /v1/instances for guid, without failing
// the spec (samplers call it from their goroutines).
func listInstances(reps []*runningRep, guid string) ([]rep.InstanceInfo, error) {
	var all []rep.InstanceInfo
	for _, r := range reps {
		resp, err := httpClient.Get(r.url + "/v1/instances")
		if err != nil {
			return nil, err
		}
		var list []rep.InstanceInfo
		err = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		for _, inst := range list {
			if inst.ProcessGuid == guid {
				all = append(all, inst)
			}
		}
	}
	return all, nil
}

// pidOf is the pid of the process that runs instanceGuid, as its rep
// reports it, waited for.
func pidOf(reps []*runningRep, guid, instanceGuid string) int {
	GinkgoHelper()
	pid := 0
	Eventually(func() error {
		list, err := listInstances(reps, guid)
		if err != nil {
			return err
		}
		for _, inst := range list {
			if inst.InstanceGuid == instanceGuid && inst.Pid > 0 {
				pid = inst.Pid
				return nil
			}
		}
		return fmt.Errorf("no rep runs instance %s", instanceGuid)
	}).Should(Succeed())
	return pid
}

// pidWatch checks, every 100 ms, that each tracked instance still runs in
// the same process: its rep reports it with the pid it had when tracked,
// not stopping, and the process is alive.
type pidWatch struct {
	reps []*runningRep
	guid string

	mu         sync.Mutex
	tracked    map[string]int // instance guid → pid
	looks      int
	violations []string

	stopOnce sync.Once
	done     chan struct{}
	finished chan struct{}
}

func watchPids(reps []*runningRep, guid string) *pidWatch {
	w := &pidWatch{reps: reps, guid: guid, tracked: map[string]int{}, done: make(chan struct{}), finished: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(w.finished)
		for {
			select {
			case <-w.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			w.look()
		}
	}()
	DeferCleanup(w.stop)
	return w
}

// track adds an instance and its process.
func (w *pidWatch) track(instanceGuid string, pid int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tracked[instanceGuid] = pid
}

func (w *pidWatch) look() {
	w.mu.Lock()
	tracked := make(map[string]int, len(w.tracked))
	for g, pid := range w.tracked {
		tracked[g] = pid
	}
	w.mu.Unlock()
	if len(tracked) == 0 {
		return
	}
	list, err := listInstances(w.reps, w.guid)
	at := time.Now().Format(time.StampMilli)
	var problems []string
	if err == nil {
		for g, pid := range tracked {
			i := slices.IndexFunc(list, func(inst rep.InstanceInfo) bool { return inst.InstanceGuid == g })
			switch {
			case i < 0:
				problems = append(problems, fmt.Sprintf("%s: instance %s (pid %d) is no longer run by any rep", at, g, pid))
			case list[i].Pid != pid:
				problems = append(problems, fmt.Sprintf("%s: instance %s/%d runs as pid %d, was %d", at, g, list[i].Index, list[i].Pid, pid))
			case list[i].Stopping:
				problems = append(problems, fmt.Sprintf("%s: instance %s/%d (pid %d) is stopping", at, g, list[i].Index, pid))
			}
		}
	}
	// A rep may be slow to answer; the process itself is the truth.
	for g, pid := range tracked {
		if !alive(pid) {
			problems = append(problems, fmt.Sprintf("%s: instance %s's process %d is gone", at, g, pid))
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.looks++
	w.violations = append(w.violations, problems...)
}

// stop ends the watch (after one last look) and returns how many looks it
// took and what it saw wrong.
func (w *pidWatch) stop() (int, []string) {
	w.stopOnce.Do(func() {
		close(w.done)
		<-w.finished
		w.look()
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.looks, slices.Clone(w.violations)
}

// countSample is one look at an autoscaled LRP: the DesiredLRP's instances
// and the rows the board holds for it. rows leaves out those told to stop
// (a RETIRING predecessor whose replacement is ready, an extra being
// stopped), as the rollout's max_surge does (RolloutStrategy.MaxInstances);
// all counts them too.
type countSample struct {
	at        time.Time
	instances int32
	rows      int
	all       int
	detail    string
}

// countSampler reads the DesiredLRP and its rows every 100 ms.
type countSampler struct {
	stopOnce sync.Once
	done     chan struct{}
	finished chan struct{}
	mu       sync.Mutex
	samples  []countSample
}

func sampleCounts(b *board, guid string) *countSampler {
	s := &countSampler{done: make(chan struct{}), finished: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(s.finished)
		api := b.client()
		ctx := context.Background()
		for {
			select {
			case <-s.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			desired, err := api.DesiredLRPByProcessGuid(ctx, guid)
			if err != nil {
				continue
			}
			rows, err := api.ActualLRPs(ctx, client.ActualLRPFilter{ProcessGuid: guid})
			if err != nil {
				continue
			}
			n, all := 0, 0
			var parts []string
			for _, row := range rows {
				if models.IsValidationIndex(row.GetIndex()) {
					continue
				}
				all++
				if !row.GetStopRequested() {
					n++
				}
				parts = append(parts, fmt.Sprintf("%d %s %s stop=%t occupied=%t", row.GetIndex(), row.GetPresence(),
					row.GetState(), row.GetStopRequested(), row.GetOccupied()))
			}
			s.mu.Lock()
			s.samples = append(s.samples, countSample{at: time.Now(), instances: desired.GetInstances(), rows: n, all: all,
				detail: "[" + strings.Join(parts, "; ") + "]"})
			s.mu.Unlock()
		}
	}()
	DeferCleanup(s.stop)
	return s
}

func (s *countSampler) stop() []countSample {
	s.stopOnce.Do(func() { close(s.done); <-s.finished })
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.samples)
}

// failuresSoFar is the router's failed requests up to now, while it goes
// on.
func (r *router) failuresSoFar() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.stats.Failures)
}

// autoscaleOps lists guid's AUTOSCALE operations, each as "STATUS
// history: line | line", and their reasons.
func autoscaleOps(b *board, guid string) (ops []string, reasons []string) {
	GinkgoHelper()
	all, err := b.client().AllOperations(context.Background(), client.OperationFilter{ProcessGuid: guid, Kind: models.Operation_AUTOSCALE})
	Expect(err).NotTo(HaveOccurred())
	for _, op := range all {
		if op.GetKind() != models.Operation_AUTOSCALE {
			continue
		}
		var lines []string
		for _, e := range op.GetHistory() {
			lines = append(lines, e.GetMessage())
		}
		ops = append(ops, op.GetStatus().String()+" history: "+strings.Join(lines, " | "))
		reasons = append(reasons, op.GetReason())
	}
	return ops, reasons
}
