package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/ui"
)

// These specs put a stand-in server where the board would be, to produce
// answers a healthy board does not give: proxies, wrong routes, odd bodies.
var _ = Describe("Reading answers", func() {
	var ctx context.Context

	BeforeEach(func() {
		ctx = context.Background()
	})

	serve := func(handler http.HandlerFunc) *client.Client {
		server := httptest.NewServer(handler)
		DeferCleanup(server.Close)
		return client.New(server.URL, client.WithRetries(0))
	}

	It("sends protobuf and asks for protobuf", func() {
		var contentType, accept string
		var sent models.DesiredLRPByProcessGuidRequest
		var decodeErr error
		c := serve(func(w http.ResponseWriter, r *http.Request) {
			contentType, accept = r.Header.Get("Content-Type"), r.Header.Get("Accept")
			body, _ := io.ReadAll(r.Body)
			decodeErr = proto.Unmarshal(body, &sent)
			answer, _ := proto.Marshal(&models.DesiredLRPResponse{DesiredLrp: &models.DesiredLRP{ProcessGuid: sent.GetProcessGuid()}})
			w.Header().Set("Content-Type", models.ContentTypeProtobuf)
			w.Write(answer)
		})
		lrp, err := c.DesiredLRPByProcessGuid(ctx, "hello")
		Expect(err).NotTo(HaveOccurred())
		Expect(lrp.GetProcessGuid()).To(Equal("hello"))
		Expect(contentType).To(Equal(models.ContentTypeProtobuf))
		Expect(accept).To(Equal(models.ContentTypeProtobuf))
		Expect(decodeErr).NotTo(HaveOccurred())
		Expect(sent.GetProcessGuid()).To(Equal("hello"))
	})

	It("decodes a typed error sent with a non-2xx status", func() {
		c := serve(func(w http.ResponseWriter, r *http.Request) {
			answer, _ := proto.Marshal(&models.DesiredLRPResponse{Error: models.NewError(models.Error_ResourceNotFound, "no hello here")})
			w.Header().Set("Content-Type", models.ContentTypeProtobuf)
			w.WriteHeader(http.StatusNotFound)
			w.Write(answer)
		})
		_, err := c.DesiredLRPByProcessGuid(ctx, "hello")
		Expect(err).To(errorOfType(models.Error_ResourceNotFound))
		Expect(err).To(MatchError("ResourceNotFound: no hello here"))
	})

	It("decodes a typed error answered in JSON", func() {
		c := serve(func(w http.ResponseWriter, r *http.Request) {
			answer, _ := protojson.Marshal(&models.RemoveDesiredLRPResponse{Error: models.NewError(models.Error_Unavailable, "draining")})
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write(answer)
		})
		Expect(c.RemoveDesiredLRP(ctx, "hello")).To(errorOfType(models.Error_Unavailable))
	})

	It("reports the status of a non-2xx answer without a typed body", func() {
		c := serve(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "upstream board is down", http.StatusBadGateway)
		})
		_, err := c.Domains(ctx)
		var statusErr *client.HTTPStatusError
		Expect(errors.As(err, &statusErr)).To(BeTrue(), "got %v", err)
		Expect(statusErr.StatusCode).To(Equal(http.StatusBadGateway))
		Expect(err.Error()).To(ContainSubstring("/v1/domains/list"))
		Expect(err.Error()).To(ContainSubstring("502 Bad Gateway"))
		Expect(err.Error()).To(ContainSubstring("upstream board is down"))
	})

	It("says what an HTML answer says in one line: its title, else its text", func() {
		page := ui.PlainHTTPPage("board.example:8889")
		c := serve(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusBadRequest)
			w.Write(page)
		})
		_, err := c.Ping(ctx)
		Expect(err).To(MatchError("/v1/ping: board answered HTTP 400 Bad Request: Corkboard: use https"),
			"the page a board with TLS answers plain HTTP with")

		c = serve(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte("<html><body>\n<h1>502 Bad Gateway</h1>\n<p>no server &amp; no luck</p></body></html>"))
		})
		_, err = c.Ping(ctx)
		Expect(err).To(MatchError("/v1/ping: board answered HTTP 502 Bad Gateway: 502 Bad Gateway no server & no luck"))
	})

	It("reports an empty non-2xx answer by its status", func() {
		c := serve(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
		})
		_, err := c.Ping(ctx)
		var statusErr *client.HTTPStatusError
		Expect(errors.As(err, &statusErr)).To(BeTrue(), "got %v", err)
		Expect(statusErr.StatusCode).To(Equal(http.StatusInternalServerError))
	})

	It("fails clearly on a 200 whose body does not decode", func() {
		c := serve(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", models.ContentTypeProtobuf)
			w.Write([]byte{0xff, 0xff, 0xff})
		})
		_, err := c.Definitions(ctx, "hello")
		Expect(err).To(MatchError(ContainSubstring("decode /v1/definitions/list response")))
	})

	It("fails rather than return nothing when a 200 lacks its result", func() {
		c := serve(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", models.ContentTypeProtobuf)
		})
		lrp, err := c.DesiredLRPByProcessGuid(ctx, "hello")
		Expect(lrp).To(BeNil())
		Expect(err).To(MatchError(ContainSubstring("without a result")))
	})

	It("surfaces the real board's typed answer for a route it does not serve", func() {
		board := startBoard()
		c := client.New(board.URL + "/not-the-api")
		_, err := c.Ping(ctx)
		Expect(err).To(errorOfType(models.Error_InvalidRequest))
		Expect(err.Error()).To(ContainSubstring("no API route"))
	})
})
