package models

import (
	"net"
	"strconv"
)

// PrometheusTargetGroup is one entry of the answer of GET
// /prometheus/targets, in the shape Prometheus' HTTP service discovery
// (http_sd_configs) reads: the addresses to scrape and the labels their
// series get.
type PrometheusTargetGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// The labels of an instance's target group.
const (
	PrometheusLabelProcessGuid  = "process_guid"
	PrometheusLabelIndex        = "index"
	PrometheusLabelDefinitionID = "definition_id"
	PrometheusLabelCell         = "cell"
	PrometheusLabelZone         = "zone"
	PrometheusLabelDomain       = "domain"
	// PrometheusLabelBaseline is "true" for a baseline instance of a
	// judged rollout (IsBaselineIndex), "false" for any other: a query
	// selects the baseline with baseline="{{baseline}}" (AnalysisCheck).
	PrometheusLabelBaseline = "baseline"
)

// PrometheusTargets shapes instances into the target groups of
// Prometheus' HTTP service discovery, one instance at a time, so that a
// caller reading a whole list hands each row over as it is read and
// holds only the groups.
//
// An instance is listed when it is RUNNING, whatever its presence, and its
// net info has an address and a first port mapping with a host port. The
// target is that address and host port: reps report an instance's port
// mappings in the order of its definition's ports, so the first mapping
// is the definition's first port (the hello app's $PORT). ORDINARY,
// EVACUATING, RETIRING and SUSPECT rows are all processes the board
// believes run and may serve traffic: an evacuating or retiring instance
// serves until its replacement is ready, and scraping a suspect one says
// whether it still runs. Presence is not a label, so an instance keeps one
// series while its presence changes. The routable flag is not read: an
// occupied instance still has metrics. UNCLAIMED, CLAIMED and CRASHED rows
// run nothing to scrape.
//
// Labels: process_guid, index (decimal), definition_id, cell (the cell id),
// zone (the cell's, empty when the cell is unknown), domain, and baseline
// ("true" for a baseline instance, models.IsBaselineIndex).
//
// Worked example: cells c1 (zone z1) and c2 (zone z2); rows
//  1. web/0 ORDINARY RUNNING on c1 at 10.0.0.1, ports 8080→61001, 9090→61002
//  2. web/1 ORDINARY CLAIMED on c2
//  3. web/1 EVACUATING RUNNING on c1 at 10.0.0.1, port 8080→61003
//  4. web/2 ORDINARY RUNNING on c9 (unknown) at 10.0.0.9, port 8080→61004
//  5. web/3 ORDINARY RUNNING on c2 with no port mappings
//
// give three groups, in row order: 10.0.0.1:61001 (index 0, cell c1, zone
// z1; 9090 is not a target), 10.0.0.1:61003 (index 1, cell c1, zone z1),
// 10.0.0.9:61004 (index 2, cell c9, zone ""). Rows 2 and 5 are not listed.
type PrometheusTargets struct {
	zones  map[string]string
	groups []PrometheusTargetGroup
}

// NewPrometheusTargets starts an empty list that takes zones from cells.
func NewPrometheusTargets(cells []*Cell) *PrometheusTargets {
	zones := make(map[string]string, len(cells))
	for _, cell := range cells {
		zones[cell.GetCellId()] = cell.GetZone()
	}
	return &PrometheusTargets{zones: zones, groups: []PrometheusTargetGroup{}}
}

// Add lists lrp's target group when the instance is one to scrape (see
// PrometheusTargets).
func (t *PrometheusTargets) Add(lrp *ActualLRP) {
	if lrp.GetState() != ActualLRP_RUNNING {
		return
	}
	info := lrp.GetNetInfo()
	ports := info.GetPorts()
	if info.GetAddress() == "" || len(ports) == 0 || ports[0].GetHostPort() == 0 {
		return
	}
	target := net.JoinHostPort(info.GetAddress(), strconv.FormatUint(uint64(ports[0].GetHostPort()), 10))
	t.groups = append(t.groups, PrometheusTargetGroup{
		Targets: []string{target},
		Labels: map[string]string{
			PrometheusLabelProcessGuid:  lrp.GetProcessGuid(),
			PrometheusLabelIndex:        strconv.FormatInt(int64(lrp.GetIndex()), 10),
			PrometheusLabelDefinitionID: lrp.GetDefinitionId(),
			PrometheusLabelCell:         lrp.GetCellId(),
			PrometheusLabelZone:         t.zones[lrp.GetCellId()],
			PrometheusLabelDomain:       lrp.GetDomain(),
			PrometheusLabelBaseline:     strconv.FormatBool(IsBaselineIndex(lrp.GetIndex())),
		},
	})
}

// Groups is the list so far, in the order the instances were added;
// empty, never nil, when none was listed (so it encodes as [], not null).
func (t *PrometheusTargets) Groups() []PrometheusTargetGroup {
	return t.groups
}
