package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// A router-like client: it learns where one LRP's instances are from the
// board's event stream, as a router does, and sends requests round-robin
// to every instance it believes routable. A request that fails is a
// request a user of the app would have seen fail.

const (
	// routerPause is the pause between two requests: about 100 requests a
	// second, a new connection each, over whatever is routable.
	routerPause = 10 * time.Millisecond
	// routerLimit bounds how long a router runs if nobody stops it: longer
	// than the longest scenario (ten writer kills on a Patroni pair take
	// about 5.5 minutes).
	routerLimit = 15 * time.Minute
	// routerRequestTimeout bounds one request; an instance that does not
	// answer within it counts as failed.
	routerRequestTimeout = 2 * time.Second
)

// routeKey names a row in the router's view.
type routeKey struct {
	index    int32
	presence models.ActualLRP_Presence
}

// routerStats is what a router saw.
type routerStats struct {
	// Requests sent, and those that failed (connection refused, a
	// timeout, non-2xx, or an answer from another instance than the view
	// said), each described with its time.
	Requests int
	Failures []string
	// Fewest is the fewest indices with a routable instance at one look,
	// Worst the view at that moment; Looks counts the looks.
	Fewest int
	Worst  string
	Looks  int
	// Relists counts how often the router re-read the instances because
	// the board said it had lost events for it.
	Relists int
	// Versions counts answers by the VERSION the instance reported.
	Versions map[string]int
	// Ports counts requests by the container port they were sent to.
	Ports map[uint32]int
	// StreamErrors lists why the event stream broke, when it did.
	StreamErrors []string
}

type router struct {
	api  *client.Client
	guid string
	// route, when set, is the route the router serves: it sends each
	// instance the route's requests on the host port the instance's
	// route_ports give for it, and an instance without the route gets
	// none. Empty: the first port of its net info.
	route string
	http  *http.Client

	mu    sync.Mutex
	view  map[routeKey]*models.ActualLRP
	stats routerStats

	cancel   context.CancelFunc
	stopOnce sync.Once
	done     sync.WaitGroup
}

// startRouter follows guid's instances on b and sends requests until
// stopped (or routerLimit passes). It lists the instances once the event
// stream is open, so no change falls between the two.
func startRouter(b *board, guid string) *router {
	GinkgoHelper()
	return startRouteRouter(b, guid, "")
}

// startRouteRouter is startRouter for one route of guid, sent where each
// instance's route_ports say.
func startRouteRouter(b *board, guid, route string) *router {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &router{
		api:   b.client(),
		guid:  guid,
		route: route,
		// A new connection per request: a request either reaches a
		// listening instance or is refused, with no idle connection to an
		// instance that has since gone in between.
		http: &http.Client{
			Timeout:   routerRequestTimeout,
			Transport: &http.Transport{DisableKeepAlives: true},
		},
		view:   map[routeKey]*models.ActualLRP{},
		stats:  routerStats{Fewest: -1, Versions: map[string]int{}, Ports: map[uint32]int{}},
		cancel: cancel,
	}
	stream := r.open(ctx, 0)
	if stream == nil {
		cancel()
		Fail("the router could not open the event stream")
	}
	if err := r.relist(ctx); err != nil {
		cancel()
		stream.Close()
		Fail("the router could not list instances: " + err.Error())
	}
	r.done.Add(2)
	go r.follow(ctx, stream)
	go r.send(ctx)
	DeferCleanup(r.stop)
	return r
}

// stop ends the router and returns what it saw.
func (r *router) stop() routerStats {
	r.stopOnce.Do(r.cancel)
	r.done.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	stats := r.stats
	stats.Failures = slices.Clone(stats.Failures)
	stats.StreamErrors = slices.Clone(stats.StreamErrors)
	stats.Versions = maps.Clone(stats.Versions)
	stats.Ports = maps.Clone(stats.Ports)
	return stats
}

// routable is how many indices the router's view has a routable instance
// for now.
func (r *router) routable() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, indices := r.targetsLocked()
	return indices
}

// sent is how many requests the router has sent so far.
func (r *router) sent() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats.Requests
}

