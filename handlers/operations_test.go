package handlers_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// A name the specs give themselves, and how the board records it: the
// name, then the address the request came from.
const specCaller = "operations-spec (tester@spec-host)"

var recordedCaller = regexp.MustCompile(`^` + regexp.QuoteMeta(specCaller) + ` from 127\.0\.0\.1:\d+$`)

func (b *board) operation(id string) *models.OperationResponse {
	GinkgoHelper()
	resp := &models.OperationResponse{}
	b.call(models.RouteOperation, &models.OperationRequest{Id: id}, resp)
	return resp
}

func (b *board) mustOperation(id string) *models.Operation {
	GinkgoHelper()
	resp := b.operation(id)
	Expect(resp.GetError()).To(BeNil())
	return resp.GetOperation()
}

func (b *board) operations(req *models.OperationsRequest) *models.OperationsResponse {
	GinkgoHelper()
	resp := &models.OperationsResponse{}
	b.call(models.RouteOperations, req, resp)
	return resp
}

func (b *board) cancelOperation(id string) *models.CancelOperationResponse {
	GinkgoHelper()
	resp := &models.CancelOperationResponse{}
	b.call(models.RouteCancelOperation, &models.CancelOperationRequest{Id: id}, resp)
	return resp
}

func (b *board) mustUpdate(guid string, update *models.DesiredLRPUpdate) *models.UpdateDesiredLRPResponse {
	GinkgoHelper()
	resp := b.update(guid, update)
	Expect(resp.GetError()).To(BeNil())
	Expect(resp.GetOperationId()).NotTo(BeEmpty())
	return resp
}

func newDefinitionUpdate(id string) *models.DesiredLRPUpdate {
	return &models.DesiredLRPUpdate{Definition: newDefinition("/bin/app-" + id), UpdateIdentifier: id}
}

func idsOf(operations []*models.Operation) []string {
	ids := make([]string, 0, len(operations))
	for _, op := range operations {
		ids = append(ids, op.GetId())
	}
	return ids
}

