package rep

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/corkboard/corkboard/internal/certs"
	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep/executor"
)

// Defaults and bounds of GET /v1/logs.
const (
	DefaultLogLines = 100
	MaxLogLines     = 10000

	// maxOccupancyBody bounds what an instance may POST about itself.
	maxOccupancyBody = 1 << 10
)

// NewServer is the rep's HTTP API, for a rep without TLS:
//
//	GET  /v1/instances                               what the cell runs (JSON)
//	GET  /v1/logs?instance_guid=G&lines=N            the tail of an instance's log
//	GET  /v1/logs?process_guid=P&index=I&lines=N     the same for index I of P: its
//	                                                 instance running here, or else
//	                                                 the last one that ended here
//	POST /v1/drain                                   evacuate the cell (202)
//	POST /v1/instances/{instance_guid}/{secret}/occupancy  {"occupied": bool} (204)
//
// A log answer names its instance in the header X-Corkboard-Instance-Guid.
// The log of an instance that has ended starts with a line of the rep's
// own saying so and how it ended (see endedLine), and the header
// X-Corkboard-Ended-At carries when (RFC 3339), so that a client asking
// several cells can pick the latest.
//
// Errors are text/plain with a status: 400 for a bad request, 404 for an
// unknown instance, 403 for a POST a browser sends from another origin or
// an occupancy POST without its instance's secret.
func NewServer(logger lager.Logger, agent *Agent, exe *executor.Executor, endpoint *InstanceEndpoint) http.Handler {
	s := newServer(logger, agent, exe, endpoint)
	mux := http.NewServeMux()
	s.apiRoutes(mux, nil)
	s.instanceRoutes(mux)
	return refuseCrossOrigin(s.logger, mux)
}

// NewTLSServer is the rep's HTTP API for a rep that serves TLS and
// requires client certificates (internal/certs.ServerConfig): the routes
// of NewServer but the instance endpoint, each for the callers its
// certificate's identity allows:
//
//	GET  /v1/instances, GET /v1/logs    the board, operators, API clients
//	POST /v1/drain                      the board, operators
//
// The board may drain a cell and operators may (cork cell drain goes
// through the board, a POST to the rep is the direct way); an API client
// may only read. A cell's rep may call no other rep. Anyone else is
// answered 403 Forbidden, naming who it is. Instances have no
// certificates, so the instance endpoint is served apart, on plain HTTP
// on loopback (NewInstanceServer).
func NewTLSServer(logger lager.Logger, agent *Agent, exe *executor.Executor) http.Handler {
	s := newServer(logger, agent, exe, nil)
	mux := http.NewServeMux()
	s.apiRoutes(mux, s.authorize)
	return refuseCrossOrigin(s.logger, mux)
}

// NewInstanceServer is the local instance endpoint alone,
//
//	POST /v1/instances/{instance_guid}/{secret}/occupancy  {"occupied": bool} (204)
//
// for a rep whose API serves TLS: it listens on plain HTTP on loopback
// (where the rep's instances run, and they have no certificates), and
// serves nothing else. An instance can only say something of an instance
// this rep runs, with that instance's secret (InstanceEndpoint).
func NewInstanceServer(logger lager.Logger, agent *Agent, endpoint *InstanceEndpoint) http.Handler {
	s := newServer(logger, agent, nil, endpoint)
	mux := http.NewServeMux()
	s.instanceRoutes(mux)
	return refuseCrossOrigin(s.logger, mux)
}

// refuseCrossOrigin answers 403 to a POST a browser sends from another
// origin (http.CrossOriginProtection): a page elsewhere could otherwise
// drain the cell — a POST with no body — through a browser that holds an
// operator certificate, or a rep on loopback in development. Programs
// (the board, cork, instances) send no such headers.
func refuseCrossOrigin(logger lager.Logger, next http.Handler) http.Handler {
	protection := http.NewCrossOriginProtection()
	protection.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logger.Info("cross-origin-refused", lager.Data{"route": r.Method + " " + r.URL.Path, "origin": r.Header.Get("Origin")})
		http.Error(w, fmt.Sprintf("forbidden: a cross-origin request from a browser (Origin %q)", r.Header.Get("Origin")), http.StatusForbidden)
	}))
	return protection.Handler(next)
}

func newServer(logger lager.Logger, agent *Agent, exe *executor.Executor, endpoint *InstanceEndpoint) *server {
	return &server{logger: logger.Session("server"), agent: agent, executor: exe, endpoint: endpoint}
}

