package executor_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep/executor"
	"github.com/corkboard/corkboard/rep/isolation"
)

// BenchmarkStartLatency times an instance's start, from Run to its Healthy
// event (its HTTP check passed), isolated and not, alternating the two in
// one run so that both see the same machine. Each op is one start of
// each; the metrics are their medians and means, and isolated/plain. Run
// as root (isolation needs it): make bench runs it with -benchtime 50x.
//
// The starting instance is checked every 2ms, so that the figures are
// the start's own cost, not rounded up to a check.
func BenchmarkStartLatency(b *testing.B) {
	benchmarkStartLatency(b, 2*time.Millisecond)
}

// BenchmarkStartLatencyDefaultChecks is the same with the rep's default
// check interval while an instance starts: what a user waits for.
func BenchmarkStartLatencyDefaultChecks(b *testing.B) {
	benchmarkStartLatency(b, executor.DefaultStartCheckInterval)
}

func benchmarkStartLatency(b *testing.B, checkInterval time.Duration) {
	if os.Geteuid() != 0 {
		b.Skip("isolating instances needs root")
	}
	hello, err := gexec.Build("github.com/corkboard/corkboard/fixtures/apps/hello")
	if err != nil {
		b.Fatal(err)
	}
	defer gexec.CleanupBuildArtifacts()
	apps := filepath.Dir(hello)
	if err := os.Chmod(apps, 0o755); err != nil {
		b.Fatal(err)
	}

	newExecutor := func(mode isolation.Mode, firstPort uint32) *executor.Executor {
		exe, err := executor.NewExecutor(executor.ExecutorConfig{
			CellID:  "bench",
			DataDir: b.TempDir(),
			AppsDir: apps,
			PortMin: firstPort, PortMax: firstPort + 9,
			StartCheckInterval: checkInterval,
			Isolation:          isolation.Config{Mode: mode},
		})
		if err != nil {
			b.Fatal(err)
		}
		if exe.Isolation() != mode {
			b.Fatalf("asked for isolation %q, got %q", mode, exe.Isolation())
		}
		return exe
	}
	full, plain := newExecutor(isolation.Full, 41000), newExecutor(isolation.None, 41010)
	defer full.Shutdown()
	defer plain.Shutdown()

	def := &models.LRPDefinition{
		DefinitionId:   "v1",
		Action:         &models.RunAction{Path: "./hello"},
		Ports:          []uint32{8080},
		HealthCheck:    &models.HealthCheck{Type: models.HealthCheck_HTTP, Port: 8080, Path: "/health"},
		StartTimeoutMs: 30000,
	}
	// start runs one instance to Healthy, then stops it; it returns how
	// long Run took to Healthy.
	start := func(exe *executor.Executor, guid string) time.Duration {
		began := time.Now()
		if _, err := exe.Run(executor.InstanceSpec{ProcessGuid: "bench", InstanceGuid: guid, Definition: def}); err != nil {
			b.Fatal(err)
		}
		ev := <-exe.Events()
		took := time.Since(began)
		if ev.Kind != executor.Healthy {
			b.Fatalf("%s: %s: %s", guid, ev.Kind, ev.Reason)
		}
		if err := exe.Stop(guid); err != nil {
			b.Fatal(err)
		}
		if ev := <-exe.Events(); ev.Kind != executor.Exited {
			b.Fatalf("%s: %s: %s", guid, ev.Kind, ev.Reason)
		}
		return took
	}

	var isolated, notIsolated []time.Duration
	b.ResetTimer()
	for i := range b.N {
		// Alternate which goes first, so neither always follows the other.
		if i%2 == 0 {
			isolated = append(isolated, start(full, fmt.Sprintf("full-%d", i)))
			notIsolated = append(notIsolated, start(plain, fmt.Sprintf("none-%d", i)))
		} else {
			notIsolated = append(notIsolated, start(plain, fmt.Sprintf("none-%d", i)))
			isolated = append(isolated, start(full, fmt.Sprintf("full-%d", i)))
		}
	}
	b.StopTimer()
	medianFull, medianNone := median(isolated), median(notIsolated)
	b.ReportMetric(ms(medianFull), "full-median-ms")
	b.ReportMetric(ms(medianNone), "none-median-ms")
	b.ReportMetric(ms(mean(isolated)), "full-mean-ms")
	b.ReportMetric(ms(mean(notIsolated)), "none-mean-ms")
	b.ReportMetric(float64(medianFull)/float64(medianNone), "full/none-median")
}

func median(d []time.Duration) time.Duration {
	sorted := append([]time.Duration(nil), d...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	return sorted[len(sorted)/2]
}

func mean(d []time.Duration) time.Duration {
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return sum / time.Duration(len(d))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
