package handlers_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"

	"code.cloudfoundry.org/lager/v3/lagertest"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/models"
)

// wireCodec is how a test client puts messages on the wire.
type wireCodec struct {
	name        string
	contentType string
	marshal     func(proto.Message) ([]byte, error)
	unmarshal   func([]byte, proto.Message) error
}

var (
	protobufWire = wireCodec{
		name:        "protobuf",
		contentType: models.ContentTypeProtobuf,
		marshal:     proto.Marshal,
		unmarshal:   proto.Unmarshal,
	}
	jsonWire = wireCodec{
		name:        "json",
		contentType: models.ContentTypeJSON,
		marshal:     protojson.MarshalOptions{UseProtoNames: true}.Marshal,
		unmarshal:   protojson.Unmarshal,
	}
	wires = []wireCodec{protobufWire, jsonWire}
)

// board is the API under test, served over real HTTP by httptest.
type board struct {
	server   *httptest.Server
	wire     wireCodec
	registry *prometheus.Registry
	logger   *lagertest.TestLogger
	// header is sent with every request, e.g. a requested-by name.
	header http.Header
	// client sends the requests: http.DefaultClient, or one holding a
	// client certificate (see board.as).
	client *http.Client
}

// newBoard serves the API from store.
func newBoard(store db.DB, wire wireCodec) *board {
	return newBoardWith(store, wire)
}

func newBoardWith(store db.DB, wire wireCodec, opts ...handlers.Option) *board {
	b := &board{
		wire:     wire,
		registry: prometheus.NewRegistry(),
		logger:   lagertest.NewTestLogger("handlers-test"),
		client:   http.DefaultClient,
	}
	b.server = httptest.NewServer(handlers.New(b.logger, store, b.registry, opts...))
	DeferCleanup(b.server.Close)
	return b
}

// as is the same board called through client, e.g. one holding another
// client certificate.
func (b *board) as(client *http.Client) *board {
	other := *b
	other.client = client
	return &other
}