var _ = Describe("Operations API", func() {
	for _, dialect := range testdb.MustDialects() {
		for _, wire := range wires {
			Describe(dialect+" with "+wire.name+" bodies", func() {
				var (
					b         *board
					guid      string
					domain    string
					mu        sync.Mutex
					triggered []string
				)

				BeforeEach(func() {
					triggered = nil
					b = newBoardWith(stores[dialect], wire, handlers.WithConvergenceTrigger(func(guid string) {
						mu.Lock()
						defer mu.Unlock()
						triggered = append(triggered, guid)
					}))
					b.header = http.Header{models.RequestedByHeader: {specCaller}}
					guid = randomName("lrp")
					domain = randomName("domain")
				})

				taken := func() []string {
					mu.Lock()
					defer mu.Unlock()
					out := triggered
					triggered = nil
					return out
				}

				It("answers the operation each desire, update and removal recorded, which get finds with the caller's name", func() {
					desired := b.desire(newLRP(guid, domain, 2))
					Expect(desired.GetError()).To(BeNil())
					Expect(desired.GetOperationId()).To(MatchRegexp(`^[0-9a-f]{24}$`))
					op := b.mustOperation(desired.GetOperationId())
					Expect(op.GetProcessGuid()).To(Equal(guid))
					Expect(op.GetKind()).To(Equal(models.Operation_DESIRE))
					Expect(op.GetStatus()).To(Equal(models.Operation_FINISHED))
					Expect(op.GetRequestedBy()).To(MatchRegexp(recordedCaller.String()))

					scaled := b.mustUpdate(guid, &models.DesiredLRPUpdate{Instances: proto.Int32(3)})
					op = b.mustOperation(scaled.GetOperationId())
					Expect(op.GetKind()).To(Equal(models.Operation_UPDATE))
					Expect(op.GetStatus()).To(Equal(models.Operation_FINISHED))
					Expect(op.GetRequestedBy()).To(MatchRegexp(recordedCaller.String()))

					rolling := b.mustUpdate(guid, newDefinitionUpdate("v2"))
					op = b.mustOperation(rolling.GetOperationId())
					Expect(op.GetKind()).To(Equal(models.Operation_UPDATE_DEFINITION))
					Expect(op.GetStatus()).To(Equal(models.Operation_IN_PROGRESS))
					Expect(op.GetDefinitionId()).To(Equal("v2"))

					removed := &models.RemoveDesiredLRPResponse{}
					b.call(models.RouteRemoveDesiredLRP, &models.RemoveDesiredLRPRequest{ProcessGuid: guid}, removed)
					Expect(removed.GetError()).To(BeNil())
					op = b.mustOperation(removed.GetOperationId())
					Expect(op.GetKind()).To(Equal(models.Operation_REMOVE))
					Expect(op.GetStatus()).To(Equal(models.Operation_FINISHED))
					Expect(op.GetRequestedBy()).To(MatchRegexp(recordedCaller.String()))

					Expect(idsOf(b.operations(&models.OperationsRequest{ProcessGuid: guid}).GetOperations())).To(Equal([]string{
						removed.GetOperationId(), rolling.GetOperationId(), scaled.GetOperationId(), desired.GetOperationId(),
					}), "newest first")
				})

				It("answers the operation of a rollback and an abort in their status", func() {
					b.mustDesire(newLRP(guid, domain, 2))
					b.mustUpdate(guid, newDefinitionUpdate("v2"))

					aborted := &models.AbortRolloutResponse{}
					b.call(models.RouteAbortRollout, &models.AbortRolloutRequest{ProcessGuid: guid}, aborted)
					Expect(aborted.GetError()).To(BeNil())
					op := b.mustOperation(aborted.GetStatus().GetOperationId())
					Expect(op.GetKind()).To(Equal(models.Operation_ABORT))
					Expect(op.GetRequestedBy()).To(MatchRegexp(recordedCaller.String()))

					rolledBack := &models.RollbackResponse{}
					b.call(models.RouteRollback, &models.RollbackRequest{ProcessGuid: guid, DefinitionId: "v2"}, rolledBack)
					Expect(rolledBack.GetError()).To(BeNil())
					op = b.mustOperation(rolledBack.GetStatus().GetOperationId())
					Expect(op.GetKind()).To(Equal(models.Operation_ROLLBACK))
					Expect(op.GetDefinitionId()).To(Equal("v2"))
					Expect(op.GetRequestedBy()).To(MatchRegexp(recordedCaller.String()))
				})

				It("passes fast through a rollback and an abort: the status and the operation's parameters say fast", func() {
					b.mustDesire(newLRP(guid, domain, 2))
					b.mustUpdate(guid, newDefinitionUpdate("v2"))

					aborted := &models.AbortRolloutResponse{}
					b.call(models.RouteAbortRollout, &models.AbortRolloutRequest{ProcessGuid: guid, Fast: true}, aborted)
					Expect(aborted.GetError()).To(BeNil())
					Expect(aborted.GetStatus().GetFast()).To(BeTrue())
					op := b.mustOperation(aborted.GetStatus().GetOperationId())
					var abort models.AbortRolloutRequest
					Expect(op.GetParameters().UnmarshalTo(&abort)).To(Succeed())
					Expect(abort.GetFast()).To(BeTrue())

					rolledBack := &models.RollbackResponse{}
					b.call(models.RouteRollback, &models.RollbackRequest{ProcessGuid: guid, DefinitionId: "v2", Fast: true}, rolledBack)
					Expect(rolledBack.GetError()).To(BeNil())
					Expect(rolledBack.GetStatus().GetFast()).To(BeTrue())
					op = b.mustOperation(rolledBack.GetStatus().GetOperationId())
					var rollback models.RollbackRequest
					Expect(op.GetParameters().UnmarshalTo(&rollback)).To(Succeed())
					Expect(rollback.GetFast()).To(BeTrue())
					Expect(rollback.GetDefinitionId()).To(Equal("v2"))
				})

				It("lists an LRP's operations newest first, filtered, a page at a time", func() {
					b.mustDesire(newLRP(guid, domain, 1))
					for _, instances := range []int32{2, 3, 4, 5} {
						b.mustUpdate(guid, &models.DesiredLRPUpdate{Instances: proto.Int32(instances)})
					}
					b.mustDesire(newLRP(randomName("other"), domain, 1))

					all := b.operations(&models.OperationsRequest{ProcessGuid: guid})
					Expect(all.GetError()).To(BeNil())
					Expect(all.GetNextCursor()).To(BeEmpty())
					Expect(all.GetOperations()).To(HaveLen(5))
					for i, op := range all.GetOperations() {
						Expect(op.GetProcessGuid()).To(Equal(guid))
						Expect(op.GetSequence()).To(BeEquivalentTo(5-i), "newest first, numbered in creation order")
					}

					var paged []*models.Operation
					request := &models.OperationsRequest{ProcessGuid: guid, Limit: 2}
					for pages := 1; ; pages++ {
						Expect(pages).To(BeNumerically("<=", 3), "five operations in pages of two")
						page := b.operations(request)
						Expect(page.GetError()).To(BeNil())
						Expect(len(page.GetOperations())).To(BeNumerically("<=", 2))
						paged = append(paged, page.GetOperations()...)
						if page.GetNextCursor() == "" {
							break
						}
						request.Cursor = page.GetNextCursor()
					}
					Expect(idsOf(paged)).To(Equal(idsOf(all.GetOperations())))

					updates := b.operations(&models.OperationsRequest{ProcessGuid: guid, Kind: models.Operation_UPDATE})
					Expect(updates.GetOperations()).To(HaveLen(4))
					desires := b.operations(&models.OperationsRequest{ProcessGuid: guid, Kind: models.Operation_DESIRE, Status: models.Operation_FINISHED})
					Expect(desires.GetOperations()).To(HaveLen(1))
					Expect(desires.GetOperations()[0].GetSequence()).To(BeEquivalentTo(1))
					Expect(b.operations(&models.OperationsRequest{ProcessGuid: guid, Status: models.Operation_PENDING}).GetOperations()).To(BeEmpty())
				})

				It("cancels a queued update, then the rollout, which rolls back under an ABORT naming the caller", func() {
					b.mustDesire(newLRP(guid, domain, 2))
					v1 := b.mustGet(guid).GetActiveDefinitionId()
					rolling := b.mustUpdate(guid, newDefinitionUpdate("v2"))
					queuedUpdate := newDefinitionUpdate("v3")
					queuedUpdate.Queue = true
					queued := b.mustUpdate(guid, queuedUpdate)
					Expect(b.mustOperation(queued.GetOperationId()).GetStatus()).To(Equal(models.Operation_PENDING))
					Expect(b.mustGet(guid).GetActiveDefinitionId()).To(Equal("v2"), "the queued definition waits")
					taken()

					canceled := b.cancelOperation(queued.GetOperationId())
					Expect(canceled.GetError()).To(BeNil())
					Expect(canceled.GetOperation().GetId()).To(Equal(queued.GetOperationId()))
					Expect(canceled.GetOperation().GetStatus()).To(Equal(models.Operation_CANCELED))
					Expect(b.mustOperation(queued.GetOperationId()).GetStatus()).To(Equal(models.Operation_CANCELED))

					again := b.cancelOperation(queued.GetOperationId())
					Expect(again.GetError().GetType()).To(Equal(models.Error_InvalidStateTransition))
					Expect(again.GetOperation()).To(BeNil())

					canceled = b.cancelOperation(rolling.GetOperationId())
					Expect(canceled.GetError()).To(BeNil())
					Expect(canceled.GetOperation().GetStatus()).To(Equal(models.Operation_CANCELED))
					Expect(b.mustGet(guid).GetActiveDefinitionId()).To(Equal(v1), "back to the healthy definition")
					Expect(taken()).To(ContainElement(guid), "convergence rolls back at once")

					aborts := b.operations(&models.OperationsRequest{ProcessGuid: guid, Kind: models.Operation_ABORT})
					Expect(aborts.GetOperations()).To(HaveLen(1))
					Expect(aborts.GetOperations()[0].GetRequestedBy()).To(MatchRegexp(recordedCaller.String()))
				})

				It("is ResourceNotFound for an operation nobody recorded", func() {
					unknown := models.NewOperationID(time.Now())
					Expect(b.operation(unknown).GetError().GetType()).To(Equal(models.Error_ResourceNotFound))
					Expect(b.cancelOperation(unknown).GetError().GetType()).To(Equal(models.Error_ResourceNotFound))
				})

				DescribeTable("a bad request is InvalidRequest naming the field",
					func(route, field string, request proto.Message) {
						resp := &models.OperationsResponse{}
						b.call(route, request, resp)
						Expect(resp.GetError().GetType()).To(Equal(models.Error_InvalidRequest), "error: %v", resp.GetError())
						Expect(resp.GetError().GetMessage()).To(HavePrefix(field + ": "))
						Expect(b.counter(route, "InvalidRequest")).To(BeEquivalentTo(1))
					},
					Entry("a list for a bad guid", models.RouteOperations, "process_guid", &models.OperationsRequest{ProcessGuid: "not a guid!"}),
					Entry("a list for an unknown status", models.RouteOperations, "status", &models.OperationsRequest{Status: 99}),
					Entry("a list for an unknown kind", models.RouteOperations, "kind", &models.OperationsRequest{Kind: 99}),
					Entry("a list from a cursor that is no operation id", models.RouteOperations, "cursor", &models.OperationsRequest{Cursor: "page-2"}),
					Entry("a list of a negative page", models.RouteOperations, "limit", &models.OperationsRequest{Limit: -1}),
					Entry("a list of pages over the most", models.RouteOperations, "limit", &models.OperationsRequest{Limit: models.MaxOperationsPage + 1}),
					Entry("a get without an id", models.RouteOperation, "id", &models.OperationRequest{}),
					Entry("a get of a bad id", models.RouteOperation, "id", &models.OperationRequest{Id: strings.Repeat("z", 24)}),
					Entry("a cancel without an id", models.RouteCancelOperation, "id", &models.CancelOperationRequest{}),
					Entry("a cancel of a bad id", models.RouteCancelOperation, "id", &models.CancelOperationRequest{Id: "0123"}),
				)
			})
		}
	}
})

