package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// A board at its cap answers ResourceExhausted before it does anything, so
// the client sends any call again, even one it would not repeat after a
// transport failure (a desire), and gives up after its retries.
var _ = Describe("a board at its cap of requests in flight", func() {
	var (
		refusals atomic.Int32
		sent     atomic.Int32
		server   *httptest.Server
	)
	BeforeEach(func() {
		sent.Store(0)
		server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			resp := &models.DesireLRPResponse{}
			if sent.Add(1) <= refusals.Load() {
				resp.Error = models.NewError(models.Error_ResourceExhausted, "requests_in_flight: the board serves at most 1 requests (event streams aside) at once; retry later")
			} else {
				resp.DesiredLrp = &models.DesiredLRP{ProcessGuid: "web"}
			}
			body, err := proto.Marshal(resp)
			Expect(err).NotTo(HaveOccurred())
			w.Header().Set("Content-Type", models.ContentTypeProtobuf)
			_, _ = w.Write(body)
		}))
		DeferCleanup(server.Close)
	})
	newClient := func() *client.Client {
		return client.New(server.URL, client.WithRetries(3), client.WithRetryBackoff(time.Millisecond))
	}

	It("sends a desire again until the board takes it", func() {
		refusals.Store(2)
		stored, err := newClient().DesireLRP(context.Background(), &models.DesiredLRP{ProcessGuid: "web"})
		Expect(err).NotTo(HaveOccurred())
		Expect(stored.GetProcessGuid()).To(Equal("web"))
		Expect(sent.Load()).To(BeEquivalentTo(3))
	})

	It("gives up after its retries with the board's ResourceExhausted", func() {
		refusals.Store(100)
		_, err := newClient().DesireLRP(context.Background(), &models.DesiredLRP{ProcessGuid: "web"})
		Expect(models.IsErrorType(err, models.Error_ResourceExhausted)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("gave up after 4 attempts"))
		Expect(sent.Load()).To(BeEquivalentTo(4))
	})
})
