package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
	"github.com/corkboard/corkboard/models"
)

// targetsAnswer is one GET /prometheus/targets: status, headers, body.
type targetsAnswer struct {
	status      int
	contentType string
	body        []byte
	allow       string
}

func (b *board) getTargets(method string) targetsAnswer {
	GinkgoHelper()
	req, err := http.NewRequest(method, b.server.URL+models.PrometheusTargetsPath, nil)
	Expect(err).NotTo(HaveOccurred())
	resp, body := b.do(req)
	return targetsAnswer{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: body, allow: resp.Header.Get("Allow")}
}

// targetsOf is the target groups of a 200 answer whose process_guid is
// guid: the suite's stores hold every spec's rows.
func targetsOf(got targetsAnswer, guid string) []models.PrometheusTargetGroup {
	GinkgoHelper()
	Expect(got.status).To(Equal(http.StatusOK), "body: %s", got.body)
	Expect(got.contentType).To(Equal("application/json"))
	var groups []models.PrometheusTargetGroup
	Expect(json.Unmarshal(got.body, &groups)).To(Succeed(), "body: %s", got.body)
	return slices.DeleteFunc(groups, func(g models.PrometheusTargetGroup) bool {
		return g.Labels["process_guid"] != guid
	})
}

// freshStore is a migrated SQLite database of the spec's own.
func freshStore() (*sqldb.SQLDB, func() error) {
	GinkgoHelper()
	database, err := testdb.Create(testdb.SQLite)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(database.Drop)
	conn, err := sqldb.Open(context.Background(), testdb.SQLite, database.DSN)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(conn.Close)
	Expect(migrations.Up(context.Background(), conn, testdb.SQLite)).To(Succeed())
	return sqldb.New(conn, testdb.SQLite), conn.Close
}

