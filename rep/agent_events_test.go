package rep_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep"
	"github.com/corkboard/corkboard/rep/internal/reptest"
)

// bbsPath is the built board, built by the first spec that runs one.
var bbsPath string

var boardListening = regexp.MustCompile(`"message":"bbs\.api-server\.listening".*"url":"(http://[^"]+)"`)

// startBBS runs a board process on a fresh SQLite database and returns
// its URL; it is stopped after the spec.
func startBBS() string {
	GinkgoHelper()
	if bbsPath == "" {
		var err error
		bbsPath, err = gexec.Build("github.com/corkboard/corkboard/cmd/bbs")
		Expect(err).NotTo(HaveOccurred())
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	address := listener.Addr().String()
	listener.Close()
	dir := GinkgoT().TempDir()
	raw, err := json.Marshal(map[string]any{
		"listen_address": address, "database_driver": "sqlite", "data_dir": dir,
		"cell_presence_ttl": "10s", "convergence_interval": "1s",
	})
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(dir, "bbs.json")
	Expect(os.WriteFile(path, raw, 0o600)).To(Succeed())
	session, err := gexec.Start(exec.Command(bbsPath, "-config", path), GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		session.Signal(syscall.SIGTERM)
		Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit())
	})
	Eventually(session.Out).Should(gbytes.Say(`bbs\.api-server\.listening`))
	match := boardListening.FindSubmatch(session.Out.Contents())
	Expect(match).NotTo(BeNil())
	return string(match[1])
}

// streamMode is what boardProxy does with a request for the event stream.
type streamMode int

const (
	// forwardStream passes it to the board.
	forwardStream streamMode = iota
	// refuseStream answers 502, as a proxy in front of a gone board does.
	refuseStream
	// fakeStream answers with a stream the spec writes (fakeEvents).
	fakeStream
)

// boardProxy stands between the agent and a real board: it counts calls
// by route and can refuse the event stream or play one of its own.
type boardProxy struct {
	url string

	mu          sync.Mutex
	calls       map[string]int
	mode        streamMode
	openStreams int
	// lastEventIDs are the Last-Event-ID headers of the stream requests,
	// in order ("" for none).
	lastEventIDs []string
	// frames go to the open fake stream; endFake ends it.
	frames  chan string
	endFake chan struct{}
}

func startBoardProxy(boardURL string) *boardProxy {
	GinkgoHelper()
	target, err := url.Parse(boardURL)
	Expect(err).NotTo(HaveOccurred())
	forward := httputil.NewSingleHostReverseProxy(target)
	forward.FlushInterval = -1 // events go through as they come
	p := &boardProxy{calls: map[string]int{}, frames: make(chan string), endFake: make(chan struct{})}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.calls[r.URL.Path]++
		mode := p.mode
		if r.URL.Path == models.RouteEvents {
			p.lastEventIDs = append(p.lastEventIDs, r.Header.Get("Last-Event-ID"))
		}
		p.mu.Unlock()
		if r.URL.Path != models.RouteEvents {
			forward.ServeHTTP(w, r)
			return
		}
		switch mode {
		case refuseStream:
			http.Error(w, "bad gateway", http.StatusBadGateway)
		case fakeStream:
			p.serveFake(w, r)
		default:
			p.streamOpened(1)
			defer p.streamOpened(-1)
			forward.ServeHTTP(w, r)
		}
	}))
	DeferCleanup(server.Close)
	p.url = server.URL
	return p
}

func (p *boardProxy) serveFake(w http.ResponseWriter, r *http.Request) {
	p.streamOpened(1)
	defer p.streamOpened(-1)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	flusher := w.(http.Flusher)
	flusher.Flush()
	for {
		select {
		case frame := <-p.frames:
			fmt.Fprint(w, frame)
			flusher.Flush()
		case <-p.endFake:
			return
		case <-r.Context().Done():
			return
		}
	}
}

func (p *boardProxy) streamOpened(delta int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.openStreams += delta
}

func (p *boardProxy) streams() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.openStreams
}

func (p *boardProxy) setMode(mode streamMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = mode
}

func (p *boardProxy) count(route string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[route]
}

func (p *boardProxy) streamRequests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.lastEventIDs)
}

