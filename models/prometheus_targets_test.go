package models_test

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("Prometheus targets", func() {
	cells := []*models.Cell{{CellId: "c1", Zone: "z1"}, {CellId: "c2", Zone: "z2"}}

	// running is web/index RUNNING on cell at address with the given
	// (container, host) port pairs.
	running := func(index int32, presence models.ActualLRP_Presence, cell, address string, ports ...uint32) *models.ActualLRP {
		info := &models.NetInfo{Address: address}
		for i := 0; i+1 < len(ports); i += 2 {
			info.Ports = append(info.Ports, &models.PortMapping{ContainerPort: ports[i], HostPort: ports[i+1]})
		}
		return &models.ActualLRP{
			ProcessGuid: "web", Index: index, Presence: presence, Domain: "apps", CellId: cell,
			DefinitionId: "v2", State: models.ActualLRP_RUNNING, NetInfo: info,
		}
	}
	withState := func(lrp *models.ActualLRP, state models.ActualLRP_State) *models.ActualLRP {
		lrp.State = state
		return lrp
	}
	labels := func(index, cell, zone string) map[string]string {
		return map[string]string{"process_guid": "web", "index": index, "definition_id": "v2", "cell": cell, "zone": zone, "domain": "apps", "baseline": "false"}
	}

	It("shapes the worked example of its comment", func() {
		t := models.NewPrometheusTargets(cells)
		for _, lrp := range []*models.ActualLRP{
			running(0, models.ActualLRP_ORDINARY, "c1", "10.0.0.1", 8080, 61001, 9090, 61002),
			withState(&models.ActualLRP{ProcessGuid: "web", Index: 1, Presence: models.ActualLRP_ORDINARY, CellId: "c2"}, models.ActualLRP_CLAIMED),
			running(1, models.ActualLRP_EVACUATING, "c1", "10.0.0.1", 8080, 61003),
			running(2, models.ActualLRP_ORDINARY, "c9", "10.0.0.9", 8080, 61004),
			running(3, models.ActualLRP_ORDINARY, "c2", "10.0.0.2"),
		} {
			t.Add(lrp)
		}
		Expect(t.Groups()).To(Equal([]models.PrometheusTargetGroup{
			{Targets: []string{"10.0.0.1:61001"}, Labels: labels("0", "c1", "z1")},
			{Targets: []string{"10.0.0.1:61003"}, Labels: labels("1", "c1", "z1")},
			{Targets: []string{"10.0.0.9:61004"}, Labels: labels("2", "c9", "")},
		}))
	})

	DescribeTable("one instance: listed with its first port's target, or not listed",
		func(lrp *models.ActualLRP, target string) {
			t := models.NewPrometheusTargets(cells)
			t.Add(lrp)
			if target == "" {
				Expect(t.Groups()).To(BeEmpty())
				return
			}
			Expect(t.Groups()).To(HaveLen(1))
			Expect(t.Groups()[0].Targets).To(Equal([]string{target}))
			Expect(t.Groups()[0].Labels).To(Equal(labels(
				map[int32]string{0: "0", 7: "7", 100000: "100000"}[lrp.GetIndex()], lrp.GetCellId(),
				map[string]string{"c1": "z1", "c2": "z2"}[lrp.GetCellId()])))
		},
		Entry("ORDINARY RUNNING", running(0, models.ActualLRP_ORDINARY, "c1", "10.0.0.1", 8080, 61001), "10.0.0.1:61001"),
		Entry("EVACUATING RUNNING: serves until its replacement is ready", running(7, models.ActualLRP_EVACUATING, "c2", "10.0.0.2", 8080, 61001), "10.0.0.2:61001"),
		Entry("RETIRING RUNNING: serves until its replacement is ready", running(7, models.ActualLRP_RETIRING, "c2", "10.0.0.2", 8080, 61001), "10.0.0.2:61001"),
		Entry("SUSPECT RUNNING: scraping it says whether it still runs", running(7, models.ActualLRP_SUSPECT, "c2", "10.0.0.2", 8080, 61001), "10.0.0.2:61001"),
		Entry("the validation instance", running(100000, models.ActualLRP_ORDINARY, "c1", "10.0.0.1", 8080, 61001), "10.0.0.1:61001"),
		Entry("the first port mapping, whatever the others", running(0, models.ActualLRP_ORDINARY, "c1", "10.0.0.1", 9090, 61005, 8080, 61001), "10.0.0.1:61005"),
		Entry("an IPv6 address, bracketed", running(0, models.ActualLRP_ORDINARY, "c1", "fd00::1", 8080, 61001), "[fd00::1]:61001"),
		Entry("a host name", running(0, models.ActualLRP_ORDINARY, "c1", "cell-1.internal", 8080, 61001), "cell-1.internal:61001"),
		Entry("UNCLAIMED", withState(running(0, models.ActualLRP_ORDINARY, "c1", "10.0.0.1", 8080, 61001), models.ActualLRP_UNCLAIMED), ""),
		Entry("CLAIMED", withState(running(0, models.ActualLRP_ORDINARY, "c1", "10.0.0.1", 8080, 61001), models.ActualLRP_CLAIMED), ""),
		Entry("CRASHED", withState(running(0, models.ActualLRP_ORDINARY, "c1", "10.0.0.1", 8080, 61001), models.ActualLRP_CRASHED), ""),
		Entry("RUNNING without an address", running(0, models.ActualLRP_ORDINARY, "c1", "", 8080, 61001), ""),
		Entry("RUNNING without port mappings", running(0, models.ActualLRP_ORDINARY, "c1", "10.0.0.1"), ""),
		Entry("RUNNING with no host port on its first mapping", running(0, models.ActualLRP_ORDINARY, "c1", "10.0.0.1", 8080, 0, 9090, 61002), ""),
		Entry("RUNNING without net info", &models.ActualLRP{ProcessGuid: "web", State: models.ActualLRP_RUNNING}, ""),
	)

	It("labels a baseline instance baseline=\"true\"", func() {
		t := models.NewPrometheusTargets(cells)
		t.Add(running(models.BaselineIndexBase, models.ActualLRP_ORDINARY, "c1", "10.0.0.1", 8080, 61007))
		want := labels("100001", "c1", "z1")
		want["baseline"] = "true"
		Expect(t.Groups()[0].Labels).To(Equal(want))
	})

	It("encodes no instances as an empty array, not null", func() {
		raw, err := json.Marshal(models.NewPrometheusTargets(nil).Groups())
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).To(Equal("[]"))
	})

	It("encodes a group in the shape http_sd_configs reads", func() {
		t := models.NewPrometheusTargets(cells)
		t.Add(running(0, models.ActualLRP_ORDINARY, "c1", "10.0.0.1", 8080, 61001))
		raw, err := json.Marshal(t.Groups())
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).To(MatchJSON(`[{"targets":["10.0.0.1:61001"],"labels":{"process_guid":"web","index":"0","definition_id":"v2","cell":"c1","zone":"z1","domain":"apps","baseline":"false"}}]`))
	})
})