func (r *router) open(ctx context.Context, lastID uint64) *client.EventStream {
	stream, err := r.api.Events(ctx, client.EventsOptions{
		Types:       []string{models.EventActualLRPCreated, models.EventActualLRPChanged, models.EventActualLRPRemoved},
		LastEventID: lastID,
	})
	if err != nil {
		r.note(func(s *routerStats) { s.StreamErrors = append(s.StreamErrors, "open: "+err.Error()) })
		return nil
	}
	return stream
}

// follow applies the stream's events to the view; a stream that breaks is
// resumed from its last event (the board says events_lost when it can
// no longer resume, and the router lists again).
func (r *router) follow(ctx context.Context, stream *client.EventStream) {
	defer GinkgoRecover()
	defer r.done.Done()
	for ctx.Err() == nil {
		if stream == nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		event, err := stream.Next()
		if err != nil {
			last := stream.LastEventID()
			stream.Close()
			stream = nil
			if ctx.Err() != nil {
				return
			}
			r.note(func(s *routerStats) { s.StreamErrors = append(s.StreamErrors, err.Error()) })
			stream = r.open(ctx, last)
			continue
		}
		if event.Type == models.EventEventsLost {
			r.note(func(s *routerStats) { s.Relists++ })
			if err := r.relist(ctx); err != nil && ctx.Err() == nil {
				r.note(func(s *routerStats) { s.StreamErrors = append(s.StreamErrors, "relist: "+err.Error()) })
			}
			continue
		}
		r.apply(event)
	}
	if stream != nil {
		stream.Close()
	}
}

// relist replaces the view with the board's rows of the LRP.
func (r *router) relist(ctx context.Context) error {
	rows, err := r.api.ActualLRPs(ctx, client.ActualLRPFilter{ProcessGuid: r.guid})
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.view)
	for _, row := range rows {
		r.view[keyOfRow(row)] = row
	}
	return nil
}

func keyOfRow(row *models.ActualLRP) routeKey {
	return routeKey{row.GetIndex(), row.GetPresence()}
}

// apply folds one actual LRP event into the view. An event about an older
// version of a row than the view holds (same tag epoch, lower index) is
// ignored, so a change listed before its event arrives is not undone.
func (r *router) apply(event client.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch p := event.Payload.(type) {
	case *models.ActualLRPCreatedEvent:
		r.putLocked(p.GetActualLrp())
	case *models.ActualLRPChangedEvent:
		if p.GetAfter().GetProcessGuid() != r.guid {
			return
		}
		if before := p.GetBefore(); keyOfRow(before) != keyOfRow(p.GetAfter()) {
			r.dropLocked(before)
		}
		r.putLocked(p.GetAfter())
	case *models.ActualLRPRemovedEvent:
		r.dropLocked(p.GetActualLrp())
	}
}

func (r *router) putLocked(row *models.ActualLRP) {
	if row.GetProcessGuid() != r.guid {
		return
	}
	key := keyOfRow(row)
	if held, ok := r.view[key]; ok && older(row, held) {
		return
	}
	r.view[key] = row
}

// dropLocked removes the row the view holds at gone's key, if it is the
// same row (tag epoch) and not newer.
func (r *router) dropLocked(gone *models.ActualLRP) {
	if gone.GetProcessGuid() != r.guid {
		return
	}
	key := keyOfRow(gone)
	held, ok := r.view[key]
	if !ok || held.GetModificationTag().GetEpoch() != gone.GetModificationTag().GetEpoch() || older(gone, held) {
		return
	}
	delete(r.view, key)
}

// older reports whether a is an earlier version of the same row as b.
func older(a, b *models.ActualLRP) bool {
	return a.GetModificationTag().GetEpoch() == b.GetModificationTag().GetEpoch() &&
		a.GetModificationTag().GetIndex() < b.GetModificationTag().GetIndex()
}

// targetsLocked lists the instances a router sends requests to — RUNNING,
// routable, with an address and port, whatever their presence — in index
// order, and how many indices they cover.
func (r *router) targetsLocked() ([]*models.ActualLRP, int) {
	var targets []*models.ActualLRP
	indices := map[int32]bool{}
	for _, row := range r.view {
		info := row.GetNetInfo()
		if row.GetState() != models.ActualLRP_RUNNING || !row.GetRoutable() || info.GetAddress() == "" || len(info.GetPorts()) == 0 {
			continue
		}
		if _, ok := r.portOf(row); !ok {
			continue
		}
		targets = append(targets, row)
		indices[row.GetIndex()] = true
	}
	slices.SortFunc(targets, func(a, b *models.ActualLRP) int {
		if a.GetIndex() != b.GetIndex() {
			return int(a.GetIndex() - b.GetIndex())
		}
		return int(a.GetPresence() - b.GetPresence())
	})
	return targets, len(indices)
}