// sendFake writes one event to the open fake stream, as a board that
// streams protobuf payloads does.
func (p *boardProxy) sendFake(id uint64, eventType string, payload proto.Message) {
	GinkgoHelper()
	raw, err := proto.Marshal(payload)
	Expect(err).NotTo(HaveOccurred())
	frame := ""
	if id != 0 {
		frame = "id: " + strconv.FormatUint(id, 10) + "\n"
	}
	frame += "event: " + eventType + "\ndata: " + base64.StdEncoding.EncodeToString(raw) + "\n\n"
	Eventually(p.frames).Should(BeSent(frame))
}

var _ = Describe("the agent following the board's event stream", func() {
	const cellID = "cell-a"
	var (
		proxy *boardProxy
		board *client.Client
	)

	BeforeEach(func() {
		boardURL := startBBS()
		proxy = startBoardProxy(boardURL)
		// The spec's own calls go to the board, not through the proxy,
		// which counts the agent's.
		board = client.New(boardURL)
		// A fresh domain: the board deletes the rows a scale-down leaves
		// beyond the instance count.
		Expect(board.UpsertDomain(context.Background(), "rep-suite", time.Hour)).To(Succeed())
	})

	// startAgent runs an agent of cellID against the proxy, waits for its
	// cell to be registered and returns its executor, a fake: how the
	// agent learns of its rows is all these specs look at.
	startAgent := func(pollInterval, retryInterval time.Duration) *fakeExecutor {
		GinkgoHelper()
		exe := newFakeExecutor()
		agent, err := rep.NewAgent(rep.AgentConfig{
			Cell: &models.Cell{
				CellId: cellID, RepUrl: "http://127.0.0.1:1", Zone: "z1",
				Capacity: &models.CellCapacity{MemoryMb: 8192, DiskMb: 8192, Instances: 10},
			},
			Board:           client.New(proxy.url),
			CellClient:      client.NewCellClient(proxy.url, cellID),
			Executor:        exe,
			PollInterval:    pollInterval,
			RetryInterval:   retryInterval,
			StopGracePeriod: 100 * time.Millisecond,
			// A bulk report also hands out what is placed: none comes
			// while a spec runs.
			BulkSyncInterval: time.Hour,
			Logger:           lagertest.NewTestLogger("rep"),
		})
		Expect(err).NotTo(HaveOccurred())
		signals, ready, done := make(chan os.Signal, 1), make(chan struct{}), make(chan error, 1)
		go func() { done <- agent.Run(signals, ready) }()
		<-ready
		DeferCleanup(func() {
			signals <- os.Interrupt
			Eventually(done).Should(Receive(BeNil()))
		})
		Eventually(func() []string {
			cells, err := board.Cells(context.Background())
			Expect(err).NotTo(HaveOccurred())
			var ids []string
			for _, cell := range cells {
				ids = append(ids, cell.GetCellId())
			}
			return ids
		}).Should(ContainElement(cellID))
		return exe
	}

	desire := func(processGuid string, instances int32) {
		GinkgoHelper()
		def := reptest.HelloDefinition(reptest.TCPCheck())
		def.DefinitionId = ""
		_, err := board.DesireLRP(context.Background(), &models.DesiredLRP{
			ProcessGuid: processGuid, Domain: "rep-suite", Instances: instances, Definition: def,
		})
		Expect(err).NotTo(HaveOccurred())
	}

	// states lists the states of processGuid's rows on the cell, by index.
	states := func(processGuid string) []models.ActualLRP_State {
		GinkgoHelper()
		rows, err := board.ActualLRPs(context.Background(), client.ActualLRPFilter{ProcessGuid: processGuid})
		Expect(err).NotTo(HaveOccurred())
		var got []models.ActualLRP_State
		for _, row := range rows {
			if row.GetCellId() == cellID {
				got = append(got, row.GetState())
			}
		}
		return got
	}
	running := func(n int) []models.ActualLRP_State {
		return slices.Repeat([]models.ActualLRP_State{models.ActualLRP_RUNNING}, n)
	}
	placed := func(n int) []models.ActualLRP_State {
		return slices.Repeat([]models.ActualLRP_State{models.ActualLRP_UNCLAIMED}, n)
	}

	It("claims and runs what the board places on its cell at once, and stops what the board takes away, with polls an hour apart", func() {
		exe := startAgent(time.Hour, time.Hour)
		Eventually(proxy.streams).Should(Equal(1))
		Eventually(func() int { return proxy.count(models.RouteActualLRPs) }).Should(Equal(1), "one full sync once the stream is open")

		desired := time.Now()
		desire("hello", 3)
		// Nothing but an event can bring the placement before the hour is
		// up; the wait is the suite's bound on a hang.
		Eventually(func() []models.ActualLRP_State { return states("hello") }).Should(Equal(running(3)))
		AddReportEntry("desire to 3 RUNNING through the event stream", time.Since(desired).Round(time.Millisecond).String())
		// Placements woke the agent; its own claims and starts did not.
		AddReportEntry("lists of the cell's rows for the placement of 3 instances", proxy.count(models.RouteActualLRPs)-1)

		Expect(exe.Instances()).To(HaveLen(3))

		By("a scale-down takes rows away, and the agent stops their instances")
		one := int32(1)
		_, err := board.UpdateDesiredLRP(context.Background(), "hello", &models.DesiredLRPUpdate{Instances: &one})
		Expect(err).NotTo(HaveOccurred())
		Eventually(exe.Instances).Should(HaveLen(1))
		Expect(states("hello")).To(Equal(running(1)))
		Expect(proxy.streams()).To(Equal(1), "one stream all along")
	})

	It("polls every retry interval while the board refuses the stream, and slows down once a stream opens", func() {
		proxy.setMode(refuseStream)
		startAgent(time.Hour, 100*time.Millisecond)

		desire("hello", 2)
		Eventually(func() []models.ActualLRP_State { return states("hello") }).Should(Equal(running(2)))
		Eventually(func() int { return proxy.count(models.RouteEvents) }).Should(BeNumerically(">=", 2), "it tries the stream again")

		By("once the stream opens, only events and the hourly poll make it list")
		proxy.setMode(forwardStream)
		// The backoff has grown to at most 10 s by now.
		Eventually(proxy.streams).WithTimeout(time.Minute).Should(Equal(1))
		// The stream's full sync, and a poll that was under way, settle.
		var listed int
		Eventually(func() bool {
			listed = proxy.count(models.RouteActualLRPs)
			time.Sleep(300 * time.Millisecond)
			return proxy.count(models.RouteActualLRPs) == listed
		}).Should(BeTrue())
		// Polling every 100ms would list about 10 times in a second.
		Consistently(func() int { return proxy.count(models.RouteActualLRPs) }).WithTimeout(time.Second).Should(Equal(listed))

		By("a placement still arrives, by the stream")
		desire("other", 1)
		Eventually(func() []models.ActualLRP_State { return states("other") }).Should(Equal(running(1)))
	})

	It("lists its cell's rows at once on events_lost, and on every stream it opens, resuming after the last event it saw", func() {
		proxy.setMode(fakeStream)
		startAgent(time.Hour, time.Hour)
		Eventually(proxy.streams).Should(Equal(1))
		Eventually(func() int { return proxy.count(models.RouteActualLRPs) }).Should(Equal(1))

		By("a placement the stream does not tell of waits")
		desire("hello", 2)
		Eventually(func() []models.ActualLRP_State { return states("hello") }).Should(Equal(placed(2)))
		Consistently(func() []models.ActualLRP_State { return states("hello") }).WithTimeout(time.Second).Should(Equal(placed(2)))

		By("events_lost: the agent lists, and claims what was placed")
		proxy.sendFake(0, models.EventEventsLost, &models.EventsLostEvent{LastEventId: 7, OldestKeptId: 9})
		Eventually(func() []models.ActualLRP_State { return states("hello") }).Should(Equal(running(2)))

		By("an event of another cell wakes nothing")
		listed := proxy.count(models.RouteActualLRPs)
		elsewhere := &models.ActualLRP{ProcessGuid: "web", Index: 0, State: models.ActualLRP_UNCLAIMED, CellId: "cell-b"}
		proxy.sendFake(42, models.EventActualLRPCreated, &models.ActualLRPCreatedEvent{ActualLrp: elsewhere})
		desire("other", 1)
		Eventually(func() []models.ActualLRP_State { return states("other") }).Should(Equal(placed(1)))
		Consistently(func() []models.ActualLRP_State { return states("other") }).WithTimeout(time.Second).Should(Equal(placed(1)))
		Expect(proxy.count(models.RouteActualLRPs)).To(Equal(listed))

		By("the stream ends: the agent opens another after event 42, lists, and claims")
		Eventually(proxy.endFake).Should(BeSent(struct{}{}))
		Eventually(func() []models.ActualLRP_State { return states("other") }).Should(Equal(running(1)))
		Expect(proxy.streamRequests()).To(Equal([]string{"", "42"}))
	})
})
