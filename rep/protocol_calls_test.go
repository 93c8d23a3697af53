package rep_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep"
)

// An outcome is how the scripted board meets one call.
type outcome int

const (
	// answerOK applies the call.
	answerOK outcome = iota
	// answerUnavailable answers as a board whose database is away.
	answerUnavailable
	// answerRefused refuses the call: the row is not the instance's.
	answerRefused
	// cutConnection closes the connection with no answer at all.
	cutConnection
)

// scriptedBoard meets each call of a route with the next outcome scripted
// for it, answerOK once the script is used up, and counts the calls.
type scriptedBoard struct {
	url string

	mu     sync.Mutex
	script map[string][]outcome
	calls  map[string]int
	// holdReports, when set, keeps every bulk report waiting until it
	// is closed.
	holdReports chan struct{}
}

func startScriptedBoard() *scriptedBoard {
	GinkgoHelper()
	b := &scriptedBoard{script: map[string][]outcome{}, calls: map[string]int{}}
	server := httptest.NewServer(http.HandlerFunc(b.serve))
	DeferCleanup(server.Close)
	b.url = server.URL
	return b
}

func (b *scriptedBoard) meet(route string, outcomes ...outcome) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.script[route] = outcomes
}

func (b *scriptedBoard) count(route string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[route]
}

func (b *scriptedBoard) serve(w http.ResponseWriter, r *http.Request) {
	defer GinkgoRecover()
	b.mu.Lock()
	b.calls[r.URL.Path]++
	next := answerOK
	if script := b.script[r.URL.Path]; len(script) > 0 {
		next, b.script[r.URL.Path] = script[0], script[1:]
	}
	hold := b.holdReports
	b.mu.Unlock()
	if r.URL.Path == models.RouteBulkReport && hold != nil {
		<-hold
	}

	var boardErr *models.Error
	switch next {
	case cutConnection:
		conn, _, err := http.NewResponseController(w).Hijack()
		Expect(err).NotTo(HaveOccurred())
		conn.Close()
		return
	case answerUnavailable:
		boardErr = models.NewError(models.Error_Unavailable, "database unreachable")
	case answerRefused:
		boardErr = models.NewError(models.Error_InvalidStateTransition, "not this instance's row")
	}
	var response proto.Message
	switch r.URL.Path {
	case models.RouteEvacuateActualLRP:
		response = &models.EvacuateActualLRPResponse{Error: boardErr, KeepRunning: boardErr == nil}
	case models.RouteBulkReport:
		response = &models.BulkReportResponse{Error: boardErr}
	default:
		lifecycle := &models.ActualLRPLifecycleResponse{Error: boardErr}
		if boardErr == nil {
			lifecycle.ActualLrp = &models.ActualLRP{ProcessGuid: "web", Index: 0, InstanceGuid: "i-1", CellId: "cell-1", DefinitionId: "v1"}
		}
		response = lifecycle
	}
	encoded, err := proto.Marshal(response)
	Expect(err).NotTo(HaveOccurred())
	w.Header().Set("Content-Type", models.ContentTypeProtobuf)
	w.Write(encoded)
}

