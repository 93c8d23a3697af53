package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/internal/simcell"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// Settings of the boards the convergence specs run: short enough that a
// lost cell, a stale placement or a failover takes seconds, and passes
// run several times a second.
const (
	e2ePresenceTTL    = "1s"
	e2eInterval       = "100ms"
	e2eLeaseTTL       = "2s"
	e2eStaleUnclaimed = "2s"
	// e2eReportInterval is how often simulated cells bulk-report.
	e2eReportInterval = 100 * time.Millisecond
	// convergeLimit bounds how long a spec waits for the board to act. It
	// is a deadline against hanging, not a speed requirement.
	convergeLimit = 30 * time.Second
)

// newDatabase creates a fresh database of dialect, dropped after the spec.
func newDatabase(dialect string) *testdb.Database {
	GinkgoHelper()
	database, err := testdb.Create(dialect)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(database.Drop)
	return database
}

// startConvergingBoard runs bbs on database with the short e2e settings;
// settings overrides or adds config keys.
func startConvergingBoard(database *testdb.Database, settings map[string]any) *runningBoard {
	GinkgoHelper()
	return startConvergingBoardWriting(GinkgoWriter, database, settings)
}

// startConvergingBoardWriting is startConvergingBoard with the board's
// logs copied to out rather than to the spec's report.
func startConvergingBoardWriting(out io.Writer, database *testdb.Database, settings map[string]any) *runningBoard {
	GinkgoHelper()
	return startBoardWriting(out, "-config", convergingConfigFile(database, settings))
}

// convergingConfigFile writes the config startConvergingBoard runs a board
// with and returns its path.
func convergingConfigFile(database *testdb.Database, settings map[string]any) string {
	GinkgoHelper()
	cfg := map[string]any{
		"listen_address":        "127.0.0.1:0",
		"database_driver":       database.Dialect,
		"database_dsn":          database.DSN,
		"cell_presence_ttl":     e2ePresenceTTL,
		"convergence_interval":  e2eInterval,
		"convergence_lease_ttl": e2eLeaseTTL,
		"stale_unclaimed":       e2eStaleUnclaimed,
		// Below the production default of 64, so that the two boards of
		// the failover specs and a neighbour's tests fit in one Postgres
		// (100 connections by default).
		"max_open_connections": 24,
	}
	for k, v := range settings {
		cfg[k] = v
	}
	raw, err := json.Marshal(cfg)
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(GinkgoT().TempDir(), "bbs.json")
	Expect(os.WriteFile(path, raw, 0o600)).To(Succeed())
	return path
}

// client is the board's API client, one for the board's life: a new
// client per call would leave a kept-alive connection behind each time,
// and a spec polling the board would reach its
// max_connections_per_address (every process on this host's loopback
// counts as one address), after which new connections are closed as they
// are accepted.
func (b *runningBoard) client() *client.Client {
	b.apiOnce.Do(func() { b.api = client.New(b.url) })
	return b.api
}

