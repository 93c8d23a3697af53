package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"code.cloudfoundry.org/lager/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
	"github.com/corkboard/corkboard/models"
)

// The HTTP conventions do not depend on the database, so they run on SQLite.
var _ = Describe("HTTP conventions", func() {
	var (
		b      *board
		guid   string
		domain string
	)

	BeforeEach(func() {
		b = newBoard(stores[testdb.SQLite], jsonWire)
		guid = randomName("lrp")
		domain = randomName("domain")
	})

	Describe("JSON", func() {
		It("answers in JSON with the proto field names, and a typed error as {error: {type, message}}", func() {
			resp, body := b.postRaw(models.RouteDesireDesiredLRP, "application/json", desireJSON(guid, domain, `"instances": 1`))
			Expect(resp.StatusCode).To(Equal(http.StatusOK))
			Expect(resp.Header.Get("Content-Type")).To(Equal("application/json"))
			var desired struct {
				DesiredLRP  map[string]any `json:"desired_lrp"`
				OperationID string         `json:"operation_id"`
			}
			Expect(json.Unmarshal(body, &desired)).To(Succeed(), "body: %s", body)
			Expect(desired.DesiredLRP).To(HaveKeyWithValue("process_guid", guid))
			Expect(desired.DesiredLRP).To(HaveKey("active_definition_id"))
			Expect(desired.OperationID).To(MatchRegexp(`^[0-9a-f]{24}$`))

			resp, body = b.postRaw(models.RouteDesireDesiredLRP, "application/json", desireJSON(guid, domain, `"instances": 1`))
			Expect(resp.StatusCode).To(Equal(http.StatusOK))
			var failed map[string]map[string]string
			Expect(json.Unmarshal(body, &failed)).To(Succeed(), "body: %s", body)
			Expect(failed["error"]).To(HaveKeyWithValue("type", "ResourceExists"))
			Expect(failed["error"]["message"]).NotTo(BeEmpty())
		})

		It("accepts lowerCamelCase field names and a charset parameter", func() {
			body := `{"desiredLrp": {"processGuid": "` + guid + `", "domain": "` + domain + `", "instances": 2, "definition": {"action": {"path": "/bin/app"}, "memoryMb": 64}}}`
			resp := &models.DesireLRPResponse{}
			b.postDecode(models.RouteDesireDesiredLRP, "application/json; charset=utf-8", []byte(body), resp)
			Expect(resp.GetError()).To(BeNil())
			Expect(b.mustGet(guid).GetDefinition().GetMemoryMb()).To(BeEquivalentTo(64))
		})

		It("takes an empty body as the empty message", func() {
			resp := &models.PingResponse{}
			b.postDecode(models.RoutePing, "application/json", nil, resp)
			Expect(resp.GetAvailable()).To(BeTrue())
		})
	})

	It("speaks protobuf when no Content-Type is sent", func() {
		request, err := proto.Marshal(&models.DesiredLRPByProcessGuidRequest{ProcessGuid: guid})
		Expect(err).NotTo(HaveOccurred())
		resp, body := b.postRaw(models.RouteDesiredLRPByProcessGuid, "", request)
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		Expect(resp.Header.Get("Content-Type")).To(Equal(models.ContentTypeProtobuf))
		answer := &models.DesiredLRPResponse{}
		Expect(proto.Unmarshal(body, answer)).To(Succeed())
		Expect(answer.GetError().GetType()).To(Equal(models.Error_ResourceNotFound))
	})

	It("answers a Content-Type it does not speak with 415 and a JSON InvalidRequest", func() {
		resp, body := b.postRaw(models.RouteDesireDesiredLRP, "application/x-www-form-urlencoded", desireJSON(guid, domain, `"instances": 1`))
		Expect(resp.StatusCode).To(Equal(http.StatusUnsupportedMediaType))
		answer := &models.DesireLRPResponse{}
		Expect(jsonWire.unmarshal(body, answer)).To(Succeed(), "body: %s", body)
		Expect(answer.GetError().GetType()).To(Equal(models.Error_InvalidRequest))
		Expect(answer.GetError().GetMessage()).To(HavePrefix("Content-Type:"))
		Expect(b.counter(models.RouteDesireDesiredLRP, "InvalidRequest")).To(BeEquivalentTo(1))
		b.expectNothingDesired(guid, domain)
	})

	It("answers another method with 405, Allow: POST and a typed error, and does not act", func() {
		req, err := http.NewRequest(http.MethodPut, b.server.URL+models.RouteDesireDesiredLRP, strings.NewReader(string(desireJSON(guid, domain, `"instances": 1`))))
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Content-Type", "application/json")
		resp, body := b.do(req)
		Expect(resp.StatusCode).To(Equal(http.StatusMethodNotAllowed))
		Expect(resp.Header.Get("Allow")).To(Equal("POST"))
		answer := &models.DesireLRPResponse{}
		Expect(jsonWire.unmarshal(body, answer)).To(Succeed(), "body: %s", body)
		Expect(answer.GetError().GetType()).To(Equal(models.Error_InvalidRequest))
		Expect(answer.GetError().GetMessage()).To(ContainSubstring("PUT"))
		b.expectNothingDesired(guid, domain)

		Expect(b.counter(models.RouteDesireDesiredLRP, "InvalidRequest")).To(BeEquivalentTo(1))

		By("answering a bare GET, as from a browser, in JSON")
		get, err := http.NewRequest(http.MethodGet, b.server.URL+models.RoutePing, nil)
		Expect(err).NotTo(HaveOccurred())
		resp, body = b.do(get)
		Expect(resp.StatusCode).To(Equal(http.StatusMethodNotAllowed))
		Expect(resp.Header.Get("Content-Type")).To(Equal("application/json"))
		Expect(string(body)).To(ContainSubstring(`"type":"InvalidRequest"`))
	})

	It("answers an unknown path with 404 and a typed error", func() {
		resp, body := b.postRaw("/v1/desired_lrps/explode", "application/json", []byte(`{}`))
		Expect(resp.StatusCode).To(Equal(http.StatusNotFound))
		answer := &models.DesiredLRPResponse{}
		Expect(jsonWire.unmarshal(body, answer)).To(Succeed(), "body: %s", body)
		Expect(answer.GetError().GetType()).To(Equal(models.Error_InvalidRequest))
		Expect(answer.GetError().GetMessage()).To(ContainSubstring("/v1/desired_lrps/explode"))
		Expect(b.counter("unmatched", "InvalidRequest")).To(BeEquivalentTo(1))
	})

	Describe("request ids", func() {
		It("echoes the caller's X-Request-Id and logs the call under it", func() {
			req, err := http.NewRequest(http.MethodPost, b.server.URL+models.RouteDesireDesiredLRP, strings.NewReader(string(desireJSON(guid, domain, `"instances": 1`))))
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Request-Id", "trace-me-42")
			resp, _ := b.do(req)
			Expect(resp.Header.Get("X-Request-Id")).To(Equal("trace-me-42"))

			served := logsWith(b.logger.Logs(), "request_id", "trace-me-42")
			Expect(served).To(HaveLen(1))
			Expect(served[0].Data).To(HaveKeyWithValue("route", models.RouteDesireDesiredLRP))
			Expect(served[0].Data).To(HaveKeyWithValue("outcome", "success"))
			Expect(served[0].LogLevel).To(Equal(lager.INFO))
		})

		It("makes up a fresh id when the caller sends none, or one not fit for a log line", func() {
			resp, _ := b.postRaw(models.RoutePing, "application/json", nil)
			first := resp.Header.Get("X-Request-Id")
			Expect(first).To(MatchRegexp(`^[0-9a-f]{32}$`))
			resp, _ = b.postRaw(models.RoutePing, "application/json", nil)
			Expect(resp.Header.Get("X-Request-Id")).NotTo(Equal(first))

			req, err := http.NewRequest(http.MethodPost, b.server.URL+models.RoutePing, nil)
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("X-Request-Id", strings.Repeat("x", 500))
			resp, _ = b.do(req)
			Expect(resp.Header.Get("X-Request-Id")).To(MatchRegexp(`^[0-9a-f]{32}$`))
		})

		It("logs a failed call with its outcome and error message", func() {
			resp, _ := b.postRaw(models.RouteDesiredLRPByProcessGuid, "application/json", []byte(`{"process_guid": "bad guid!"}`))
			id := resp.Header.Get("X-Request-Id")
			failed := logsWith(b.logger.Logs(), "request_id", id)
			Expect(failed).To(HaveLen(1))
			Expect(failed[0].Data).To(HaveKeyWithValue("outcome", "InvalidRequest"))
			Expect(failed[0].Data["error"]).To(HavePrefix("process_guid:"))
		})
	})

	Describe("metrics", func() {
		It("counts requests by route and outcome and times them by route", func() {
			Expect(b.counter(models.RouteDesireDesiredLRP, "success")).To(BeZero())

			b.mustDesire(newLRP(guid, domain, 1))
			Expect(b.counter(models.RouteDesireDesiredLRP, "success")).To(BeEquivalentTo(1))

			Expect(b.desire(newLRP(guid, domain, 1)).GetError().GetType()).To(Equal(models.Error_ResourceExists))
			Expect(b.counter(models.RouteDesireDesiredLRP, "ResourceExists")).To(BeEquivalentTo(1))

			Expect(b.desire(newLRP("bad guid!", domain, 1)).GetError().GetType()).To(Equal(models.Error_InvalidRequest))
			Expect(b.counter(models.RouteDesireDesiredLRP, "InvalidRequest")).To(BeEquivalentTo(1))
			Expect(b.counter(models.RouteDesireDesiredLRP, "success")).To(BeEquivalentTo(1))

			Expect(b.latencySamples(models.RouteDesireDesiredLRP)).To(BeEquivalentTo(3))
			Expect(b.latencySamples(models.RouteDesiredLRPs)).To(BeZero())

			b.list(&models.DesiredLRPsRequest{Domain: domain})
			Expect(b.counter(models.RouteDesiredLRPs, "success")).To(BeEquivalentTo(1))
			Expect(b.latencySamples(models.RouteDesiredLRPs)).To(BeEquivalentTo(1))
		})

		It("shares its series between two handlers on one registry", func() {
			Expect(func() { handlers.New(b.logger, stores[testdb.SQLite], b.registry) }).NotTo(Panic())
		})
	})

	Describe("requests a browser sends from another origin", func() {
		// What a page elsewhere can make a browser send: a POST with a body
		// and no Content-Type (the API takes it for protobuf), carrying the
		// browser's Origin and Sec-Fetch-Site — and, to a board with mutual
		// TLS, the client certificate the browser holds.
		forged := func(headers map[string]string) (*http.Response, []byte) {
			body, err := proto.Marshal(&models.DesireLRPRequest{DesiredLrp: newLRP(guid, domain, 1)})
			Expect(err).NotTo(HaveOccurred())
			req, err := http.NewRequest(http.MethodPost, b.server.URL+models.RouteDesireDesiredLRP, strings.NewReader(string(body)))
			Expect(err).NotTo(HaveOccurred())
			for name, value := range headers {
				req.Header.Set(name, value)
			}
			return b.do(req)
		}

		DescribeTable("are refused with Unauthorized and write nothing",
			func(headers map[string]string) {
				resp, body := forged(headers)
				Expect(resp.StatusCode).To(Equal(http.StatusForbidden))
				var refused map[string]map[string]string
				Expect(json.Unmarshal(body, &refused)).To(Succeed(), "body: %s", body)
				Expect(refused["error"]).To(HaveKeyWithValue("type", "Unauthorized"))
				Expect(refused["error"]["message"]).To(HavePrefix("origin: "))
				Expect(b.get(guid).GetError().GetType()).To(Equal(models.Error_ResourceNotFound), "nothing was desired")
			},
			Entry("Sec-Fetch-Site cross-site", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}),
			Entry("Sec-Fetch-Site same-site (another port or subdomain)", map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:9999"}),
			Entry("an Origin of another host, from a browser without Sec-Fetch-Site", map[string]string{"Origin": "https://evil.example"}),
		)

		It("lets the dashboard's own calls (same origin) and programs (no such headers) through", func() {
			resp, body := forged(map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": b.server.URL})
			Expect(resp.StatusCode).To(Equal(http.StatusOK), "body: %s", body)
			Expect(b.mustGet(guid).GetProcessGuid()).To(Equal(guid))

			other := randomName("lrp")
			Expect(b.desire(newLRP(other, domain, 1)).GetError()).To(BeNil())
		})
	})

	Describe("ping", func() {
		It("is unavailable when the database is not", func() {
			database, err := testdb.Create(testdb.SQLite)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(database.Drop)
			conn, err := sqldb.Open(context.Background(), testdb.SQLite, database.DSN)
			Expect(err).NotTo(HaveOccurred())
			Expect(migrations.Up(context.Background(), conn, testdb.SQLite)).To(Succeed())
			down := newBoard(sqldb.New(conn, testdb.SQLite), jsonWire)

			resp := &models.PingResponse{}
			down.call(models.RoutePing, &models.PingRequest{}, resp)
			Expect(resp.GetAvailable()).To(BeTrue())

			Expect(conn.Close()).To(Succeed())
			unavailable := &models.PingResponse{}
			down.call(models.RoutePing, &models.PingRequest{}, unavailable)
			Expect(unavailable.GetAvailable()).To(BeFalse())
			Expect(unavailable.GetError().GetType()).To(Equal(models.Error_Unavailable))
			Expect(unavailable.GetError().GetMessage()).To(HavePrefix("database:"))
		})
	})
})

func logsWith(logs []lager.LogFormat, key, value string) []lager.LogFormat {
	var found []lager.LogFormat
	for _, l := range logs {
		if l.Data[key] == value {
			found = append(found, l)
		}
	}
	return found
}
