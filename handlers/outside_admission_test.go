package handlers_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/models"
)

// heldDomains is a store whose domain read waits for release, counting
// the reads.
type heldDomains struct {
	db.DomainDB
	reads   atomic.Int32
	release chan struct{}
	once    sync.Once
	err     error
}

// Release lets every read, waiting or to come, end.
func (h *heldDomains) Release() { h.once.Do(func() { close(h.release) }) }

func (h *heldDomains) FreshDomains(ctx context.Context) ([]*models.Domain, error) {
	h.reads.Add(1)
	select {
	case <-h.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return nil, h.err
}

// heldCollector is a collector whose collection waits for release,
// counting the collections.
type heldCollector struct {
	desc     *prometheus.Desc
	collects atomic.Int32
	release  chan struct{}
	once     sync.Once
}

// Release lets every collection, waiting or to come, end.
func (c *heldCollector) Release() { c.once.Do(func() { close(c.release) }) }

func (c *heldCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c *heldCollector) Collect(ch chan<- prometheus.Metric) {
	c.collects.Add(1)
	<-c.release
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1)
}

// entering counts the requests that reached h.
func entering(h http.Handler, entered *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered.Add(1)
		h.ServeHTTP(w, r)
	})
}

type probeAnswer struct {
	status int
	body   string
}

// getAll sends n GETs to url at once, answering on the channel as each ends.
func getAll(url string, n int) <-chan probeAnswer {
	answers := make(chan probeAnswer, n)
	for range n {
		go func() {
			defer GinkgoRecover()
			resp, err := http.Get(url)
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			answers <- probeAnswer{resp.StatusCode, string(body)}
		}()
	}
	return answers
}

// nextAnswer is the next answer to end, failing the spec after 10 s.
func nextAnswer(answers <-chan probeAnswer) probeAnswer {
	GinkgoHelper()
	var a probeAnswer
	Eventually(answers, "10s").Should(Receive(&a))
	return a
}

var _ = Describe("the endpoints outside admission", func() {
	Describe("GET /ready", func() {
		It("answers a burst of probes with one database read", func() {
			store := &heldDomains{release: make(chan struct{})}
			var entered atomic.Int32
			server := httptest.NewServer(entering(handlers.Readiness(store, 5*time.Second, nil), &entered))
			defer server.Close()
			defer store.Release() // before the server waits for its handlers

			const probes = 50
			answers := getAll(server.URL, probes)
			Eventually(entered.Load).Should(BeEquivalentTo(probes))
			Expect(store.reads.Load()).To(BeEquivalentTo(1))
			store.Release()
			for range probes {
				Expect(nextAnswer(answers)).To(Equal(probeAnswer{http.StatusOK, "ready\n"}))
			}
			// A probe that reached the handler but not yet the shared read
			// when it ended starts another: a few at most, never one each.
			Expect(store.reads.Load()).To(BeNumerically("<=", 3))
		})

		It("gives every probe that shared a failed read its reason", func() {
			store := &heldDomains{release: make(chan struct{}), err: models.NewError(models.Error_Unavailable, "database unreachable: read domains: connection refused")}
			var entered atomic.Int32
			server := httptest.NewServer(entering(handlers.Readiness(store, 5*time.Second, nil), &entered))
			defer server.Close()
			defer store.Release() // before the server waits for its handlers

			answers := getAll(server.URL, 5)
			Eventually(entered.Load).Should(BeEquivalentTo(5))
			store.Release()
			for range 5 {
				a := nextAnswer(answers)
				Expect(a.status).To(Equal(http.StatusServiceUnavailable))
				Expect(a.body).To(HavePrefix("database unreachable"))
			}
		})

		It("answers 503 at once, without a read, while the database watch sees an outage", func() {
			store := &heldDomains{release: make(chan struct{})}
			defer store.Release()
			since := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
			var ongoing atomic.Bool
			ongoing.Store(true)
			server := httptest.NewServer(handlers.Readiness(store, 5*time.Second, func() (time.Time, bool) { return since, ongoing.Load() }))
			defer server.Close()

			answers := getAll(server.URL, 1)
			Expect(nextAnswer(answers)).To(Equal(probeAnswer{http.StatusServiceUnavailable,
				"database unreachable: no answer in time since 2026-12-03T10:00:00Z (the board's database watch)\n"}))
			Expect(store.reads.Load()).To(BeZero(), "a read the frozen database would hold")

			ongoing.Store(false)
			store.Release()
			Expect(nextAnswer(getAll(server.URL, 1))).To(Equal(probeAnswer{http.StatusOK, "ready\n"}))
		})
	})

	Describe("GET /metrics", func() {
		It("answers at most MaxScrapesInFlight scrapes at once, sharing one gathering, and refuses one more at once", func() {
			registry := prometheus.NewRegistry()
			collector := &heldCollector{desc: prometheus.NewDesc("held_total", "a held gauge", nil, nil), release: make(chan struct{})}
			registry.MustRegister(collector)
			var entered atomic.Int32
			server := httptest.NewServer(entering(handlers.Metrics(registry), &entered))
			defer server.Close()
			defer collector.Release() // before the server waits for its handlers

			scrapes := handlers.MaxScrapesInFlight + 1
			answers := getAll(server.URL, scrapes)
			// With every slot held by a scrape waiting on the held
			// gathering, exactly one of them is refused, before any
			// gathering ends.
			refused := nextAnswer(answers)
			Expect(refused.status).To(Equal(http.StatusServiceUnavailable))
			Expect(refused.body).To(ContainSubstring("Limit of concurrent requests reached"))
			Expect(entered.Load()).To(BeEquivalentTo(scrapes))
			Consistently(answers, "100ms").ShouldNot(Receive())
			Expect(collector.collects.Load()).To(BeEquivalentTo(1))

			collector.Release()
			for range handlers.MaxScrapesInFlight {
				a := nextAnswer(answers)
				Expect(a.status).To(Equal(http.StatusOK))
				Expect(strings.Contains(a.body, "held_total 1")).To(BeTrue(), a.body)
			}
			Expect(collector.collects.Load()).To(BeNumerically("<=", 3))
		})
	})
})