// metric reads one sample from GET /metrics: name with its labels as
// they appear, e.g. `corkboard_convergence_lrp_runs_total{pass="full"}`.
// It returns -1 when the board does not expose it.
func (b *runningBoard) metric(series string) float64 {
	GinkgoHelper()
	pattern := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`)
	match := pattern.FindStringSubmatch(b.metrics())
	if match == nil {
		return -1
	}
	value, err := strconv.ParseFloat(match[1], 64)
	Expect(err).NotTo(HaveOccurred())
	return value
}

// fullPasses is how many full convergence passes the board has run.
func (b *runningBoard) fullPasses() float64 {
	return b.metric(`corkboard_convergence_lrp_runs_total{pass="full"}`)
}

// waitForPasses returns once the board has run n more full passes, so a
// spec can show that something did not happen over several passes.
func (b *runningBoard) waitForPasses(n float64) {
	GinkgoHelper()
	start := b.fullPasses()
	Eventually(b.fullPasses).WithTimeout(convergeLimit).Should(BeNumerically(">=", start+n))
}

// startCell starts a simulated cell on board, stopped after the spec.
func startCell(board *runningBoard, id, zone string, configure ...func(*simcell.Config)) *simcell.Cell {
	GinkgoHelper()
	cfg := simcell.Config{
		Cell: &models.Cell{
			CellId:   id,
			Zone:     zone,
			Capacity: &models.CellCapacity{MemoryMb: 8192, DiskMb: 16384, Instances: 100},
		},
		ReportInterval: e2eReportInterval,
		Logf:           func(format string, args ...any) { fmt.Fprintf(GinkgoWriter, format+"\n", args...) },
	}
	for _, c := range configure {
		c(&cfg)
	}
	cell, err := simcell.Start(context.Background(), board.url, cfg)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cell.Stop)
	return cell
}

func lrpSpec(guid, domain string, instances int32) *models.DesiredLRP {
	return &models.DesiredLRP{
		ProcessGuid: guid,
		Domain:      domain,
		Instances:   instances,
		Definition: &models.LRPDefinition{
			DefinitionId: "v1",
			Action:       &models.RunAction{Path: "/bin/" + guid},
			Ports:        []uint32{8080},
			MemoryMb:     128,
			DiskMb:       256,
		},
	}
}

// instances lists guid's instances, ordered by index and presence.
func instances(board *runningBoard, guid string) []*models.ActualLRP {
	GinkgoHelper()
	lrps, err := board.client().ActualLRPs(context.Background(), client.ActualLRPFilter{ProcessGuid: guid})
	Expect(err).NotTo(HaveOccurred())
	slices.SortFunc(lrps, func(a, b *models.ActualLRP) int {
		if a.GetIndex() != b.GetIndex() {
			return int(a.GetIndex() - b.GetIndex())
		}
		return int(a.GetPresence() - b.GetPresence())
	})
	return lrps
}

// instanceView is what specs compare: where and how each row runs.
type instanceView struct {
	Index    int32
	Presence models.ActualLRP_Presence
	State    models.ActualLRP_State
	CellID   string
}

func (v instanceView) String() string {
	return fmt.Sprintf("%d %s %s on %q", v.Index, v.Presence, v.State, v.CellID)
}

// views is instances in the shape specs compare.
func views(board *runningBoard, guid string) func() []instanceView {
	return func() []instanceView {
		var out []instanceView
		for _, lrp := range instances(board, guid) {
			out = append(out, instanceView{lrp.GetIndex(), lrp.GetPresence(), lrp.GetState(), lrp.GetCellId()})
		}
		return out
	}
}

// eventLog records a board's event stream from the moment it is opened.
type eventLog struct {
	mu     sync.Mutex
	events []client.Event
	err    error
}

func recordEvents(board *runningBoard, types ...string) *eventLog {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := board.client().Events(ctx, client.EventsOptions{Types: types})
	Expect(err).NotTo(HaveOccurred())
	log := &eventLog{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			event, err := stream.Next()
			log.mu.Lock()
			if err != nil {
				if ctx.Err() == nil {
					log.err = err
				}
				log.mu.Unlock()
				return
			}
			log.events = append(log.events, event)
			log.mu.Unlock()
		}
	}()
	DeferCleanup(func() {
		cancel()
		stream.Close()
		<-done
	})
	return log
}

// all returns the events so far; a stream that ended early fails the
// spec, since events may have been missed.
func (l *eventLog) all() []client.Event {
	GinkgoHelper()
	l.mu.Lock()
	defer l.mu.Unlock()
	Expect(l.err).NotTo(HaveOccurred(), "the event stream ended")
	return slices.Clone(l.events)
}

// matching returns the events of type eventType whose payload passes
// keep (all of that type when keep is nil).
func (l *eventLog) matching(eventType string, keep func(client.Event) bool) []client.Event {
	GinkgoHelper()
	var out []client.Event
	for _, e := range l.all() {
		if e.Type == eventType && (keep == nil || keep(e)) {
			out = append(out, e)
		}
	}
	return out
}

// count is matching as a polling function.
func (l *eventLog) count(eventType string, keep func(client.Event) bool) func() int {
	return func() int { return len(l.matching(eventType, keep)) }
}

// Payload predicates.

func actualOf(e client.Event) *models.ActualLRP {
	switch p := e.Payload.(type) {
	case *models.ActualLRPCreatedEvent:
		return p.GetActualLrp()
	case *models.ActualLRPChangedEvent:
		return p.GetAfter()
	case *models.ActualLRPRemovedEvent:
		return p.GetActualLrp()
	case *models.ActualLRPCrashedEvent:
		return p.GetActualLrp()
	}
	return nil
}

func aboutLRP(guid string) func(client.Event) bool {
	return func(e client.Event) bool {
		if lrp := actualOf(e); lrp != nil {
			return lrp.GetProcessGuid() == guid
		}
		switch p := e.Payload.(type) {
		case *models.DesiredLRPCreatedEvent:
			return p.GetDesiredLrp().GetProcessGuid() == guid
		case *models.DesiredLRPChangedEvent:
			return p.GetAfter().GetProcessGuid() == guid
		case *models.DesiredLRPRemovedEvent:
			return p.GetDesiredLrp().GetProcessGuid() == guid
		}
		return false
	}
}

func aboutCell(id string) func(client.Event) bool {
	return func(e client.Event) bool {
		p, ok := e.Payload.(*models.CellChangedEvent)
		return ok && p.GetAfter().GetCellId() == id
	}
}

// changedTo matches actual_lrp_changed events of guid whose row ends in
// state, presence and (when not empty) on cellID.
func changedTo(guid string, presence models.ActualLRP_Presence, state models.ActualLRP_State) func(client.Event) bool {
	return func(e client.Event) bool {
		after := actualOf(e)
		return after.GetProcessGuid() == guid && after.GetPresence() == presence && after.GetState() == state
	}
}

// indices lists the indices of the events' rows, in event order.
func indices(events []client.Event) []int32 {
	out := make([]int32, 0, len(events))
	for _, e := range events {
		out = append(out, actualOf(e).GetIndex())
	}
	return out
}
