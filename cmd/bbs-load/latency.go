package main

import (
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// latencies collects request durations from many goroutines.
type latencies struct {
	mu      sync.Mutex
	samples []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.samples = append(l.samples, d)
	l.mu.Unlock()
}

func (l *latencies) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.samples)
}

func (l *latencies) percentile(p float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.samples) == 0 {
		return 0
	}
	sorted := append([]time.Duration(nil), l.samples...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	i := int(float64(len(sorted)-1) * p)
	return sorted[i]
}

func (l *latencies) summary() string {
	return fmt.Sprintf("p50 %s p90 %s p99 %s max %s",
		round(l.percentile(0.50)), round(l.percentile(0.90)), round(l.percentile(0.99)), round(l.percentile(1)))
}

func round(d time.Duration) time.Duration {
	switch {
	case d > time.Second:
		return d.Round(time.Millisecond)
	case d > time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

func numCPU() int { return runtime.NumCPU() }

// firstError keeps the first error of many goroutines.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (f *firstError) set(err error) {
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
}

func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// eachConcurrently calls do(0) … do(n-1), each once, from clients
// goroutines taking the next index in turn, and returns the first error;
// after one, no new index is taken.
func eachConcurrently(clients, n int, do func(i int) error) error {
	var next atomic.Int64
	var failed firstError
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for failed.get() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := do(i); err != nil {
					failed.set(err)
				}
			}
		})
	}
	wg.Wait()
	return failed.get()
}
