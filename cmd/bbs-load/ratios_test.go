package main

import (
	"bytes"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("ratios", func() {
	const log = `## 2026-11-28 old a48ab90 new 734aca9
### peer on postgres, round 1
figure [old] peer.update-annotation [postgres, bin/bbs, 500 LRPs, 2 cores, load 1.00]: 400 ops/s (500 in 1.25s), latency p50 20ms p90 30ms p99 100ms max 120ms (target ≥ 6000 ops/s, p99 < 20ms: MISSED)
figure [new] peer.update-annotation [postgres, bin/bbs, 500 LRPs, 2 cores, load 1.00]: 2400 ops/s (500 in 208ms), latency p50 4ms p90 6ms p99 12ms max 15ms (target ≥ 6000 ops/s, p99 < 20ms: MISSED)
figure [new] peer.steady-pass [postgres, bin/bbs, in-process, 2 cores, load 1.00]: p50 510µs p99 961µs max 1.79ms (target < 15ms: met)
figure [old] peer.db-bytes [postgres, bin/bbs, after the run, 2 cores, load 1.00]: 20000 bytes per LRP (10.0 MB in 13 tables; per LRP: event_log 7372)
figure [new] peer.db-bytes [postgres, bin/bbs, after the run, 2 cores, load 1.00]: 9000 bytes per LRP (4.5 MB in 13 tables; per LRP: event_log 3000)
### peer on postgres, round 2
figure [old] peer.update-annotation [postgres, bin/bbs, 500 LRPs, 2 cores, load 1.00]: 500 ops/s (500 in 1s), latency p50 18ms p90 30ms p99 80ms max 90ms (target ≥ 6000 ops/s: MISSED)
figure [new] peer.update-annotation [postgres, bin/bbs, 500 LRPs, 2 cores, load 1.00]: 2000 ops/s (500 in 250ms), latency p50 5ms p90 6ms p99 16ms max 20ms, board CPU 410µs/op, database CPU 1.2ms/op (target ≥ 6000 ops/s: MISSED)
figure [old] peer.board-rss [sqlite, bin/bbs, 2 cores, load 1.00]: VmHWM 50 MiB over the whole run, VmRSS at the end 49 MiB (target < 60 MiB: met)
figure [new] peer.board-rss [sqlite, bin/bbs, 2 cores, load 1.00]: VmHWM 45 MiB over the whole run, VmRSS at the end 44 MiB (target < 60 MiB: met)
figure peer.desire [postgres, untagged]: 100 req/s
figure [old] converge.repair-pass [postgres, 50000 instances, 2 cores, load 1.00]: 990.04ms until all 4000 writes persisted (snapshot 200ms)
figure [new] converge.repair-pass [postgres, 50000 instances, 2 cores, load 1.00]: 1.5s until all 4000 writes persisted (snapshot 100ms)
`
	var table *ratioTable
	BeforeEach(func() {
		var err error
		table, err = readTaggedFigures(strings.NewReader(log))
		Expect(err).NotTo(HaveOccurred())
	})

	It("reads a rate and the latencies from a figure's value, not from its target", func() {
		k := ratioKey{"postgres", "peer.update-annotation", "p99"}
		Expect(table.old[k]).To(Equal([]float64{100, 80}))
		Expect(table.new[k]).To(Equal([]float64{12, 16}))
		Expect(table.new[ratioKey{"postgres", "peer.update-annotation", "ops/s"}]).To(Equal([]float64{2400, 2000}))
		Expect(table.new[ratioKey{"postgres", "peer.steady-pass", "p50"}]).To(Equal([]float64{0.51}))
		Expect(table.old[ratioKey{"postgres", "peer.db-bytes", "bytes/LRP"}]).To(Equal([]float64{20000}))
		Expect(table.new[ratioKey{"sqlite", "peer.board-rss", "VmHWM MiB"}]).To(Equal([]float64{45}))
		Expect(table.new[ratioKey{"postgres", "converge.repair-pass", "time"}]).To(Equal([]float64{1500}))
		Expect(table.new).NotTo(HaveKey(ratioKey{"postgres", "peer.update-annotation", "time"}))
		Expect(table.new[ratioKey{"postgres", "peer.update-annotation", "board CPU/op"}]).To(Equal([]float64{0.41}))
		Expect(table.new[ratioKey{"postgres", "peer.update-annotation", "database CPU/op"}]).To(Equal([]float64{1.2}))
	})

	It("ignores lines that are not tagged figures", func() {
		for _, k := range table.keys {
			Expect(k.figure).NotTo(Equal("peer.desire"))
		}
	})

	It("pairs each round's new with its old and gives the range of the ratios", func() {
		ratio, rounds := ratioRange(table.old[ratioKey{"postgres", "peer.update-annotation", "ops/s"}], table.new[ratioKey{"postgres", "peer.update-annotation", "ops/s"}])
		Expect(ratio).To(Equal("4.00–6.00×"))
		Expect(rounds).To(Equal(2))
		ratio, rounds = ratioRange([]float64{20000}, []float64{9000})
		Expect(ratio).To(Equal("0.45×"))
		Expect(rounds).To(Equal(1))
	})

	It("prints one row per database, figure and measure, and says which side did not measure one", func() {
		var out bytes.Buffer
		table.print(&out)
		Expect(out.String()).To(MatchRegexp(`postgres\s+peer.update-annotation\s+ops/s\s+4.00–6.00×\s+higher\s+2000–2400\s+400–500\s+2`))
		Expect(out.String()).To(MatchRegexp(`postgres\s+peer.update-annotation\s+p99\s+0.12–0.20×\s+lower\s+12.0–16.0\s+80.0–100\s+2`))
		Expect(out.String()).To(MatchRegexp(`postgres\s+peer.steady-pass\s+p50\s+—\s+0.510\s+not measured\s+0`))
		Expect(out.String()).To(MatchRegexp(`postgres\s+peer.db-bytes\s+bytes/LRP\s+0.45×\s+lower\s+9000\s+20000\s+1`))
		Expect(out.String()).To(MatchRegexp(`sqlite\s+peer.board-rss\s+VmHWM MiB\s+0.90×\s+lower\s+45.0\s+50.0\s+1`))
	})
})