// describeViewLocked is the view in words, for a failure message.
func (r *router) describeViewLocked() string {
	keys := slices.Collect(maps.Keys(r.view))
	slices.SortFunc(keys, func(a, b routeKey) int {
		if a.index != b.index {
			return int(a.index - b.index)
		}
		return int(a.presence - b.presence)
	})
	var parts []string
	for _, k := range keys {
		row := r.view[k]
		parts = append(parts, fmt.Sprintf("%d %s %s routable=%t stop=%t def %s", row.GetIndex(), row.GetPresence(),
			row.GetState(), row.GetRoutable(), row.GetStopRequested(), row.GetDefinitionId()))
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// look takes the targets for the next request and records how many
// indices are routable.
func (r *router) look() []*models.ActualLRP {
	r.mu.Lock()
	defer r.mu.Unlock()
	targets, indices := r.targetsLocked()
	r.stats.Looks++
	if r.stats.Fewest == -1 || indices < r.stats.Fewest {
		r.stats.Fewest = indices
		r.stats.Worst = time.Now().Format(time.StampMilli) + " " + r.describeViewLocked()
	}
	return targets
}

// send is the request loop: one request at a time, round-robin over the
// targets of the moment, until stopped or routerLimit passes.
func (r *router) send(ctx context.Context) {
	defer GinkgoRecover()
	defer r.done.Done()
	deadline := time.Now().Add(routerLimit)
	next := 0
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if targets := r.look(); len(targets) > 0 {
			r.request(ctx, targets[next%len(targets)])
			next++
		}
		select {
		case <-ctx.Done():
		case <-time.After(routerPause):
		}
	}
}

// portOf is the port mapping the router sends row its requests on: the
// route's, or the first of its net info; false when it has none.
func (r *router) portOf(row *models.ActualLRP) (*models.PortMapping, bool) {
	if r.route == "" {
		return row.GetNetInfo().GetPorts()[0], true
	}
	for _, rp := range row.GetRoutePorts() {
		if rp.GetRoute() == r.route && rp.GetHostPort() != 0 {
			return &models.PortMapping{ContainerPort: rp.GetContainerPort(), HostPort: rp.GetHostPort()}, true
		}
	}
	return nil, false
}

// request sends GET / to one instance and records the outcome.
func (r *router) request(ctx context.Context, row *models.ActualLRP) {
	info := row.GetNetInfo()
	port, _ := r.portOf(row)
	address := net.JoinHostPort(info.GetAddress(), strconv.Itoa(int(port.GetHostPort())))
	what := fmt.Sprintf("%s %s/%d %s on %s (def %s) at %s", time.Now().Format(time.StampMilli),
		row.GetProcessGuid(), row.GetIndex(), row.GetPresence(), row.GetCellId(), row.GetDefinitionId(), address)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+address+"/", nil)
	if err != nil {
		r.fail(what, err.Error())
		return
	}
	resp, err := r.http.Do(req)
	if ctx.Err() != nil {
		return // stopped mid-request: not the instance's doing
	}
	if err != nil {
		r.fail(what, err.Error())
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		r.fail(what, resp.Status)
		return
	}
	var answer struct {
		InstanceGuid string `json:"instance_guid"`
		Version      string `json:"version"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		r.fail(what, "unreadable answer: "+err.Error())
		return
	}
	if answer.InstanceGuid != row.GetInstanceGuid() {
		r.fail(what, fmt.Sprintf("answered by instance %q, not %q", answer.InstanceGuid, row.GetInstanceGuid()))
		return
	}
	r.note(func(s *routerStats) {
		s.Requests++
		s.Versions[answer.Version]++
		s.Ports[port.GetContainerPort()]++
	})
}

func (r *router) fail(what, why string) {
	r.note(func(s *routerStats) {
		s.Requests++
		s.Failures = append(s.Failures, what+": "+why)
	})
}

func (r *router) note(change func(*routerStats)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	change(&r.stats)
}
