package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The caps of the board's config reach its handlers: with
// max_event_subscribers 1, a second event stream is refused at once with
// ResourceExhausted while the first is open.
var _ = Describe("bbs with max_event_subscribers", func() {
	It("refuses the subscriber past the cap with ResourceExhausted, and takes one again once a stream ends", func() {
		path := filepath.Join(GinkgoT().TempDir(), "bbs.json")
		text := fmt.Sprintf(`{"listen_address": "127.0.0.1:0", "data_dir": %q, "max_event_subscribers": 1}`,
			filepath.Join(GinkgoT().TempDir(), "data"))
		Expect(os.WriteFile(path, []byte(text), 0o600)).To(Succeed())
		board := startBoard("-config", path)

		subscribe := func() *http.Response {
			resp, err := http.Post(board.url+"/v1/events", "application/json", strings.NewReader(`{}`))
			Expect(err).NotTo(HaveOccurred())
			return resp
		}
		first := subscribe()
		Expect(first.StatusCode).To(Equal(http.StatusOK))
		Expect(first.Header.Get("Content-Type")).To(HavePrefix("text/event-stream"))

		second := subscribe()
		body, err := io.ReadAll(second.Body)
		second.Body.Close()
		Expect(err).NotTo(HaveOccurred())
		Expect(second.StatusCode).To(Equal(http.StatusServiceUnavailable))
		Expect(string(body)).To(ContainSubstring("ResourceExhausted"))
		Expect(string(body)).To(ContainSubstring("event_subscribers"))

		first.Body.Close()
		Eventually(func() int {
			resp := subscribe()
			defer resp.Body.Close()
			return resp.StatusCode
		}).Should(Equal(http.StatusOK))
	})
})
