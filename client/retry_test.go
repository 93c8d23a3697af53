package client_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// droppingListener closes the first `drop` connections it accepts before
// the server sees them: the client's request gets no answer at all.
type droppingListener struct {
	net.Listener
	drop     atomic.Int32
	accepted atomic.Int32
}

func (l *droppingListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.accepted.Add(1)
		if l.drop.Add(-1) >= 0 {
			conn.Close()
			continue
		}
		return conn, nil
	}
}

// routeCounter counts the requests that reach the board, per route.
type routeCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (rc *routeCounter) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.counts[r.URL.Path]++
		rc.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (rc *routeCounter) count(route string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.counts[route]
}

// losingAnswers lets the board handle a request on `route` in full and then
// cuts the connection instead of sending the answer, `lose` times: the
// write happened, the client never hears of it.
func losingAnswers(next http.Handler, route string, lose int32) http.Handler {
	var remaining atomic.Int32
	remaining.Store(lose)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != route || remaining.Add(-1) < 0 {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(httptest.NewRecorder(), r)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	})
}

// hangingFirst never answers the first request on route; it waits until the
// client hangs up (or, should that go unnoticed, a long while). Later
// requests reach the board.
func hangingFirst(next http.Handler, route string) http.Handler {
	var seen atomic.Int32
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == route && seen.Add(1) == 1 {
			// The server notices a hang-up only once the body is read.
			io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-time.After(time.Minute):
			}
			return
		}
		next.ServeHTTP(w, r)
	})
}

