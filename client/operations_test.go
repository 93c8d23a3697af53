package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

func ids(operations []*models.Operation) []string {
	out := make([]string, 0, len(operations))
	for _, op := range operations {
		out = append(out, op.GetId())
	}
	return out
}

var _ = Describe("Operations", func() {
	var (
		ctx     context.Context
		counter *routeCounter
		url     string
		c       *client.Client
	)

	BeforeEach(func() {
		ctx = context.Background()
		counter = &routeCounter{counts: map[string]int{}}
		server := httptest.NewServer(counter.wrap(newBoardHandler()))
		DeferCleanup(server.Close)
		url = server.URL
		c = client.New(url)
	})

	// scaled desires hello and scales it n times: n+1 operations.
	scaled := func(n int) []string {
		GinkgoHelper()
		_, desired, err := c.DesireLRPWithOperation(ctx, helloLRP("hello"))
		Expect(err).NotTo(HaveOccurred())
		made := []string{desired}
		for i := range n {
			instances := int32(3 + i)
			_, updated, err := c.UpdateDesiredLRPWithOperation(ctx, "hello", &models.DesiredLRPUpdate{Instances: &instances})
			Expect(err).NotTo(HaveOccurred())
			made = append([]string{updated}, made...)
		}
		return made
	}

	It("lists one page with the cursor of the next, and every page following the cursor", func() {
		newestFirst := scaled(4)
		_, err := c.DesireLRP(ctx, helloLRP("other"))
		Expect(err).NotTo(HaveOccurred())

		page, next, err := c.Operations(ctx, client.OperationFilter{ProcessGuid: "hello", Limit: 2})
		Expect(err).NotTo(HaveOccurred())
		Expect(ids(page)).To(Equal(newestFirst[:2]))
		Expect(next).NotTo(BeEmpty())
		page, _, err = c.Operations(ctx, client.OperationFilter{ProcessGuid: "hello", Limit: 2, Cursor: next})
		Expect(err).NotTo(HaveOccurred())
		Expect(ids(page)).To(Equal(newestFirst[2:4]))

		before := counter.count(models.RouteOperations)
		all, err := c.AllOperations(ctx, client.OperationFilter{ProcessGuid: "hello", Limit: 2})
		Expect(err).NotTo(HaveOccurred())
		Expect(ids(all)).To(Equal(newestFirst))
		Expect(counter.count(models.RouteOperations)-before).To(BeNumerically(">=", 3), "five operations in pages of two")

		all, err = c.AllOperations(ctx, client.OperationFilter{})
		Expect(err).NotTo(HaveOccurred())
		Expect(all).To(HaveLen(6))
		Expect(all[0].GetProcessGuid()).To(Equal("other"))

		updates, err := c.AllOperations(ctx, client.OperationFilter{Kind: models.Operation_UPDATE, Status: models.Operation_FINISHED})
		Expect(err).NotTo(HaveOccurred())
		Expect(ids(updates)).To(Equal(newestFirst[:4]))
	})

	It("gets each write's operation, named by the client's User-Agent or WithRequestedBy", func() {
		_, desired, err := c.DesireLRPWithOperation(ctx, helloLRP("hello"))
		Expect(err).NotTo(HaveOccurred())
		op, err := c.Operation(ctx, desired)
		Expect(err).NotTo(HaveOccurred())
		Expect(op.GetKind()).To(Equal(models.Operation_DESIRE))
		Expect(op.GetStatus()).To(Equal(models.Operation_FINISHED))
		Expect(op.GetRequestedBy()).To(MatchRegexp(`^corkboard-client from 127\.0\.0\.1:\d+$`))

		named := client.New(url, client.WithRequestedBy("scheduler (pool-7)"))
		lrp, updated, err := named.UpdateDesiredLRPWithOperation(ctx, "hello", &models.DesiredLRPUpdate{Definition: helloDefinition("v2"), UpdateIdentifier: "v2"})
		Expect(err).NotTo(HaveOccurred())
		Expect(lrp.GetActiveDefinitionId()).To(Equal("v2"))
		op, err = c.Operation(ctx, updated)
		Expect(err).NotTo(HaveOccurred())
		Expect(op.GetKind()).To(Equal(models.Operation_UPDATE_DEFINITION))
		Expect(op.GetRequestedBy()).To(MatchRegexp(`^scheduler \(pool-7\) from 127\.0\.0\.1:\d+$`))

		status, err := named.AbortRollout(ctx, "hello", false)
		Expect(err).NotTo(HaveOccurred())
		op, err = c.Operation(ctx, status.GetOperationId())
		Expect(err).NotTo(HaveOccurred())
		Expect(op.GetKind()).To(Equal(models.Operation_ABORT))

		removed, err := named.RemoveDesiredLRPWithOperation(ctx, "hello")
		Expect(err).NotTo(HaveOccurred())
		op, err = c.Operation(ctx, removed)
		Expect(err).NotTo(HaveOccurred())
		Expect(op.GetKind()).To(Equal(models.Operation_REMOVE))
		Expect(op.GetRequestedBy()).To(HavePrefix("scheduler (pool-7) from "))
	})

	It("cancels a queued update once, and says why it cannot cancel again", func() {
		_, err := c.DesireLRP(ctx, helloLRP("hello"))
		Expect(err).NotTo(HaveOccurred())
		_, err = c.UpdateDesiredLRP(ctx, "hello", &models.DesiredLRPUpdate{Definition: helloDefinition("v2"), UpdateIdentifier: "v2"})
		Expect(err).NotTo(HaveOccurred())
		_, queued, err := c.UpdateDesiredLRPWithOperation(ctx, "hello", &models.DesiredLRPUpdate{Definition: helloDefinition("v3"), UpdateIdentifier: "v3", Queue: true})
		Expect(err).NotTo(HaveOccurred())

		canceled, err := c.CancelOperation(ctx, queued)
		Expect(err).NotTo(HaveOccurred())
		Expect(canceled.GetId()).To(Equal(queued))
		Expect(canceled.GetStatus()).To(Equal(models.Operation_CANCELED))

		_, err = c.CancelOperation(ctx, queued)
		Expect(err).To(errorOfType(models.Error_InvalidStateTransition))
	})

	It("passes the board's errors on: unknown operations, and requests naming the field", func() {
		unknown := models.NewOperationID(time.Now())
		_, err := c.Operation(ctx, unknown)
		Expect(err).To(errorOfType(models.Error_ResourceNotFound))
		_, err = c.CancelOperation(ctx, unknown)
		Expect(err).To(errorOfType(models.Error_ResourceNotFound))

		_, err = c.Operation(ctx, "latest")
		Expect(err).To(errorOfType(models.Error_InvalidRequest))
		Expect(err.(*models.Error).GetMessage()).To(HavePrefix("id: "))
		_, _, err = c.Operations(ctx, client.OperationFilter{Limit: models.MaxOperationsPage + 1})
		Expect(err).To(errorOfType(models.Error_InvalidRequest))
		Expect(err.(*models.Error).GetMessage()).To(HavePrefix("limit: "))
		_, err = c.AllOperations(ctx, client.OperationFilter{Status: 42})
		Expect(err).To(errorOfType(models.Error_InvalidRequest))
		Expect(err.(*models.Error).GetMessage()).To(HavePrefix("status: "))
	})
})

