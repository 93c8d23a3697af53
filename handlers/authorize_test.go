package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"code.cloudfoundry.org/lager/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/convergence/runner"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/models"
)

// answer is what the board said to one request: its status and, unless
// it opened an event stream, the response's error.
type answer struct {
	status int
	stream bool
	err    *models.Error
	// logs are the log lines of the request, by its id.
	logs []lager.LogFormat
}

// callRaw posts req to route in JSON. An event stream is closed as soon as
// its headers are in.
func (b *board) callRaw(route string, req proto.Message) answer {
	GinkgoHelper()
	body, err := jsonWire.marshal(req)
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, b.server.URL+route, bytes.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	httpReq.Header.Set("Content-Type", models.ContentTypeJSON)
	resp, err := b.client.Do(httpReq)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	got := answer{status: resp.StatusCode}
	requestID := resp.Header.Get(handlers.RequestIDHeader)
	if resp.Header.Get("Content-Type") == handlers.ContentTypeEventStream {
		got.stream = true
		cancel()
		// The board logs a stream once it ends.
		Eventually(func() []lager.LogFormat { return logsWith(b.logger.Logs(), "request_id", requestID) }).ShouldNot(BeEmpty())
	} else {
		raw, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		got.err = jsonError(raw)
	}
	got.logs = logsWith(b.logger.Logs(), "request_id", requestID)
	return got
}

// jsonError is the error of a JSON answer; nil when it has none.
func jsonError(body []byte) *models.Error {
	GinkgoHelper()
	var fields map[string]json.RawMessage
	Expect(json.Unmarshal(body, &fields)).To(Succeed(), "body: %s", body)
	raw, ok := fields["error"]
	if !ok {
		return nil
	}
	modelErr := &models.Error{}
	Expect(protojson.Unmarshal(raw, modelErr)).To(Succeed())
	return modelErr
}

