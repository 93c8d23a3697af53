package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

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

// Streams resumed from before the board's history of 10,000 events read
// the log in turns (events/subscription.go, logTurn): with
// max_event_log_readers_per_client 2, four streams catching up at once are never
// read for more than two at a time, the others wait, and each still gets
// every event in order.
var _ = Describe("bbs with max_event_log_readers_per_client", func() {
	It("lets that many streams read the event log at once, the others waiting their turn, each getting every event", func() {
		path := filepath.Join(GinkgoT().TempDir(), "bbs.json")
		text := fmt.Sprintf(`{"listen_address": "127.0.0.1:0", "data_dir": %q, "max_event_log_readers_per_client": 2}`,
			filepath.Join(GinkgoT().TempDir(), "data"))
		Expect(os.WriteFile(path, []byte(text), 0o600)).To(Succeed())
		board := startBoard("-config", path)
		// Two events a desire: more than twice what the board's history holds.
		desireInParallel(board.client(), "catch-up", 12_000, 0)
		last := int(board.metric("corkboard_event_log_position"))
		Expect(last).To(BeNumerically(">", 20_000))

		ids := make([][]int, 4)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Go(func() {
				defer GinkgoRecover()
				ids[i] = streamIDs(board.url, 1, last)
			})
		}
		var mostReading, mostWaiting float64
		streaming := make(chan struct{})
		go func() { wg.Wait(); close(streaming) }()
	scraping:
		for {
			select {
			case <-streaming:
				break scraping
			case <-time.After(20 * time.Millisecond):
				mostReading = max(mostReading, board.metric("corkboard_event_log_readers"))
				mostWaiting = max(mostWaiting, board.metric("corkboard_event_log_readers_waiting"))
			}
		}
		Expect(mostReading).To(Equal(2.0))
		Expect(mostWaiting).To(BeNumerically(">=", 1))
		for _, got := range ids {
			Expect(got).To(HaveLen(last - 1))
			for j, id := range got {
				Expect(id).To(Equal(j+2), "event %d", j)
			}
		}
	})
})

// streamIDs opens an event stream resumed after lastEventID and returns the
// ids it carries up to and including last, reading a little at a time.
func streamIDs(url string, lastEventID, last int) []int {
	GinkgoHelper()
	request, err := http.NewRequest(http.MethodPost, url+"/v1/events", strings.NewReader(`{}`))
	Expect(err).NotTo(HaveOccurred())
	request.Header.Set("Content-Type", "application/json")
	request.Header.Set("Last-Event-ID", strconv.Itoa(lastEventID))
	resp, err := http.DefaultClient.Do(request)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	var ids []int
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for lines.Scan() {
		id, found := strings.CutPrefix(lines.Text(), "id: ")
		if !found {
			continue
		}
		n, err := strconv.Atoi(id)
		Expect(err).NotTo(HaveOccurred())
		ids = append(ids, n)
		if n >= last {
			return ids
		}
		if len(ids)%200 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	Fail(fmt.Sprintf("the stream ended after %d events: %v", len(ids), lines.Err()))
	return nil
}

// max_connections_per_address reaches the listener: one connection past
// it from an address is closed as it comes, another address is served,
// and the refusal is counted.
var _ = Describe("bbs with max_connections_per_address", func() {
	It("closes the connection past the cap from one address at once, serves another address, and counts the refusal", func() {
		path := filepath.Join(GinkgoT().TempDir(), "bbs.json")
		text := fmt.Sprintf(`{"listen_address": "127.0.0.1:0", "data_dir": %q, "max_connections_per_address": 3}`,
			filepath.Join(GinkgoT().TempDir(), "data"))
		Expect(os.WriteFile(path, []byte(text), 0o600)).To(Succeed())
		board := startBoard("-config", path)
		address := strings.TrimPrefix(board.url, "http://")

		for range 3 {
			Expect(pingKeptAlive(address, "127.0.0.9")).To(Succeed())
		}
		Expect(pingKeptAlive(address, "127.0.0.9")).NotTo(Succeed())
		Expect(pingKeptAlive(address, "127.0.0.10")).To(Succeed())
		Expect(board.metric(`corkboard_http_connections_refused_total{limit="connections_per_address"}`)).To(Equal(1.0))
		Expect(board.metric("corkboard_http_connections_open")).To(BeNumerically(">=", 4))
	})
})

// pingKeptAlive pings the board on a new connection from the loopback
// address from and leaves the connection open until the spec ends.
func pingKeptAlive(address, from string) error {
	GinkgoHelper()
	dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	conn, err := dialer.Dial("tcp", address)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { conn.Close() })
	Expect(conn.SetDeadline(time.Now().Add(5 * time.Second))).To(Succeed())
	fmt.Fprintf(conn, "POST /v1/ping HTTP/1.1\r\nHost: board\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("ping: %s", resp.Status)
	}
	return nil
}
