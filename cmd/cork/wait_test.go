package main_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// cork wait ends on an answer that asking again will not change, and waits
// through one that may.
var _ = Describe("cork wait against an HTTP answer that is no board's", func() {
	serve := func(status int, page string) (url string, asked *atomic.Int32) {
		asked = &atomic.Int32{}
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			asked.Add(1)
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(status)
			w.Write([]byte(page))
		}))
		DeferCleanup(server.Close)
		return server.URL, asked
	}

	It("ends at the first 4xx, saying what came back (a board with TLS asked in plain HTTP)", func() {
		url, asked := serve(http.StatusBadRequest, "<!doctype html><title>Corkboard: use https</title><h1>This board speaks HTTPS</h1>")
		r := runCork(url, "", "wait", "hello", "--within", "1m")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(Equal("cork: /v1/desired_lrps/get: board answered HTTP 400 Bad Request: Corkboard: use https\n"))
		Expect(asked.Load()).To(BeEquivalentTo(1), "asked once")
	})

	It("waits through a 5xx, as a proxy answers while the board restarts", func() {
		url, asked := serve(http.StatusBadGateway, "<html><title>502 Bad Gateway</title></html>")
		r := runCork(url, "", "wait", "hello", "--within", "1500ms")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(ContainSubstring("hello: not settled within 1.5s: "))
		Expect(r.stderr).To(ContainSubstring("502 Bad Gateway"))
		Expect(asked.Load()).To(BeNumerically(">", 1), "asked again")
	})
})