var _ = Describe("Who asked", func() {
	var b *board

	BeforeEach(func() {
		b = newBoard(stores[testdb.SQLite], jsonWire)
	})

	requestedBy := func(header http.Header) string {
		GinkgoHelper()
		b.header = header
		resp := b.desire(newLRP(randomName("lrp"), randomName("domain"), 1))
		Expect(resp.GetError()).To(BeNil())
		b.header = nil
		return b.mustOperation(resp.GetOperationId()).GetRequestedBy()
	}

	DescribeTable("is what the request says of its caller, then the address it came from",
		func(header http.Header, want string) {
			Expect(requestedBy(header)).To(MatchRegexp(`^` + regexp.QuoteMeta(want) + ` from 127\.0\.0\.1:\d+$`))
		},
		Entry("the requested-by name", http.Header{models.RequestedByHeader: {"cork (alice@laptop)"}, "User-Agent": {"corkboard-client"}}, "cork (alice@laptop)"),
		Entry("a name in any script", http.Header{models.RequestedByHeader: {"cork (josé@höst)"}}, "cork (josé@höst)"),
		Entry("the User-Agent without a name", http.Header{"User-Agent": {"curl/8.5.0"}}, "curl/8.5.0"),
		Entry("the User-Agent for a name over the limit", http.Header{models.RequestedByHeader: {strings.Repeat("n", models.MaxRequestedByLength+1)}, "User-Agent": {"curl/8.5.0"}}, "curl/8.5.0"),
		Entry("the User-Agent for a name with a tab", http.Header{models.RequestedByHeader: {"cork\t(alice)"}, "User-Agent": {"curl/8.5.0"}}, "curl/8.5.0"),
		Entry("the User-Agent for a name that is not UTF-8", http.Header{models.RequestedByHeader: {"cork \xff"}, "User-Agent": {"curl/8.5.0"}}, "curl/8.5.0"),
		Entry("a name at the limit", http.Header{models.RequestedByHeader: {strings.Repeat("n", models.MaxRequestedByLength)}}, strings.Repeat("n", models.MaxRequestedByLength)),
		// An empty User-Agent is not sent at all.
		Entry("an unnamed client without either", http.Header{"User-Agent": {""}}, "unnamed client"),
	)

	It("answers list, get and cancel in protojson, as curl sends them", func() {
		b.header = http.Header{models.RequestedByHeader: {specCaller}}
		guid := randomName("lrp")
		resp := b.desire(newLRP(guid, randomName("domain"), 1))
		Expect(resp.GetError()).To(BeNil())

		// protojson varies its whitespace on purpose: the answers are
		// read as JSON, not as text.
		answer, body := b.postRaw(models.RouteOperations, "application/json", []byte(`{"process_guid": "`+guid+`", "status": "FINISHED", "limit": 10}`))
		Expect(answer.StatusCode).To(Equal(http.StatusOK))
		Expect(answer.Header.Get("Content-Type")).To(Equal("application/json"))
		var list struct {
			Operations []map[string]any `json:"operations"`
			NextCursor *string          `json:"next_cursor"`
		}
		Expect(json.Unmarshal(body, &list)).To(Succeed(), "body: %s", body)
		Expect(list.Operations).To(HaveLen(1))
		Expect(list.Operations[0]).To(HaveKeyWithValue("id", resp.GetOperationId()))
		Expect(list.Operations[0]).To(HaveKeyWithValue("process_guid", guid))
		Expect(list.Operations[0]).To(HaveKeyWithValue("kind", "DESIRE"))
		Expect(list.NextCursor).To(BeNil(), "the last page has none")

		_, body = b.postRaw(models.RouteOperation, "application/json", []byte(`{"id": "`+resp.GetOperationId()+`"}`))
		var got struct {
			Operation map[string]any `json:"operation"`
		}
		Expect(json.Unmarshal(body, &got)).To(Succeed(), "body: %s", body)
		Expect(got.Operation["requested_by"]).To(MatchRegexp(recordedCaller.String()))

		var failed struct {
			Error map[string]string `json:"error"`
		}
		_, body = b.postRaw(models.RouteCancelOperation, "application/json", []byte(`{"id": "`+resp.GetOperationId()+`"}`))
		Expect(json.Unmarshal(body, &failed)).To(Succeed(), "body: %s", body)
		Expect(failed.Error).To(HaveKeyWithValue("type", "InvalidStateTransition"), "a desire has ended")

		_, body = b.postRaw(models.RouteOperations, "application/json", []byte(`{"status": "SLEEPING"}`))
		Expect(json.Unmarshal(body, &failed)).To(Succeed(), "body: %s", body)
		Expect(failed.Error).To(HaveKeyWithValue("type", "InvalidRequest"))
		Expect(failed.Error["message"]).To(HavePrefix("request body: "))
	})
})
