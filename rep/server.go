package rep

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"code.cloudfoundry.org/lager/v3"
)

// Defaults and bounds of GET /v1/logs.
const (
	DefaultLogLines = 100
	MaxLogLines     = 10000

	// maxOccupancyBody bounds what an instance may POST about itself.
	maxOccupancyBody = 1 << 10
)

// InstanceURL is the local instance endpoint of an instance, under the
// rep's base URL (DESIGN §7): the executor passes it to the instance as
// CORK_INSTANCE_URL, and the instance POSTs {"occupied": bool} to
// CORK_INSTANCE_URL + "/occupancy".
func InstanceURL(baseURL, instanceGuid string) string {
	return baseURL + "/v1/instances/" + instanceGuid
}

// NewServer is the rep's HTTP API:
//
//	GET  /v1/instances                               what the cell runs (JSON)
//	GET  /v1/logs?instance_guid=G&lines=N            the tail of an instance's log
//	POST /v1/drain                                   evacuate the cell (202)
//	POST /v1/instances/{instance_guid}/occupancy     {"occupied": bool} (204)
//
// Errors are text/plain with a status: 400 for a bad request, 404 for an
// unknown instance.
func NewServer(logger lager.Logger, agent *Agent, executor *Executor) http.Handler {
	s := &server{logger: logger.Session("server"), agent: agent, executor: executor}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/instances", s.instances)
	mux.HandleFunc("GET /v1/logs", s.logs)
	mux.HandleFunc("POST /v1/drain", s.drain)
	mux.HandleFunc("POST /v1/instances/{instance_guid}/occupancy", s.occupancy)
	return mux
}

type server struct {
	logger   lager.Logger
	agent    *Agent
	executor *Executor
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

func (s *server) logs(w http.ResponseWriter, r *http.Request) {
	guid := r.URL.Query().Get("instance_guid")
	if guid == "" {
		http.Error(w, "instance_guid: required", http.StatusBadRequest)
		return
	}
	lines := DefaultLogLines
	if raw := r.URL.Query().Get("lines"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > MaxLogLines {
			http.Error(w, fmt.Sprintf("lines: want a number from 1 to %d, got %q", MaxLogLines, raw), http.StatusBadRequest)
			return
		}
		lines = n
	}
	tail, err := s.executor.LogTail(guid, lines)
	switch {
	case errors.Is(err, ErrInstanceNotFound):
		http.Error(w, fmt.Sprintf("instance %s: no log on this cell", guid), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(tail)
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