// guard wraps a route's handler with who may call it; nil lets everyone.
type guard func(allowed []models.Role, next http.HandlerFunc) http.HandlerFunc

// Who may call the rep's routes when it checks (NewTLSServer).
var (
	readers  = []models.Role{models.RoleOperator, models.RoleAPIClient}
	drainers = []models.Role{models.RoleBoard, models.RoleOperator}
)

func (s *server) apiRoutes(mux *http.ServeMux, check guard) {
	if check == nil {
		check = func(_ []models.Role, next http.HandlerFunc) http.HandlerFunc { return next }
	}
	mux.HandleFunc("GET /v1/instances", check(readers, s.instances))
	mux.HandleFunc("GET /v1/logs", check(readers, s.logs))
	mux.HandleFunc("POST /v1/drain", check(drainers, s.drain))
}

func (s *server) instanceRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/instances/{instance_guid}/{secret}/occupancy", s.occupancy)
	mux.HandleFunc("POST /v1/instances/{instance_guid}/occupancy", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "forbidden: an instance reports its occupancy to its own CORK_INSTANCE_URL + /occupancy, which names it with its secret", http.StatusForbidden)
	})
}

// authorize lets a request through when its verified client certificate
// names one of the allowed roles (models.IdentityFromCertificate: a
// certificate naming no identity, or two, has none).
func (s *server) authorize(allowed []models.Role, next http.HandlerFunc) http.HandlerFunc {
	names := make([]string, len(allowed))
	for i, role := range allowed {
		names[i] = string(role)
	}
	return func(w http.ResponseWriter, r *http.Request) {
		id := certs.PeerIdentity(r.TLS)
		if !slices.Contains(allowed, id.Role) {
			s.logger.Info("forbidden", lager.Data{"route": r.Method + " " + r.URL.Path, "identity": id.String()})
			http.Error(w, fmt.Sprintf("forbidden: %s may not %s %s on this rep; %s may", id.Certificate(), r.Method, r.URL.Path, strings.Join(names, ", ")), http.StatusForbidden)
			return
		}
		next(w, r)
	}
}

type server struct {
	logger   lager.Logger
	agent    *Agent
	executor *executor.Executor
	// endpoint checks the secret of an instance endpoint URL; nil where
	// the instance endpoint is not served.
	endpoint *InstanceEndpoint
}

// InstanceInfo is one entry of GET /v1/instances.
type InstanceInfo struct {
	ProcessGuid  string        `json:"process_guid"`
	Index        int32         `json:"index"`
	InstanceGuid string        `json:"instance_guid"`
	DefinitionID string        `json:"definition_id"`
	Presence     string        `json:"presence,omitempty"`
	Healthy      bool          `json:"healthy"`
	Stopping     bool          `json:"stopping"`
	Occupied     bool          `json:"occupied"`
	Pid          int           `json:"pid"`
	StartedAt    time.Time     `json:"started_at"`
	Address      string        `json:"address,omitempty"`
	Ports        []PortMapping `json:"ports,omitempty"`
}

// PortMapping is a container port and the host port it answers on.
type PortMapping struct {
	ContainerPort uint32 `json:"container_port"`
	HostPort      uint32 `json:"host_port"`
}

