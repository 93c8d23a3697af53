package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

type loader struct {
	client *client.Client
	// desired counts the instances desired so far, across runs.
	desired atomic.Int64
	nextID  atomic.Int64
	// lrp makes the LRP each desire sends: exampleLRP unless a scenario
	// wants another shape.
	lrp func(guid string, instances int32) *models.DesiredLRP
}

func newLoader(url string, clients int) *loader {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConns = clients * 2
	transport.MaxIdleConnsPerHost = clients * 2
	httpClient := &http.Client{Transport: transport, Timeout: 2 * time.Minute}
	return &loader{client: client.New(url, client.WithHTTPClient(httpClient)), lrp: exampleLRP}
}

type runResult struct {
	count     int
	elapsed   time.Duration
	latencies *latencies
}

func (r runResult) perSecond() float64 { return float64(r.count) / r.elapsed.Seconds() }

// desireAsFastAsPossible sends n single-instance desires from workers
// concurrent clients, each sending its next request as soon as the last
// one is answered.
func (l *loader) desireAsFastAsPossible(ctx context.Context, prefix string, n, workers int) (runResult, error) {
	return l.desireClosedLoop(ctx, prefix, n, workers, 1)
}

func (l *loader) desireClosedLoop(ctx context.Context, prefix string, n, workers int, instances int32) (runResult, error) {
	lat := &latencies{}
	var remaining atomic.Int64
	remaining.Store(int64(n))
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for remaining.Add(-1) >= 0 {
				if err := l.desireOne(ctx, prefix, instances, lat); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return runResult{count: n, elapsed: time.Since(start), latencies: lat}, firstErr
}

// desireAtRate sends desires on a fixed schedule regardless of how fast
// they are answered (an open loop), so latency is measured at that load.
func (l *loader) desireAtRate(ctx context.Context, prefix string, perSecond int, duration time.Duration) (runResult, error) {
	lat := &latencies{}
	interval := time.Second / time.Duration(perSecond)
	total := int(duration / interval)
	var wg sync.WaitGroup
	var failures atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	for i := 0; i < total; i++ {
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.desireOne(ctx, prefix, 1, lat); err != nil {
				failures.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
		}()
	}
	wg.Wait()
	if failures.Load() > 0 {
		return runResult{}, fmt.Errorf("%d of %d desires failed, first: %v", failures.Load(), total, firstErr.Load())
	}
	return runResult{count: total, elapsed: time.Since(start), latencies: lat}, nil
}

func (l *loader) desireOne(ctx context.Context, prefix string, instances int32, lat *latencies) error {
	lrp := l.lrp(fmt.Sprintf("%s-%d", prefix, l.nextID.Add(1)), instances)
	began := time.Now()
	if _, err := l.client.DesireLRP(ctx, lrp); err != nil {
		return fmt.Errorf("desire %s: %w", lrp.ProcessGuid, err)
	}
	lat.add(time.Since(began))
	l.desired.Add(int64(instances))
	return nil
}

// fillActualLRPs desires 5-instance LRPs until at least want actual LRPs exist.
func (l *loader) fillActualLRPs(ctx context.Context, want, workers int) error {
	const perLRP = 5
	missing := want - int(l.desired.Load())
	if missing <= 0 {
		return nil
	}
	lrps := (missing + perLRP - 1) / perLRP
	_, err := l.desireClosedLoop(ctx, "fill", lrps, workers, perLRP)
	return err
}

func (l *loader) listActualLRPs(ctx context.Context, runs int) (*latencies, int, error) {
	lat := &latencies{}
	rows := 0
	for i := 0; i < runs; i++ {
		began := time.Now()
		actual, err := l.client.ActualLRPs(ctx, client.ActualLRPFilter{})
		if err != nil {
			return nil, 0, err
		}
		lat.add(time.Since(began))
		rows = len(actual)
	}
	return lat, rows, nil
}

func exampleLRP(guid string, instances int32) *models.DesiredLRP {
	return &models.DesiredLRP{
		ProcessGuid: guid,
		Domain:      "load",
		Instances:   instances,
		Annotation:  "bbs-load",
		Definition: &models.LRPDefinition{
			Action: &models.RunAction{
				Path: "hello",
				Env:  []*models.EnvironmentVariable{{Name: "VERSION", Value: "v1"}},
			},
			Ports:       []uint32{8080},
			HealthCheck: &models.HealthCheck{Type: models.HealthCheck_HTTP, Port: 8080, Path: "/health"},
			MemoryMb:    64,
			DiskMb:      64,
		},
	}
}