// unauthorizedCount is corkboard_http_unauthorized_total{route, identity}.
func (b *board) unauthorizedCount(route, identity string) float64 {
	GinkgoHelper()
	for _, m := range b.metricFamily("corkboard_http_unauthorized_total") {
		if label(m, "route") == route && label(m, "identity") == identity {
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// setUpFixture puts on the authorization specs' store what the policy
// cases act on: cell-1 and cell-2 registered (not draining), an LRP of two
// instances on cell-1, index 0 RUNNING as instanceGuid, index 1 placed
// and not yet claimed.
func setUpFixture(b *board) fixture {
	GinkgoHelper()
	ctx := context.Background()
	f := fixture{guid: randomName("web"), otherGuid: randomName("worker"), domain: randomName("domain")}
	for _, cell := range []string{cell1, cell2} {
		_, err := authStore.HeartbeatCell(ctx, registerRequest(cell).GetCell(), time.Minute, true)
		Expect(err).NotTo(HaveOccurred())
	}
	desired := b.asIdentity(asOperator).desire(newLRP(f.guid, f.domain, 2))
	Expect(desired.GetError()).To(BeNil())
	f.definitionID = desired.GetDesiredLrp().GetActiveDefinitionId()
	f.operationID = desired.GetOperationId()

	running := models.ActualLRPKey{ProcessGuid: f.guid, Index: 0, Presence: models.ActualLRP_ORDINARY}
	place(authStore, running, cell1)
	place(authStore, models.ActualLRPKey{ProcessGuid: f.guid, Index: 1, Presence: models.ActualLRP_ORDINARY}, cell1)
	owner := models.Caller{InstanceGuid: instanceGuid, CellID: cell1}
	_, err := authStore.ClaimActualLRP(ctx, running, owner)
	Expect(err).NotTo(HaveOccurred())
	_, err = authStore.StartActualLRP(ctx, running, owner, netInfo(), true)
	Expect(err).NotTo(HaveOccurred())
	return f
}

// boardState renders everything a policy case could write, so that two
// renderings differ when anything was written.
func boardState(f fixture) string {
	GinkgoHelper()
	ctx := context.Background()
	var out strings.Builder
	show := func(what string, err error, messages ...proto.Message) {
		out.WriteString(what + ":")
		if err != nil {
			out.WriteString(" error " + err.Error())
		}
		for _, m := range messages {
			out.WriteString(" {" + prototext.MarshalOptions{}.Format(m) + "}")
		}
		out.WriteString("\n")
	}
	for _, guid := range []string{f.guid, f.otherGuid} {
		lrp, err := authStore.DesiredLRPByProcessGuid(ctx, guid)
		show("desired "+guid, err, lrp)
		rows, err := authStore.ActualLRPs(ctx, db.ActualLRPFilter{ProcessGuid: guid})
		show("actual "+guid, err, messages(rows)...)
		operations, _, err := authStore.Operations(ctx, db.OperationFilter{ProcessGuid: guid})
		show("operations "+guid, err, messages(operations)...)
		definitions, err := authStore.Definitions(ctx, guid)
		show("definitions "+guid, err, messages(definitions)...)
		status, err := authStore.RolloutStatus(ctx, guid)
		show("rollout "+guid, err, status)
	}
	cells, err := authStore.Cells(ctx)
	cells = slices.DeleteFunc(cells, func(c *models.Cell) bool { return c.GetCellId() != cell1 && c.GetCellId() != cell2 })
	show("cells", err, messages(cells)...)
	domains, err := authStore.FreshDomains(ctx)
	domains = slices.DeleteFunc(domains, func(d *models.Domain) bool { return !strings.HasPrefix(d.GetDomain(), f.domain) })
	show("domains", err, messages(domains)...)
	return out.String()
}

func messages[M proto.Message](list []M) []proto.Message {
	var out []proto.Message
	for _, m := range list {
		out = append(out, m)
	}
	return out
}

var _ = Describe("Authorization by client certificate", func() {
	var b *board

	BeforeEach(func() {
		b = newTLSBoard(authStore, jsonWire, handlers.WithEvents(newHub()),
			handlers.WithRolloutPlanner(runner.NewRolloutPlanner(authStore, runner.RunnerConfig{}).Plan))
	})

	var entries []TableEntry
	for _, c := range policyCases {
		for _, who := range everyIdentity {
			allowed := slices.Contains(c.allowed, who)
			verdict := "refused"
			if allowed {
				verdict = "allowed"
			}
			entries = append(entries, Entry(who+" "+verdict+": "+c.name+" ("+c.route+")", who, c, allowed))
		}
	}
	DescribeTable("over TLS, (identity, route, request) is allowed or Unauthorized with nothing written",
		func(who string, c policyCase, allowed bool) {
			f := setUpFixture(b)
			before := boardState(f)
			role := string(identityOf(who).Role)

			got := b.asIdentity(who).callRaw(c.route, c.request(f))
			Expect(got.status).To(Equal(http.StatusOK))
			Expect(got.logs).To(HaveLen(1))

			if allowed {
				Expect(got.err.GetType()).NotTo(Equal(models.Error_Unauthorized), "error: %v", got.err)
				Expect(got.stream).To(Equal(c.route == models.RouteEvents), "an allowed subscription gets a stream")
				Expect(got.logs[0].Message).To(HaveSuffix(".served"))
				Expect(b.unauthorizedCount(c.route, role)).To(BeZero())
				return
			}
			Expect(got.stream).To(BeFalse())
			Expect(got.err.GetType()).To(Equal(models.Error_Unauthorized), "error: %v", got.err)
			Expect(got.err.GetMessage()).To(Equal(refusalFor(who, c)))
			Expect(boardState(f)).To(Equal(before), "a refused request wrote")

			Expect(got.logs[0].Message).To(HaveSuffix(".unauthorized"))
			Expect(got.logs[0].Data).To(HaveKeyWithValue("identity", role))
			Expect(got.logs[0].Data).To(HaveKeyWithValue("error", refusalFor(who, c)))
			if cellID := identityOf(who).CellID; cellID != "" {
				Expect(got.logs[0].Data).To(HaveKeyWithValue("cell_id", cellID))
			}
			Expect(b.unauthorizedCount(c.route, role)).To(BeEquivalentTo(1))
			Expect(b.counter(c.route, "Unauthorized")).To(BeEquivalentTo(1))
		},
		entries,
	)

	It("lets a cell's writes through only for itself: cell-2 cannot claim cell-1's instance in cell-1's name", func() {
		f := setUpFixture(b)
		claim := &models.ClaimActualLRPRequest{ProcessGuid: f.guid, Index: 1, InstanceGuid: instanceGuid, CellId: cell1}

		refused := b.asIdentity(asCell2).callRaw(models.RouteClaimActualLRP, claim)
		Expect(refused.err.GetType()).To(Equal(models.Error_Unauthorized))
		Expect(refused.err.GetMessage()).To(Equal(`cell "cell-2" may not act for cell "cell-1" on /v1/actual_lrps/claim`))
		rows := b.asIdentity(asOperator).actualLRPs(&models.ActualLRPsRequest{ProcessGuid: f.guid, Index: proto.Int32(1)})
		Expect(rows[0].GetState()).To(Equal(models.ActualLRP_UNCLAIMED))

		claimed := b.asIdentity(asCell1).callRaw(models.RouteClaimActualLRP, claim)
		Expect(claimed.err).To(BeNil())
		rows = b.asIdentity(asOperator).actualLRPs(&models.ActualLRPsRequest{ProcessGuid: f.guid, Index: proto.Int32(1)})
		Expect(rows[0].GetState()).To(Equal(models.ActualLRP_CLAIMED))
	})

	It("refuses a caller the route is not for before it decodes what it sent", func() {
		// A megabyte of empty bulk-report instances decodes to some
		// hundred megabytes; a role that may not report never gets there.
		body := append([]byte{0x0a, 0x06, 'c', 'e', 'l', 'l', '-', '1'}, bytes.Repeat([]byte{0x12, 0x00}, 500_000)...)
		for _, who := range []string{asNoRole, asAPIClient, asOperator, asBoard} {
			resp, answer := b.asIdentity(who).postRaw(models.RouteBulkReport, "application/x-protobuf", body)
			Expect(resp.StatusCode).To(Equal(http.StatusOK), who)
			report := &models.BulkReportResponse{}
			Expect(proto.Unmarshal(answer, report)).To(Succeed(), who)
			Expect(report.GetError().GetType()).To(Equal(models.Error_Unauthorized), "%s: %v", who, report.GetError())
			Expect(report.GetError().GetMessage()).To(HaveSuffix(" may not call /v1/cells/report"))
		}
		// The same body from the cell is decoded, and refused as invalid.
		resp, answer := b.asIdentity(asCell1).postRaw(models.RouteBulkReport, "application/x-protobuf", body)
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		report := &models.BulkReportResponse{}
		Expect(proto.Unmarshal(answer, report)).To(Succeed())
		Expect(report.GetError().GetType()).To(Equal(models.Error_InvalidRequest))
	})

	It("answers a refusal in protobuf as the route's own response", func() {
		f := setUpFixture(b)
		cell2Board := newTLSBoard(authStore, protobufWire).asIdentity(asCell2)
		resp := &models.ActualLRPLifecycleResponse{}
		cell2Board.call(models.RouteCrashActualLRP, &models.CrashActualLRPRequest{ProcessGuid: f.guid, InstanceGuid: instanceGuid, CellId: cell1}, resp)
		Expect(resp.GetError().GetType()).To(Equal(models.Error_Unauthorized))
		Expect(resp.GetError().GetMessage()).To(Equal(`cell "cell-2" may not act for cell "cell-1" on /v1/actual_lrps/crash`))
		Expect(resp.GetActualLrp()).To(BeNil())
	})

	DescribeTable("refuses at the handshake, before any handler, a client without a certificate from the board's CA",
		func(who string) {
			_, err := b.clientAs(who).Post(b.server.URL+models.RoutePing, models.ContentTypeJSON, strings.NewReader("{}"))
			Expect(err).To(HaveOccurred())
			Expect(b.logger.Logs()).To(BeEmpty())
			Expect(b.counter(models.RoutePing, "success")).To(BeZero())
		},
		Entry("a certificate from another CA", asOtherCA),
		Entry("no certificate", ""),
	)

	Describe("the operations writes record", func() {
		It("name the certificate's identity and subject, not what the headers say", func() {
			guid := randomName("web")
			operator := b.asIdentity(asOperator)
			operator.header = http.Header{models.RequestedByHeader: {"cork (mallory)"}, "User-Agent": {"cork/1.0"}}
			desired := operator.desire(newLRP(guid, randomName("domain"), 1))
			Expect(desired.GetError()).To(BeNil())
			Expect(operationRequestedBy(operator, desired.GetOperationId())).To(MatchRegexp(`^operator \(cert CN=alice\) from 127\.0\.0\.1:\d+$`))

			apiClient := b.asIdentity(asAPIClient)
			resp := &models.RemoveDesiredLRPResponse{}
			apiClient.call(models.RouteRemoveDesiredLRP, &models.RemoveDesiredLRPRequest{ProcessGuid: guid}, resp)
			Expect(resp.GetError()).To(BeNil())
			Expect(operationRequestedBy(operator, resp.GetOperationId())).To(MatchRegexp(`^api-client \(cert CN=cloud-controller\) from 127\.0\.0\.1:\d+$`))
		})
	})
})

var _ = Describe("Without TLS", func() {
	It("allows every route to every caller, as in development mode, and the headers name the caller", func() {
		b := newBoard(authStore, jsonWire)
		f := setUpFixture(b)
		for _, c := range policyCases {
			if c.route == models.RouteEvents {
				continue // served without a hub: Unavailable
			}
			got := b.callRaw(c.route, c.request(f))
			Expect(got.err.GetType()).NotTo(Equal(models.Error_Unauthorized), "%s: %v", c.name, got.err)
		}
		b.header = http.Header{models.RequestedByHeader: {"cork (alice)"}}
		desired := b.desire(newLRP(randomName("web"), f.domain, 1))
		Expect(operationRequestedBy(b, desired.GetOperationId())).To(MatchRegexp(`^cork \(alice\) from 127\.0\.0\.1:\d+$`))
	})

	It("refuses everything but ping when client certificates are required, naming the missing certificate", func() {
		b := newBoardWith(authStore, jsonWire, handlers.WithRequiredClientCertificates(), handlers.WithEvents(newHub()))
		f := policyFixture
		f.guid, f.otherGuid = randomName("web"), randomName("worker")
		for _, c := range policyCases {
			got := b.callRaw(c.route, c.request(f))
			if c.route == models.RoutePing {
				Expect(got.err).To(BeNil())
				continue
			}
			Expect(got.stream).To(BeFalse())
			Expect(got.err.GetType()).To(Equal(models.Error_Unauthorized), c.name)
			Expect(got.err.GetMessage()).To(Equal("a request without a verified client certificate may not call " + c.route))
			Expect(got.logs).To(ConsistOf(HaveField("Data", HaveKeyWithValue("identity", "none"))))
			Expect(b.unauthorizedCount(c.route, "none")).To(BeNumerically(">=", 1))
		}
		Expect(b.get(f.otherGuid).GetError().GetType()).To(Equal(models.Error_Unauthorized))
	})
})

// operationRequestedBy reads the requested_by of an operation.
func operationRequestedBy(b *board, id string) string {
	GinkgoHelper()
	resp := &models.OperationResponse{}
	b.call(models.RouteOperation, &models.OperationRequest{Id: id}, resp)
	Expect(resp.GetError()).To(BeNil())
	return resp.GetOperation().GetRequestedBy()
}