func (s *server) instances(w http.ResponseWriter, _ *http.Request) {
	statuses := s.executor.Instances()
	list := make([]InstanceInfo, 0, len(statuses))
	for _, st := range statuses {
		info := InstanceInfo{
			ProcessGuid: st.ProcessGuid, Index: st.Index, InstanceGuid: st.InstanceGuid,
			DefinitionID: st.DefinitionId, Healthy: st.Healthy, Stopping: st.Stopping,
			Pid: st.Pid, StartedAt: st.StartedAt, Address: st.NetInfo.GetAddress(),
		}
		for _, p := range st.NetInfo.GetPorts() {
			info.Ports = append(info.Ports, PortMapping{ContainerPort: p.GetContainerPort(), HostPort: p.GetHostPort()})
		}
		if known, ok := s.agent.Instance(st.InstanceGuid); ok {
			info.Presence = known.Presence.String()
			info.Occupied = known.Occupied
		}
		list = append(list, info)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}

// Headers of a log answer.
const (
	HeaderInstanceGuid = "X-Corkboard-Instance-Guid"
	HeaderEndedAt      = "X-Corkboard-Ended-At"
)

func (s *server) logs(w http.ResponseWriter, r *http.Request) {
	query := r.URL.Query()
	lines := DefaultLogLines
	if raw := query.Get("lines"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > MaxLogLines {
			http.Error(w, fmt.Sprintf("lines: want a number from 1 to %d, got %q", MaxLogLines, raw), http.StatusBadRequest)
			return
		}
		lines = n
	}
	guid := query.Get("instance_guid")
	byIndex := query.Has("process_guid") || query.Has("index")
	switch {
	case guid != "" && byIndex:
		http.Error(w, "instance_guid: give it, or process_guid and index, not both", http.StatusBadRequest)
		return
	case guid == "" && !byIndex:
		http.Error(w, "instance_guid: required (or process_guid and index)", http.StatusBadRequest)
		return
	case byIndex:
		processGuid := query.Get("process_guid")
		if err := models.ValidateProcessGuid(processGuid); err != nil {
			http.Error(w, models.ConvertError(err).GetMessage(), http.StatusBadRequest)
			return
		}
		index, err := strconv.ParseInt(query.Get("index"), 10, 32)
		if err != nil || index < 0 {
			http.Error(w, fmt.Sprintf("index: want a number of 0 or more, got %q", query.Get("index")), http.StatusBadRequest)
			return
		}
		var found bool
		if guid, found = s.instanceOfIndex(processGuid, int32(index)); !found {
			http.Error(w, fmt.Sprintf("%s/%d: no instance of it runs or ended on this cell", processGuid, index), http.StatusNotFound)
			return
		}
	}

	tail, err := s.executor.LogTail(guid, lines)
	switch {
	case errors.Is(err, executor.ErrInstanceNotFound):
		http.Error(w, fmt.Sprintf("instance %s: no log on this cell", guid), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set(HeaderInstanceGuid, guid)
	// Asked after the tail was read: an instance that ended meanwhile is
	// marked as ended, not as running.
	if ended, ok := s.executor.Ended(guid); ok {
		w.Header().Set(HeaderEndedAt, ended.EndedAt.UTC().Format(time.RFC3339Nano))
		_, _ = io.WriteString(w, endedLine(ended))
	}
	_, _ = w.Write(tail)
}

// instanceOfIndex picks the instance whose log stands for an index: the
// newest one running on this cell, else one still downloading or running
// its setup, or else the last one that ended here.
func (s *server) instanceOfIndex(processGuid string, index int32) (string, bool) {
	var newest *executor.InstanceStatus
	for _, st := range s.executor.Instances() {
		if st.ProcessGuid == processGuid && st.Index == index && (newest == nil || st.StartedAt.After(newest.StartedAt)) {
			newest = &st
		}
	}
	if newest != nil {
		return newest.InstanceGuid, true
	}
	if guid, ok := s.executor.Preparing(processGuid, index); ok {
		return guid, true
	}
	ended, ok := s.executor.LastEnded(processGuid, index)
	return ended.InstanceGuid, ok
}

// endedLine heads the log of an instance that has ended, so that a person
// reading it does not take it for a running one.
func endedLine(ended executor.EndedInstance) string {
	return fmt.Sprintf("--- previous instance %s of %s/%d, ended %s: %s ---\n",
		ended.InstanceGuid, ended.ProcessGuid, ended.Index, ended.EndedAt.UTC().Format(time.RFC3339), ended.Ending)
}

func (s *server) drain(w http.ResponseWriter, _ *http.Request) {
	s.logger.Info("drain-requested")
	s.agent.Drain("POST /v1/drain")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, `{"draining":true}`+"\n")
}

func (s *server) occupancy(w http.ResponseWriter, r *http.Request) {
	guid := r.PathValue("instance_guid")
	if !s.endpoint.names(guid, r.PathValue("secret")) {
		http.Error(w, "forbidden: not that instance's own CORK_INSTANCE_URL", http.StatusForbidden)
		return
	}
	var body struct {
		Occupied *bool `json:"occupied"`
	}
	decoder := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxOccupancyBody))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&body); err != nil {
		http.Error(w, "body: want {\"occupied\": true|false}: "+err.Error(), http.StatusBadRequest)
		return
	}
	if body.Occupied == nil {
		http.Error(w, "occupied: required", http.StatusBadRequest)
		return
	}
	if !s.agent.SetOccupied(guid, *body.Occupied) {
		http.Error(w, fmt.Sprintf("instance %s does not run on this cell", guid), http.StatusNotFound)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