var _ = Describe("Operations from a board that misbehaves", func() {
	It("stops following a cursor that does not move instead of paging forever", func() {
		var cursors []string
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer GinkgoRecover()
			body, _ := io.ReadAll(r.Body)
			var request models.OperationsRequest
			Expect(proto.Unmarshal(body, &request)).To(Succeed())
			cursors = append(cursors, request.GetCursor())
			answer, _ := proto.Marshal(&models.OperationsResponse{
				Operations: []*models.Operation{{Id: strings.Repeat("a", 24)}},
				NextCursor: strings.Repeat("a", 24),
			})
			w.Header().Set("Content-Type", models.ContentTypeProtobuf)
			w.Write(answer)
		}))
		DeferCleanup(server.Close)

		_, err := client.New(server.URL).AllOperations(context.Background(), client.OperationFilter{})
		Expect(err).To(MatchError(ContainSubstring("paging would not end")))
		Expect(cursors).To(Equal([]string{"", strings.Repeat("a", 24)}))
	})

	It("sends its User-Agent, and the caller's name when it has one", func() {
		var agents, names []string
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			agents = append(agents, r.Header.Get("User-Agent"))
			names = append(names, r.Header.Get(models.RequestedByHeader))
			answer, _ := proto.Marshal(&models.PingResponse{Available: true})
			w.Header().Set("Content-Type", models.ContentTypeProtobuf)
			w.Write(answer)
		}))
		DeferCleanup(server.Close)

		_, err := client.New(server.URL).Ping(context.Background())
		Expect(err).NotTo(HaveOccurred())
		_, err = client.New(server.URL, client.WithRequestedBy("cork (alice@laptop)")).Ping(context.Background())
		Expect(err).NotTo(HaveOccurred())
		Expect(agents).To(Equal([]string{"corkboard-client", "corkboard-client"}))
		Expect(names).To(Equal([]string{"", "cork (alice@laptop)"}))
	})
})