var _ = Describe("GET /prometheus/targets", func() {
	for _, dialect := range testdb.MustDialects() {
		It("lists every RUNNING instance with its labels, and no UNCLAIMED, CLAIMED or CRASHED one, on "+dialect, func() {
			store := stores[dialect]
			ctx := context.Background()
			b := newBoard(store, jsonWire)
			guid, domain := randomName("web"), randomName("domain")
			cellA, cellB := randomName("cell-a"), randomName("cell-b")
			for cell, zone := range map[string]string{cellA: "zone-a", cellB: "zone-b"} {
				registration := registerRequest(cell).GetCell()
				registration.Zone = zone
				_, err := store.HeartbeatCell(ctx, registration, time.Minute, true)
				Expect(err).NotTo(HaveOccurred())
			}
			desired := b.mustDesire(newLRP(guid, domain, 5))
			key := func(index int32) models.ActualLRPKey {
				return models.ActualLRPKey{ProcessGuid: guid, Index: index, Presence: models.ActualLRP_ORDINARY}
			}
			cellOf := map[int32]string{0: cellA, 1: cellA, 2: cellA, 3: cellA, 4: cellB}
			for index, cell := range cellOf {
				place(store, key(index), cell)
			}
			owner := func(index int32) models.Caller {
				return models.Caller{InstanceGuid: randomName("instance"), CellID: cellOf[index]}
			}
			start := func(index int32, info *models.NetInfo) models.Caller {
				caller := owner(index)
				_, err := store.ClaimActualLRP(ctx, key(index), caller)
				Expect(err).NotTo(HaveOccurred())
				_, err = store.StartActualLRP(ctx, key(index), caller, info, true)
				Expect(err).NotTo(HaveOccurred())
				return caller
			}
			// 0 RUNNING on cell A; 1 CLAIMED; 2 UNCLAIMED (placed);
			// 3 CRASHED; 4 RUNNING on cell B, with two ports.
			start(0, netInfo())
			_, err := store.ClaimActualLRP(ctx, key(1), owner(1))
			Expect(err).NotTo(HaveOccurred())
			crashed := start(3, netInfo())
			_, err = store.CrashActualLRP(ctx, key(3), crashed, "exited with code 3")
			Expect(err).NotTo(HaveOccurred())
			start(4, &models.NetInfo{Address: "10.0.0.6", Ports: []*models.PortMapping{
				{ContainerPort: 8080, HostPort: 61010}, {ContainerPort: 9090, HostPort: 61011},
			}})

			states := map[int32]models.ActualLRP_State{}
			for _, row := range b.actualLRPs(&models.ActualLRPsRequest{ProcessGuid: guid}) {
				states[row.GetIndex()] = row.GetState()
			}
			Expect(states).To(Equal(map[int32]models.ActualLRP_State{
				0: models.ActualLRP_RUNNING, 1: models.ActualLRP_CLAIMED, 2: models.ActualLRP_UNCLAIMED,
				3: models.ActualLRP_CRASHED, 4: models.ActualLRP_RUNNING,
			}))

			definitionID := desired.GetActiveDefinitionId()
			Expect(targetsOf(b.getTargets(http.MethodGet), guid)).To(Equal([]models.PrometheusTargetGroup{
				{Targets: []string{"10.0.0.5:61001"}, Labels: map[string]string{
					"process_guid": guid, "index": "0", "definition_id": definitionID, "cell": cellA, "zone": "zone-a", "domain": domain, "baseline": "false",
				}},
				{Targets: []string{"10.0.0.6:61010"}, Labels: map[string]string{
					"process_guid": guid, "index": "4", "definition_id": definitionID, "cell": cellB, "zone": "zone-b", "domain": domain, "baseline": "false",
				}},
			}))
			Expect(b.counter(models.PrometheusTargetsPath, "success")).To(BeEquivalentTo(1))
		})
	}

	It("answers [] when nothing runs", func() {
		store, _ := freshStore()
		got := newBoard(store, jsonWire).getTargets(http.MethodGet)
		Expect(got.status).To(Equal(http.StatusOK))
		Expect(got.contentType).To(Equal("application/json"))
		Expect(string(got.body)).To(Equal("[]"))
	})

	It("answers an error status, not an empty list, when the store fails", func() {
		store, closeDatabase := freshStore()
		b := newBoard(store, jsonWire)
		Expect(closeDatabase()).To(Succeed())
		got := b.getTargets(http.MethodGet)
		Expect(got.status).To(BeNumerically(">=", 500), "body: %s", got.body)
		Expect(jsonError(got.body)).NotTo(BeNil())
	})

	It("is a GET: any other method is a 405 naming GET", func() {
		b := newBoard(authStore, jsonWire)
		got := b.getTargets(http.MethodPost)
		Expect(got.status).To(Equal(http.StatusMethodNotAllowed))
		Expect(got.allow).To(Equal(http.MethodGet))
		Expect(jsonError(got.body).GetMessage()).To(Equal("method: POST is not allowed; /prometheus/targets is a GET"))
	})

	Describe("over TLS with client certificates", func() {
		var b *board
		var f fixture
		BeforeEach(func() {
			b = newTLSBoard(authStore, jsonWire)
			f = setUpFixture(b)
		})

		DescribeTable("answers API clients and operators, and refuses every other identity with a 403",
			func(who string, allowed bool) {
				got := b.asIdentity(who).getTargets(http.MethodGet)
				if allowed {
					groups := targetsOf(got, f.guid)
					Expect(groups).To(HaveLen(1), "index 0 runs; index 1 is placed, not claimed")
					Expect(groups[0].Targets).To(Equal([]string{"10.0.0.5:61001"}))
					Expect(groups[0].Labels).To(HaveKeyWithValue("cell", cell1))
					return
				}
				Expect(got.status).To(Equal(http.StatusForbidden))
				refusal := jsonError(got.body)
				Expect(refusal.GetType()).To(Equal(models.Error_Unauthorized))
				Expect(refusal.GetMessage()).To(Equal(refusalFor(who, policyCase{route: models.PrometheusTargetsPath})))
				Expect(b.unauthorizedCount(models.PrometheusTargetsPath, string(identityOf(who).Role))).To(BeEquivalentTo(1))
			},
			Entry("api-client", asAPIClient, true),
			Entry("operator", asOperator, true),
			Entry("cell-1, which runs the instance: a cell reads only its own rows", asCell1, false),
			Entry("cell-2", asCell2, false),
			Entry("the board's certificate", asBoard, false),
			Entry("a certificate naming no role", asNoRole, false),
			Entry("a certificate naming two identities", asTwoRoles, false),
		)

		It("refuses at the handshake a client without a certificate of the board's CA", func() {
			for _, who := range []string{asOtherCA, ""} {
				_, err := b.clientAs(who).Get(b.server.URL + models.PrometheusTargetsPath)
				Expect(err).To(HaveOccurred(), who)
			}
		})
	})

	It("refuses a request without a certificate when client certificates are required", func() {
		b := newBoardWith(authStore, jsonWire, handlers.WithRequiredClientCertificates())
		got := b.getTargets(http.MethodGet)
		Expect(got.status).To(Equal(http.StatusForbidden))
		Expect(jsonError(got.body).GetMessage()).To(Equal("a request without a verified client certificate may not call /prometheus/targets"))
	})
})
