package handlers_test

import (
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("GET /metrics", func() {
	// served is a registry with one series naming a cell, as the board's
	// series do.
	served := func() *prometheus.Registry {
		registry := prometheus.NewRegistry()
		gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "spec_cell_series", Help: "a series naming a cell"}, []string{"cell"})
		gauge.WithLabelValues("cell-2").Set(1)
		registry.MustRegister(gauge)
		return registry
	}
	scrape := func(b *board) (int, string) {
		GinkgoHelper()
		req, err := http.NewRequest(http.MethodGet, b.server.URL+handlers.MetricsPath, nil)
		Expect(err).NotTo(HaveOccurred())
		resp, body := b.do(req)
		return resp.StatusCode, string(body)
	}

	DescribeTable("over TLS, answers API clients and operators, and refuses every other identity with a 403: a cell learns nothing of other cells there",
		func(who string, allowed bool) {
			b := newTLSBoard(authStore, jsonWire, handlers.WithMetrics(served()))
			status, body := scrape(b.asIdentity(who))
			if allowed {
				Expect(status).To(Equal(http.StatusOK))
				Expect(body).To(ContainSubstring(`spec_cell_series{cell="cell-2"} 1`))
				return
			}
			Expect(status).To(Equal(http.StatusForbidden))
			Expect(body).NotTo(ContainSubstring("cell-2"))
			refusal := jsonError([]byte(body))
			Expect(refusal.GetType()).To(Equal(models.Error_Unauthorized))
			Expect(refusal.GetMessage()).To(Equal(refusalFor(who, policyCase{route: handlers.MetricsPath})))
			Expect(b.unauthorizedCount(handlers.MetricsPath, string(identityOf(who).Role))).To(BeEquivalentTo(1))
		},
		Entry("api-client", asAPIClient, true),
		Entry("operator", asOperator, true),
		Entry("cell-1", asCell1, false),
		Entry("the board's certificate", asBoard, false),
		Entry("a certificate naming no role", asNoRole, false),
		Entry("a certificate naming two identities", asTwoRoles, false),
	)

	It("answers anyone without TLS (development mode), and no one without a certificate when certificates are required", func() {
		status, body := scrape(newBoardWith(authStore, jsonWire, handlers.WithMetrics(served())))
		Expect(status).To(Equal(http.StatusOK))
		Expect(body).To(ContainSubstring("spec_cell_series"))

		status, body = scrape(newBoardWith(authStore, jsonWire, handlers.WithMetrics(served()), handlers.WithRequiredClientCertificates()))
		Expect(status).To(Equal(http.StatusForbidden))
		Expect(jsonError([]byte(body)).GetMessage()).To(Equal("a request without a verified client certificate may not call /metrics"))
	})

	It("is not served without WithMetrics", func() {
		status, _ := scrape(newBoardWith(authStore, jsonWire))
		Expect(status).To(Equal(http.StatusNotFound))
	})
})