var _ = Describe("CellCalls: how a cell makes its board calls", func() {
	const retryInterval = 5 * time.Millisecond
	var (
		board *scriptedBoard
		cfg   rep.CellCallsConfig[string]
		about rep.CallAbout[string]
	)

	BeforeEach(func() {
		board = startScriptedBoard()
		cfg = rep.CellCallsConfig[string]{RetryInterval: retryInterval, UnroutableRetryTimeout: time.Second}
		about = rep.CallAbout[string]{
			Key:      "i-1",
			Instance: client.Instance{ProcessGuid: "web", Index: 0, InstanceGuid: "i-1"},
			Logger:   lagertest.NewTestLogger("calls"),
		}
	})

	newCalls := func() *rep.CellCalls[string] {
		GinkgoHelper()
		calls, err := rep.NewCellCalls(client.NewCellClient(board.url, "cell-1", client.WithRetries(0)), cfg)
		Expect(err).NotTo(HaveOccurred())
		return calls
	}

	// Each call of an instance's lifecycle, made through CellCalls.
	type lifecycleCall struct {
		route string
		make  func(context.Context, *rep.CellCalls[string], rep.CallAbout[string]) error
	}
	claim := lifecycleCall{models.RouteClaimActualLRP, func(ctx context.Context, c *rep.CellCalls[string], a rep.CallAbout[string]) error {
		_, err := c.Claim(ctx, a)
		return err
	}}
	start := lifecycleCall{models.RouteStartActualLRP, func(ctx context.Context, c *rep.CellCalls[string], a rep.CallAbout[string]) error {
		_, err := c.Start(ctx, a, &models.NetInfo{Address: "cell-1.test"})
		return err
	}}
	crash := lifecycleCall{models.RouteCrashActualLRP, func(ctx context.Context, c *rep.CellCalls[string], a rep.CallAbout[string]) error {
		_, err := c.Crash(ctx, a, "exit status 1")
		return err
	}}
	remove := lifecycleCall{models.RouteRemoveActualLRP, func(ctx context.Context, c *rep.CellCalls[string], a rep.CallAbout[string]) error {
		return c.Remove(ctx, a, models.ActualLRP_ORDINARY)
	}}
	evacuate := lifecycleCall{models.RouteEvacuateActualLRP, func(ctx context.Context, c *rep.CellCalls[string], a rep.CallAbout[string]) error {
		_, err := c.Evacuate(ctx, a)
		return err
	}}

	DescribeTable("which calls are repeated until the board answers",
		func(call lifecycleCall, outcomes []outcome, wantCalls int, wantErr models.Error_Type, wantTransportErr bool) {
			board.meet(call.route, outcomes...)
			err := call.make(context.Background(), newCalls(), about)
			Expect(board.count(call.route)).To(Equal(wantCalls))
			switch {
			case wantTransportErr:
				Expect(err).To(HaveOccurred())
				Expect(rep.Answered(err)).To(BeFalse())
			case wantErr != models.Error_UnknownError:
				Expect(models.IsErrorType(err, wantErr)).To(BeTrue(), "got %v", err)
			default:
				Expect(err).NotTo(HaveOccurred())
			}
		},
		Entry("claim: after Unavailable and a lost answer, until applied", claim, []outcome{answerUnavailable, cutConnection, answerOK}, 3, models.Error_UnknownError, false),
		Entry("claim: a refusal is an answer", claim, []outcome{answerRefused}, 1, models.Error_InvalidStateTransition, false),
		Entry("crash: after Unavailable and a lost answer, until applied", crash, []outcome{answerUnavailable, cutConnection, answerOK}, 3, models.Error_UnknownError, false),
		Entry("crash: a refusal is an answer", crash, []outcome{answerRefused}, 1, models.Error_InvalidStateTransition, false),
		Entry("remove: after Unavailable and a lost answer, until applied", remove, []outcome{cutConnection, answerUnavailable, answerOK}, 3, models.Error_UnknownError, false),
		Entry("remove: a refusal is an answer", remove, []outcome{answerRefused}, 1, models.Error_InvalidStateTransition, false),
		Entry("start: once, Unavailable and all (the next report says RUNNING)", start, []outcome{answerUnavailable}, 1, models.Error_Unavailable, false),
		Entry("start: once, a lost answer too", start, []outcome{cutConnection}, 1, models.Error_UnknownError, true),
		Entry("evacuate: once (the evacuation asks again)", evacuate, []outcome{answerUnavailable}, 1, models.Error_Unavailable, false),
	)

	DescribeTable("a repeated call once the cell's context ended",
		func(finalCallTimeout time.Duration, wantCalls int) {
			cfg.FinalCallTimeout = finalCallTimeout
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := remove.make(ctx, newCalls(), about)
			Expect(board.count(models.RouteRemoveActualLRP)).To(Equal(wantCalls))
			if wantCalls == 1 {
				Expect(err).NotTo(HaveOccurred())
			} else {
				Expect(err).To(MatchError(context.Canceled))
			}
		},
		Entry("a rep on its way out makes one last attempt", time.Second, 1),
		Entry("without a final attempt, none", time.Duration(0), 0),
	)

	It("holds back a repeated call while HoldBack says so, and makes it once it stops", func() {
		var mu sync.Mutex
		silent := true
		cfg.HoldBack = func() bool {
			mu.Lock()
			defer mu.Unlock()
			return silent
		}
		calls := newCalls()
		done := make(chan error, 1)
		go func() { done <- claim.make(context.Background(), calls, about) }()
		Consistently(func() int { return board.count(models.RouteClaimActualLRP) }).WithTimeout(20 * retryInterval).Should(Equal(0))
		mu.Lock()
		silent = false
		mu.Unlock()
		Eventually(done).Should(Receive(BeNil()))
		Expect(board.count(models.RouteClaimActualLRP)).To(Equal(1))
	})

	It("tells CallEnded of every call about an instance that ended", func() {
		ended := make(chan string, 10)
		cfg.CallEnded = func(k string) { ended <- k }
		board.meet(models.RouteCrashActualLRP, answerUnavailable)
		Expect(crash.make(context.Background(), newCalls(), about)).To(Succeed())
		Expect(ended).To(HaveLen(2), "one per attempt")
	})

	Describe("MarkUnroutable", func() {
		BeforeEach(func() {
			cfg.UnroutableRetryTimeout = 100 * time.Millisecond
		})

		markUnroutable := func(calls *rep.CellCalls[string]) error {
			return calls.MarkUnroutable(context.Background(), about, models.ActualLRP_ORDINARY, &models.NetInfo{Address: "cell-1.test"})
		}

		It("gives up once the board said nothing at all for UnroutableRetryTimeout", func() {
			board.meet(models.RouteStartActualLRP, repeated(cutConnection, 1000)...)
			began := time.Now()
			err := markUnroutable(newCalls())
			Expect(err).To(HaveOccurred())
			Expect(time.Since(began)).To(BeNumerically(">=", cfg.UnroutableRetryTimeout))
			Expect(board.count(models.RouteStartActualLRP)).To(BeNumerically(">", 1))
		})

		It("keeps trying while the board answers Unavailable, past UnroutableRetryTimeout, until it answers", func() {
			// 40 answers 5 ms apart: 200 ms of Unavailable, twice the timeout.
			board.meet(models.RouteStartActualLRP, repeated(answerUnavailable, 40)...)
			Expect(markUnroutable(newCalls())).To(Succeed())
			Expect(board.count(models.RouteStartActualLRP)).To(Equal(41))
		})

		It("stops at a refusal: nothing to unroute", func() {
			board.meet(models.RouteStartActualLRP, answerRefused)
			err := markUnroutable(newCalls())
			Expect(models.IsErrorType(err, models.Error_InvalidStateTransition)).To(BeTrue(), "got %v", err)
			Expect(board.count(models.RouteStartActualLRP)).To(Equal(1))
		})
	})

	It("holds a call about an instance in the report in flight until the board answered the report", func() {
		calls := newCalls()
		hold := make(chan struct{})
		var release sync.Once
		releaseReports := func() { release.Do(func() { close(hold) }) }
		// A failed spec must not leave the report hanging: the board
		// could not close.
		DeferCleanup(releaseReports)
		board.mu.Lock()
		board.holdReports = hold
		board.mu.Unlock()

		Expect(calls.Gate().Report("i-1")).To(BeTrue())
		reported := make(chan error, 1)
		go func() {
			_, err := calls.BulkReport(context.Background(), []*models.ReportedInstance{{ProcessGuid: "web", InstanceGuid: "i-1"}}, []string{"i-1"})
			reported <- err
		}()
		started := make(chan error, 1)
		go func() { started <- start.make(context.Background(), calls, about) }()
		Consistently(started).WithTimeout(100 * time.Millisecond).ShouldNot(Receive())
		Expect(board.count(models.RouteStartActualLRP)).To(Equal(0))

		releaseReports()
		Eventually(reported).Should(Receive(BeNil()))
		Eventually(started).Should(Receive(BeNil()))
		Expect(calls.Gate().InReport("i-1")).To(BeFalse())
	})
})

func repeated(o outcome, n int) []outcome {
	out := make([]outcome, n)
	for i := range out {
		out[i] = o
	}
	return out
}