var _ = Describe("Retries", func() {
	var (
		ctx      context.Context
		listener *droppingListener
		counter  *routeCounter
		board    http.Handler
		// serverURL is where serveOn serves.
		serverURL string
		// dropNext makes the next n connections fail. It closes the
		// client's idle connections first, so its next request needs one.
		dropNext func(n int32)
	)

	// serveOn starts handler on the dropping listener and returns a client
	// with fast retries. A fresh transport per spec means every request
	// starts on a connection the listener sees.
	serveOn := func(handler http.Handler, opts ...client.Option) *client.Client {
		server := httptest.NewUnstartedServer(handler)
		listener = &droppingListener{Listener: server.Listener}
		server.Listener = listener
		server.Start()
		DeferCleanup(server.Close)
		serverURL = server.URL
		transport := http.DefaultTransport.(*http.Transport).Clone()
		DeferCleanup(transport.CloseIdleConnections)
		dropNext = func(n int32) {
			transport.CloseIdleConnections()
			listener.drop.Store(n)
		}
		opts = append([]client.Option{client.WithHTTPClient(&http.Client{Transport: transport}), client.WithRetries(2), client.WithRetryBackoff(time.Millisecond)}, opts...)
		return client.New(server.URL, opts...)
	}

	BeforeEach(func() {
		ctx = context.Background()
		counter = &routeCounter{counts: map[string]int{}}
		board = counter.wrap(newBoardHandler())
	})

	Context("when connections are dropped before the board sees them", func() {
		var c *client.Client

		BeforeEach(func() {
			c = serveOn(board)
		})

		It("retries a read until it gets through", func() {
			dropNext(2)
			_, err := c.DesiredLRPByProcessGuid(ctx, "hello")
			Expect(err).To(errorOfType(models.Error_ResourceNotFound), "the third attempt reached the board")
			Expect(listener.accepted.Load()).To(BeEquivalentTo(3))
			Expect(counter.count(models.RouteDesiredLRPByProcessGuid)).To(Equal(1))
		})

		It("gives up after the configured retries with the transport error", func() {
			dropNext(3)
			_, err := c.Ping(ctx)
			Expect(err).To(HaveOccurred())
			Expect(models.IsErrorType(err, models.Error_UnknownError)).To(BeTrue(), "not a board error: %v", err)
			Expect(err.Error()).To(ContainSubstring("gave up after 3 attempts"))
			Expect(listener.accepted.Load()).To(BeEquivalentTo(3))
			Expect(counter.count(models.RoutePing)).To(BeZero())
		})

		It("retries ping, domain upserts and removals", func() {
			_, err := c.DesireLRP(ctx, helloLRP("hello"))
			Expect(err).NotTo(HaveOccurred())

			dropNext(1)
			Expect(c.Ping(ctx)).To(BeTrue())
			dropNext(1)
			Expect(c.UpsertDomain(ctx, "cork", time.Minute)).To(Succeed())
			dropNext(1)
			Expect(c.RemoveDesiredLRP(ctx, "hello")).To(Succeed())
			Expect(listener.drop.Load()).To(BeNumerically("<", 0), "every drop was used")
		})

		It("does not retry a desire, even though a retry would have worked", func() {
			dropNext(1)
			_, err := c.DesireLRP(ctx, helloLRP("hello"))
			Expect(err).To(HaveOccurred())
			Expect(err).NotTo(BeAssignableToTypeOf(&models.Error{}))
			Expect(listener.accepted.Load()).To(BeEquivalentTo(1))
			Expect(counter.count(models.RouteDesireDesiredLRP)).To(BeZero())

			_, err = c.DesiredLRPByProcessGuid(ctx, "hello")
			Expect(err).To(errorOfType(models.Error_ResourceNotFound))
		})

		It("does not retry an update of instances", func() {
			_, err := c.DesireLRP(ctx, helloLRP("hello"))
			Expect(err).NotTo(HaveOccurred())
			accepted := listener.accepted.Load()

			dropNext(1)
			instances := int32(5)
			_, err = c.UpdateDesiredLRP(ctx, "hello", &models.DesiredLRPUpdate{Instances: &instances})
			Expect(err).To(HaveOccurred())
			Expect(listener.accepted.Load() - accepted).To(BeEquivalentTo(1))

			got, err := c.DesiredLRPByProcessGuid(ctx, "hello")
			Expect(err).NotTo(HaveOccurred())
			Expect(got.GetInstances()).To(BeEquivalentTo(2))
		})

		It("retries an update that only sets a named definition", func() {
			_, err := c.DesireLRP(ctx, helloLRP("hello"))
			Expect(err).NotTo(HaveOccurred())

			dropNext(1)
			updated, err := c.UpdateDesiredLRP(ctx, "hello", &models.DesiredLRPUpdate{Definition: helloDefinition("v2"), UpdateIdentifier: "v2"})
			Expect(err).NotTo(HaveOccurred())
			Expect(updated.GetActiveDefinitionId()).To(Equal("v2"))
			Expect(listener.drop.Load()).To(BeNumerically("<", 0), "the drop was used")
		})

		It("retries listing and getting operations", func() {
			_, desired, err := c.DesireLRPWithOperation(ctx, helloLRP("hello"))
			Expect(err).NotTo(HaveOccurred())

			dropNext(1)
			page, _, err := c.Operations(ctx, client.OperationFilter{ProcessGuid: "hello"})
			Expect(err).NotTo(HaveOccurred())
			Expect(page).To(HaveLen(1))
			dropNext(1)
			all, err := c.AllOperations(ctx, client.OperationFilter{})
			Expect(err).NotTo(HaveOccurred())
			Expect(all).To(HaveLen(1))
			dropNext(1)
			op, err := c.Operation(ctx, desired)
			Expect(err).NotTo(HaveOccurred())
			Expect(op.GetKind()).To(Equal(models.Operation_DESIRE))
			Expect(listener.drop.Load()).To(BeNumerically("<", 0), "every drop was used")
		})

		It("does not retry a cancel", func() {
			_, err := c.DesireLRP(ctx, helloLRP("hello"))
			Expect(err).NotTo(HaveOccurred())
			_, err = c.UpdateDesiredLRP(ctx, "hello", &models.DesiredLRPUpdate{Definition: helloDefinition("v2"), UpdateIdentifier: "v2"})
			Expect(err).NotTo(HaveOccurred())
			_, queued, err := c.UpdateDesiredLRPWithOperation(ctx, "hello", &models.DesiredLRPUpdate{Definition: helloDefinition("v3"), UpdateIdentifier: "v3", Queue: true})
			Expect(err).NotTo(HaveOccurred())
			accepted := listener.accepted.Load()

			dropNext(1)
			_, err = c.CancelOperation(ctx, queued)
			Expect(err).To(HaveOccurred())
			Expect(err).NotTo(BeAssignableToTypeOf(&models.Error{}))
			Expect(listener.accepted.Load() - accepted).To(BeEquivalentTo(1))
			Expect(counter.count(models.RouteCancelOperation)).To(BeZero())

			op, err := c.Operation(ctx, queued)
			Expect(err).NotTo(HaveOccurred())
			Expect(op.GetStatus()).To(Equal(models.Operation_PENDING))
		})

		It("does not retry adding or removing a freeze window", func() {
			calls := map[string]func() error{
				models.RouteAddFreezeWindow: func() error {
					_, err := c.AddFreezeWindow(ctx, &models.FreezeWindow{Name: "xmas", From: "2026-12-24T00:00:00Z", Until: "2026-12-27T00:00:00Z"})
					return err
				},
				models.RouteRemoveFreezeWindow: func() error { return c.RemoveFreezeWindow(ctx, "xmas") },
			}
			for route, call := range calls {
				accepted := listener.accepted.Load()
				dropNext(1)
				err := call()
				Expect(err).To(HaveOccurred(), route)
				Expect(err).NotTo(BeAssignableToTypeOf(&models.Error{}), route)
				Expect(listener.accepted.Load()-accepted).To(BeEquivalentTo(1), route)
				Expect(counter.count(route)).To(BeZero(), route)
			}
		})

		It("does not retry a promote, a pause, a resume or an edit", func() {
			_, err := c.DesireLRP(ctx, helloLRP("hello"))
			Expect(err).NotTo(HaveOccurred())
			calls := map[string]func() error{
				models.RoutePromoteRollout: func() error { _, _, err := c.PromoteRollout(ctx, "hello", 50, nil); return err },
				models.RoutePauseRollout:   func() error { _, _, err := c.PauseRollout(ctx, "hello"); return err },
				models.RouteResumeRollout:  func() error { _, _, err := c.ResumeRollout(ctx, "hello"); return err },
				models.RouteEditRollout: func() error {
					_, _, err := c.EditRollout(ctx, &models.EditRolloutRequest{ProcessGuid: "hello", MaxSurge: proto.String("2")})
					return err
				},
			}
			for route, call := range calls {
				accepted := listener.accepted.Load()
				dropNext(1)
				err := call()
				Expect(err).To(HaveOccurred(), route)
				Expect(err).NotTo(BeAssignableToTypeOf(&models.Error{}), route)
				Expect(listener.accepted.Load()-accepted).To(BeEquivalentTo(1), route)
				Expect(counter.count(route)).To(BeZero(), route)
			}
		})

		It("does not retry when retries are off", func() {
			c = serveOn(board, client.WithRetries(0))
			dropNext(1)
			_, err := c.Domains(ctx)
			Expect(err).To(HaveOccurred())
			Expect(listener.accepted.Load()).To(BeEquivalentTo(1))
		})

		It("does not retry once the caller has given up", func() {
			dropNext(1)
			canceled, cancel := context.WithCancel(ctx)
			cancel()
			_, err := c.Domains(canceled)
			Expect(errors.Is(err, context.Canceled)).To(BeTrue(), "got %v", err)
			Expect(counter.count(models.RouteDomains)).To(BeZero())
		})
	})

	Context("when the board did the work but the answer was lost", func() {
		It("returns the transport error for a desire instead of a misleading ResourceExists", func() {
			c := serveOn(losingAnswers(board, models.RouteDesireDesiredLRP, 1))
			_, err := c.DesireLRP(ctx, helloLRP("hello"))
			Expect(err).To(HaveOccurred())
			Expect(models.IsErrorType(err, models.Error_ResourceExists)).To(BeFalse())
			Expect(counter.count(models.RouteDesireDesiredLRP)).To(Equal(1))

			got, err := c.DesiredLRPByProcessGuid(ctx, "hello")
			Expect(err).NotTo(HaveOccurred(), "the desire did land")
			Expect(got.GetInstances()).To(BeEquivalentTo(2))
		})

		It("repeats a named definition update harmlessly", func() {
			c := serveOn(losingAnswers(board, models.RouteUpdateDesiredLRP, 1))
			_, err := c.DesireLRP(ctx, helloLRP("hello"))
			Expect(err).NotTo(HaveOccurred())

			updated, err := c.UpdateDesiredLRP(ctx, "hello", &models.DesiredLRPUpdate{Definition: helloDefinition("v2"), UpdateIdentifier: "v2"})
			Expect(err).NotTo(HaveOccurred())
			Expect(updated.GetActiveDefinitionId()).To(Equal("v2"))
			Expect(counter.count(models.RouteUpdateDesiredLRP)).To(Equal(2))
			definitions, err := c.Definitions(ctx, "hello")
			Expect(err).NotTo(HaveOccurred())
			Expect(definitions).To(HaveLen(2))
		})

		It("returns the transport error for a cancel instead of a misleading InvalidStateTransition", func() {
			c := serveOn(losingAnswers(board, models.RouteCancelOperation, 1))
			_, err := c.DesireLRP(ctx, helloLRP("hello"))
			Expect(err).NotTo(HaveOccurred())
			_, err = c.UpdateDesiredLRP(ctx, "hello", &models.DesiredLRPUpdate{Definition: helloDefinition("v2"), UpdateIdentifier: "v2"})
			Expect(err).NotTo(HaveOccurred())
			_, queued, err := c.UpdateDesiredLRPWithOperation(ctx, "hello", &models.DesiredLRPUpdate{Definition: helloDefinition("v3"), UpdateIdentifier: "v3", Queue: true})
			Expect(err).NotTo(HaveOccurred())

			_, err = c.CancelOperation(ctx, queued)
			Expect(err).To(HaveOccurred())
			Expect(models.IsErrorType(err, models.Error_InvalidStateTransition)).To(BeFalse())
			Expect(counter.count(models.RouteCancelOperation)).To(Equal(1))

			op, err := c.Operation(ctx, queued)
			Expect(err).NotTo(HaveOccurred())
			Expect(op.GetStatus()).To(Equal(models.Operation_CANCELED), "the cancel did land")
		})

		It("passes on ResourceNotFound from a repeated removal that had landed", func() {
			c := serveOn(losingAnswers(board, models.RouteRemoveDesiredLRP, 1))
			_, err := c.DesireLRP(ctx, helloLRP("hello"))
			Expect(err).NotTo(HaveOccurred())

			err = c.RemoveDesiredLRP(ctx, "hello")
			Expect(err).To(errorOfType(models.Error_ResourceNotFound))
			Expect(counter.count(models.RouteRemoveDesiredLRP)).To(Equal(2))
		})
	})

	Context("when an attempt times out before an answer", func() {
		It("retries a read on a new attempt", func() {
			// The limit leaves the second attempt ample time on a busy machine.
			c := serveOn(hangingFirst(board, models.RouteDomains), client.WithTimeout(time.Second))
			Expect(client.New(serverURL).UpsertDomain(ctx, "cork", 0)).To(Succeed())
			domains, err := c.Domains(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(domains).To(HaveLen(1))
			Expect(counter.count(models.RouteDomains)).To(Equal(1), "only the second attempt reached the board")
		})

		It("does not retry a desire, and says it timed out", func() {
			c := serveOn(hangingFirst(board, models.RouteDesireDesiredLRP), client.WithTimeout(200*time.Millisecond))
			_, err := c.DesireLRP(ctx, helloLRP("hello"))
			Expect(errors.Is(err, context.DeadlineExceeded)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(ContainSubstring("timeout 200ms per attempt"))
			Expect(counter.count(models.RouteDesireDesiredLRP)).To(BeZero())
			Expect(strings.Count(err.Error(), "attempts")).To(BeZero())
		})
	})
})

var _ = DescribeTable("RepeatableUpdate",
	func(update *models.DesiredLRPUpdate, repeatable bool) {
		Expect(client.RepeatableUpdate(update)).To(Equal(repeatable))
	},
	Entry("a named definition alone", &models.DesiredLRPUpdate{Definition: helloDefinition("v2"), UpdateIdentifier: "v2"}, true),
	Entry("a definition without a name", &models.DesiredLRPUpdate{Definition: helloDefinition("v2")}, false),
	Entry("a name without a definition", &models.DesiredLRPUpdate{UpdateIdentifier: "v2"}, false),
	Entry("instances", &models.DesiredLRPUpdate{Instances: new(int32)}, false),
	Entry("a named definition and instances", &models.DesiredLRPUpdate{Definition: helloDefinition("v2"), UpdateIdentifier: "v2", Instances: new(int32)}, false),
	Entry("a named definition and an annotation", &models.DesiredLRPUpdate{Definition: helloDefinition("v2"), UpdateIdentifier: "v2", Annotation: new(string)}, false),
	Entry("a named definition and routes", &models.DesiredLRPUpdate{Definition: helloDefinition("v2"), UpdateIdentifier: "v2", Routes: &structpb.Struct{}}, false),
	Entry("a named definition and a strategy", &models.DesiredLRPUpdate{Definition: helloDefinition("v2"), UpdateIdentifier: "v2", UpdateStrategy: &models.UpdateStrategy{}}, false),
	Entry("a named definition and autoscaling", &models.DesiredLRPUpdate{Definition: helloDefinition("v2"), UpdateIdentifier: "v2", Autoscaling: &models.Autoscaling{}}, false),
	Entry("autoscaling alone", &models.DesiredLRPUpdate{Autoscaling: &models.Autoscaling{}}, false),
	Entry("a queued named definition", &models.DesiredLRPUpdate{Definition: helloDefinition("v2"), UpdateIdentifier: "v2", Queue: true}, false),
	Entry("a named definition under a modification tag", &models.DesiredLRPUpdate{Definition: helloDefinition("v2"), UpdateIdentifier: "v2", ModificationTag: &models.ModificationTag{}}, false),
	Entry("nothing", &models.DesiredLRPUpdate{}, false),
	Entry("nil", nil, false),
)