// postRaw sends body as is and returns the answer's status, headers and body.
func (b *board) postRaw(route, contentType string, body []byte) (*http.Response, []byte) {
	GinkgoHelper()
	req, err := http.NewRequest(http.MethodPost, b.server.URL+route, bytes.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for name, values := range b.header {
		req.Header[name] = values
	}
	return b.do(req)
}

func (b *board) do(req *http.Request) (*http.Response, []byte) {
	GinkgoHelper()
	resp, err := b.client.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp, body
}

// call posts request in the board's wire encoding and decodes the answer
// into response, which must come back 200 in the same encoding.
func (b *board) call(route string, request, response proto.Message) {
	GinkgoHelper()
	body, err := b.wire.marshal(request)
	Expect(err).NotTo(HaveOccurred())
	b.postDecode(route, b.wire.contentType, body, response)
}

// postDecode posts raw bytes and decodes a 200 answer into response.
func (b *board) postDecode(route, contentType string, body []byte, response proto.Message) {
	GinkgoHelper()
	resp, answer := b.postRaw(route, contentType, body)
	Expect(resp.StatusCode).To(Equal(http.StatusOK), "body: %s", answer)
	Expect(resp.Header.Get("Content-Type")).To(Equal(b.wire.contentType))
	Expect(b.wire.unmarshal(answer, response)).To(Succeed(), "body: %q", answer)
}

// Typed reads used to show what a request did or did not change.

func (b *board) desire(lrp *models.DesiredLRP) *models.DesireLRPResponse {
	GinkgoHelper()
	resp := &models.DesireLRPResponse{}
	b.call(models.RouteDesireDesiredLRP, &models.DesireLRPRequest{DesiredLrp: lrp}, resp)
	return resp
}

func (b *board) mustDesire(lrp *models.DesiredLRP) *models.DesiredLRP {
	GinkgoHelper()
	resp := b.desire(lrp)
	Expect(resp.GetError()).To(BeNil())
	return resp.GetDesiredLrp()
}

func (b *board) get(guid string) *models.DesiredLRPResponse {
	GinkgoHelper()
	resp := &models.DesiredLRPResponse{}
	b.call(models.RouteDesiredLRPByProcessGuid, &models.DesiredLRPByProcessGuidRequest{ProcessGuid: guid}, resp)
	return resp
}

func (b *board) mustGet(guid string) *models.DesiredLRP {
	GinkgoHelper()
	resp := b.get(guid)
	Expect(resp.GetError()).To(BeNil())
	return resp.GetDesiredLrp()
}

func (b *board) update(guid string, update *models.DesiredLRPUpdate) *models.UpdateDesiredLRPResponse {
	GinkgoHelper()
	resp := &models.UpdateDesiredLRPResponse{}
	b.call(models.RouteUpdateDesiredLRP, &models.UpdateDesiredLRPRequest{ProcessGuid: guid, Update: update}, resp)
	return resp
}

func (b *board) list(request *models.DesiredLRPsRequest) []*models.DesiredLRP {
	GinkgoHelper()
	resp := &models.DesiredLRPsResponse{}
	b.call(models.RouteDesiredLRPs, request, resp)
	Expect(resp.GetError()).To(BeNil())
	return resp.GetDesiredLrps()
}

func (b *board) actualLRPs(request *models.ActualLRPsRequest) []*models.ActualLRP {
	GinkgoHelper()
	resp := &models.ActualLRPsResponse{}
	b.call(models.RouteActualLRPs, request, resp)
	Expect(resp.GetError()).To(BeNil())
	return resp.GetActualLrps()
}

func (b *board) definitions(guid string) *models.DefinitionsResponse {
	GinkgoHelper()
	resp := &models.DefinitionsResponse{}
	b.call(models.RouteDefinitions, &models.DefinitionsRequest{ProcessGuid: guid}, resp)
	return resp
}

// snapshot is everything the board holds about one LRP.
type snapshot struct {
	lrp         *models.DesiredLRP
	actualLRPs  []*models.ActualLRP
	definitions []*models.DefinitionSummary
}

func (b *board) snapshot(guid string) snapshot {
	GinkgoHelper()
	definitions := b.definitions(guid)
	Expect(definitions.GetError()).To(BeNil())
	return snapshot{
		lrp:         b.mustGet(guid),
		actualLRPs:  b.actualLRPs(&models.ActualLRPsRequest{ProcessGuid: guid}),
		definitions: definitions.GetDefinitions(),
	}
}

func (b *board) expectUnchanged(guid string, before snapshot) {
	GinkgoHelper()
	after := b.snapshot(guid)
	Expect(proto.Equal(after.lrp, before.lrp)).To(BeTrue(), "desired LRP changed:\nbefore %v\nafter  %v", before.lrp, after.lrp)
	Expect(after.actualLRPs).To(HaveLen(len(before.actualLRPs)))
	for i := range before.actualLRPs {
		Expect(proto.Equal(after.actualLRPs[i], before.actualLRPs[i])).To(BeTrue(), "actual LRP %d changed", i)
	}
	Expect(after.definitions).To(HaveLen(len(before.definitions)))
	for i := range before.definitions {
		Expect(proto.Equal(after.definitions[i], before.definitions[i])).To(BeTrue(), "definition %d changed", i)
	}
}

// expectNothingDesired shows that nothing was written for guid or domain.
func (b *board) expectNothingDesired(guid, domain string) {
	GinkgoHelper()
	Expect(b.get(guid).GetError().GetType()).To(Equal(models.Error_ResourceNotFound))
	Expect(b.list(&models.DesiredLRPsRequest{Domain: domain})).To(BeEmpty())
	Expect(b.actualLRPs(&models.ActualLRPsRequest{Domain: domain})).To(BeEmpty())
	Expect(b.actualLRPs(&models.ActualLRPsRequest{ProcessGuid: guid})).To(BeEmpty())
}

// counter is the value of corkboard_http_requests_total{route, outcome}.
func (b *board) counter(route, outcome string) float64 {
	GinkgoHelper()
	for _, m := range b.metricFamily("corkboard_http_requests_total") {
		if label(m, "route") == route && label(m, "outcome") == outcome {
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// latencySamples is how many requests to route the latency histogram saw.
func (b *board) latencySamples(route string) uint64 {
	GinkgoHelper()
	for _, m := range b.metricFamily("corkboard_http_request_duration_seconds") {
		if label(m, "route") == route {
			return m.GetHistogram().GetSampleCount()
		}
	}
	return 0
}

func (b *board) metricFamily(name string) []*dto.Metric {
	GinkgoHelper()
	families, err := b.registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()
		}
	}
	return nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// Fixtures.

func randomName(prefix string) string {
	b := make([]byte, 6)
	_, err := rand.Read(b)
	Expect(err).NotTo(HaveOccurred())
	return prefix + "-" + hex.EncodeToString(b)
}

func newDefinition(path string) *models.LRPDefinition {
	return &models.LRPDefinition{
		Action: &models.RunAction{
			Path: path,
			Args: []string{"--port", "8080"},
			Env:  []*models.EnvironmentVariable{{Name: "GREETING", Value: "hello"}},
		},
		Ports:          []uint32{8080},
		HealthCheck:    &models.HealthCheck{Type: models.HealthCheck_TCP, Port: 8080},
		StartTimeoutMs: 60000,
		MemoryMb:       256,
		DiskMb:         1024,
	}
}

func newLRP(guid, domain string, instances int32) *models.DesiredLRP {
	return &models.DesiredLRP{
		ProcessGuid: guid,
		Domain:      domain,
		Instances:   instances,
		Annotation:  "made by the handlers suite",
		Definition:  newDefinition("/bin/app"),
	}
}
