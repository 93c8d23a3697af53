package models_test

import (
	"fmt"
	"math/rand/v2"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

func validCell() *models.Cell {
	return &models.Cell{
		CellId:        "cell_z1-0.example",
		RepUrl:        "https://10.0.0.5:1800",
		Zone:          "z1",
		Capacity:      &models.CellCapacity{MemoryMb: 8192, DiskMb: 65536, Instances: 250},
		PlacementTags: []string{"gpu", "linux"},
	}
}

func validNetInfo() *models.NetInfo {
	return &models.NetInfo{
		Address:         "10.0.0.5",
		Ports:           []*models.PortMapping{{ContainerPort: 8080, HostPort: 61001}, {ContainerPort: 9090, HostPort: 61002}},
		InstanceAddress: "10.255.0.7",
	}
}

func validReported() *models.ReportedInstance {
	return &models.ReportedInstance{
		ProcessGuid:  "web",
		Index:        2,
		Presence:     models.ActualLRP_ORDINARY,
		InstanceGuid: "0b5c6c1e-1d3a-4c1e-9a53-6f7d1e2a3b4c",
		DefinitionId: "v1",
		State:        models.ActualLRP_RUNNING,
		NetInfo:      validNetInfo(),
		Routable:     true,
	}
}

const (
	anInstance = "0b5c6c1e-1d3a-4c1e-9a53-6f7d1e2a3b4c"
	aCell      = "cell-1"
)

var _ = Describe("Validation of the cell side", func() {
	DescribeTable("RegisterCellRequest",
		func(mutate func(*models.Cell), want string) {
			cell := validCell()
			mutate(cell)
			expectValidation(&models.RegisterCellRequest{Cell: cell}, want)
		},
		Entry("a cell using every field", func(*models.Cell) {}, ""),
		Entry("a minimal cell", func(c *models.Cell) {
			*c = models.Cell{CellId: "c", RepUrl: "http://rep", Zone: "z", Capacity: &models.CellCapacity{MemoryMb: 1, DiskMb: 1, Instances: 1}}
		}, ""),
		Entry("fields the board owns are not checked", func(c *models.Cell) {
			c.ExpiresAt = -5
			c.Present = true
			c.Free = &models.CellCapacity{MemoryMb: -1}
		}, ""),

		Entry("cell_id empty", func(c *models.Cell) { c.CellId = "" }, "cell.cell_id: required"),
		Entry("cell_id of 255 characters", func(c *models.Cell) { c.CellId = strings.Repeat("c", 255) }, ""),
		Entry("cell_id of 256 characters", func(c *models.Cell) { c.CellId = strings.Repeat("c", 256) },
			`cell.cell_id: must match ^[a-zA-Z0-9][a-zA-Z0-9._-]{0,254}$, got "`+strings.Repeat("c", 64)+`"...`),
		Entry("cell_id starting with a dot", func(c *models.Cell) { c.CellId = ".cell" },
			`cell.cell_id: must match ^[a-zA-Z0-9][a-zA-Z0-9._-]{0,254}$, got ".cell"`),
		Entry("cell_id with a slash", func(c *models.Cell) { c.CellId = "z1/cell" },
			`cell.cell_id: must match ^[a-zA-Z0-9][a-zA-Z0-9._-]{0,254}$, got "z1/cell"`),

		Entry("rep_url empty", func(c *models.Cell) { c.RepUrl = "" }, "cell.rep_url: required"),
		Entry("rep_url plain http with a host name", func(c *models.Cell) { c.RepUrl = "http://cell-1.internal:1800/" }, ""),
		Entry("rep_url without a scheme", func(c *models.Cell) { c.RepUrl = "10.0.0.5:1800" },
			`cell.rep_url: must be an absolute http or https URL like http://10.0.0.5:1800, got "10.0.0.5:1800"`),
		Entry("rep_url with another scheme", func(c *models.Cell) { c.RepUrl = "ftp://10.0.0.5" },
			`cell.rep_url: must be an absolute http or https URL like http://10.0.0.5:1800, got "ftp://10.0.0.5"`),
		Entry("rep_url without a host", func(c *models.Cell) { c.RepUrl = "http:///path" },
			`cell.rep_url: must be an absolute http or https URL like http://10.0.0.5:1800, got "http:///path"`),
		Entry("rep_url with only a port", func(c *models.Cell) { c.RepUrl = "http://:1800" },
			`cell.rep_url: must be an absolute http or https URL like http://10.0.0.5:1800, got "http://:1800"`),
		Entry("rep_url that does not parse", func(c *models.Cell) { c.RepUrl = "http://10.0.0.5:port" },
			`cell.rep_url: must be an absolute http or https URL like http://10.0.0.5:1800, got "http://10.0.0.5:port"`),
		Entry("rep_url over 255 bytes", func(c *models.Cell) { c.RepUrl = "http://rep/" + strings.Repeat("p", 245) },
			"cell.rep_url: must be at most 255 bytes, got 256"),

		Entry("zone empty", func(c *models.Cell) { c.Zone = "" }, "cell.zone: required"),
		Entry("zone of 256 bytes", func(c *models.Cell) { c.Zone = strings.Repeat("z", 256) },
			"cell.zone: must be at most 255 bytes, got 256"),
		Entry("zone not UTF-8", func(c *models.Cell) { c.Zone = "z\xff" }, `cell.zone: must be valid UTF-8, got "z\xff"`),

		Entry("isolation full", func(c *models.Cell) { c.Isolation = models.CellIsolationFull }, ""),
		Entry("isolation none", func(c *models.Cell) { c.Isolation = models.CellIsolationNone }, ""),
		Entry("isolation unknown", func(c *models.Cell) { c.Isolation = "partial" },
			`cell.isolation: must be "full" or "none" (or empty), got "partial"`),
		Entry("isolation in capitals", func(c *models.Cell) { c.Isolation = "FULL" },
			`cell.isolation: must be "full" or "none" (or empty), got "FULL"`),

		Entry("no capacity", func(c *models.Cell) { c.Capacity = nil }, "cell.capacity: required"),
		Entry("no memory", func(c *models.Cell) { c.Capacity.MemoryMb = 0 },
			"cell.capacity.memory_mb: must be greater than 0, got 0"),
		Entry("negative disk", func(c *models.Cell) { c.Capacity.DiskMb = -1 },
			"cell.capacity.disk_mb: must be greater than 0, got -1"),
		Entry("no instance slots", func(c *models.Cell) { c.Capacity.Instances = 0 },
			"cell.capacity.instances: must be greater than 0, got 0"),

		Entry("no placement tags", func(c *models.Cell) { c.PlacementTags = nil }, ""),
		Entry("an empty placement tag", func(c *models.Cell) { c.PlacementTags = []string{"gpu", ""} },
			"cell.placement_tags[1]: must not be empty"),
		Entry("64 placement tags of 255 bytes", func(c *models.Cell) { c.PlacementTags = numberedTags(64, 255) }, ""),
		Entry("65 placement tags", func(c *models.Cell) { c.PlacementTags = numberedTags(65, 10) },
			"cell.placement_tags: must be at most 64 tags, got 65"),
		Entry("a placement tag of 256 bytes", func(c *models.Cell) { c.PlacementTags = []string{"gpu", strings.Repeat("t", 256)} },
			"cell.placement_tags[1]: must be at most 255 bytes, got 256"),

		Entry("the first problem in proto field order is the one reported", func(c *models.Cell) {
			c.Capacity = nil
			c.Zone = ""
			c.RepUrl = "nope"
		}, `cell.rep_url: must be an absolute http or https URL like http://10.0.0.5:1800, got "nope"`),
	)

	DescribeTable("the lifecycle requests",
		func(request validator, want string) {
			expectValidation(request, want)
		},
		Entry("ClaimActualLRPRequest",
			&models.ClaimActualLRPRequest{ProcessGuid: "web", Index: 0, InstanceGuid: anInstance, CellId: aCell}, ""),
		Entry("ClaimActualLRPRequest at the highest index",
			&models.ClaimActualLRPRequest{ProcessGuid: "web", Index: models.MaxInstances - 1, InstanceGuid: anInstance, CellId: aCell}, ""),
		Entry("ClaimActualLRPRequest without a guid",
			&models.ClaimActualLRPRequest{InstanceGuid: anInstance, CellId: aCell}, "process_guid: required"),
		Entry("ClaimActualLRPRequest with a negative index",
			&models.ClaimActualLRPRequest{ProcessGuid: "web", Index: -1, InstanceGuid: anInstance, CellId: aCell},
			"index: must be between 0 and 99999 (or 100000, a validation instance, or 100001 to 100010, baseline instances), got -1"),
		Entry("ClaimActualLRPRequest with an index no LRP can have",
			&models.ClaimActualLRPRequest{ProcessGuid: "web", Index: models.BaselineIndexBase + models.MaxBaselineInstances, InstanceGuid: anInstance, CellId: aCell},
			"index: must be between 0 and 99999 (or 100000, a validation instance, or 100001 to 100010, baseline instances), got 100011"),
		Entry("ClaimActualLRPRequest of a baseline instance",
			&models.ClaimActualLRPRequest{ProcessGuid: "web", Index: models.BaselineIndexBase, InstanceGuid: anInstance, CellId: aCell}, ""),
		Entry("ClaimActualLRPRequest of a validation instance",
			&models.ClaimActualLRPRequest{ProcessGuid: "web", Index: models.ValidationIndex, InstanceGuid: anInstance, CellId: aCell}, ""),
		Entry("ClaimActualLRPRequest without an instance guid",
			&models.ClaimActualLRPRequest{ProcessGuid: "web", CellId: aCell}, "instance_guid: required"),
		Entry("ClaimActualLRPRequest with a bad instance guid",
			&models.ClaimActualLRPRequest{ProcessGuid: "web", InstanceGuid: "a b", CellId: aCell},
			`instance_guid: must match ^[a-zA-Z0-9_-]{1,128}$, got "a b"`),
		Entry("ClaimActualLRPRequest without a cell",
			&models.ClaimActualLRPRequest{ProcessGuid: "web", InstanceGuid: anInstance}, "cell_id: required"),
		Entry("ClaimActualLRPRequest with a bad cell id",
			&models.ClaimActualLRPRequest{ProcessGuid: "web", InstanceGuid: anInstance, CellId: "cell 1"},
			`cell_id: must match ^[a-zA-Z0-9][a-zA-Z0-9._-]{0,254}$, got "cell 1"`),

		Entry("StartActualLRPRequest",
			&models.StartActualLRPRequest{ProcessGuid: "web", Index: 1, InstanceGuid: anInstance, CellId: aCell, NetInfo: validNetInfo()}, ""),
		Entry("StartActualLRPRequest naming the EVACUATING row",
			&models.StartActualLRPRequest{ProcessGuid: "web", Index: 1, InstanceGuid: anInstance, CellId: aCell, NetInfo: validNetInfo(),
				Presence: models.ActualLRP_EVACUATING}, ""),
		Entry("StartActualLRPRequest with an unknown presence",
			&models.StartActualLRPRequest{ProcessGuid: "web", Index: 1, InstanceGuid: anInstance, CellId: aCell, NetInfo: validNetInfo(),
				Presence: 9}, "presence: unknown presence 9"),
		Entry("StartActualLRPRequest with only an address",
			&models.StartActualLRPRequest{ProcessGuid: "web", InstanceGuid: anInstance, CellId: aCell, NetInfo: &models.NetInfo{Address: "cell-1.internal"}}, ""),
		Entry("StartActualLRPRequest without a cell",
			&models.StartActualLRPRequest{ProcessGuid: "web", InstanceGuid: anInstance, NetInfo: validNetInfo()}, "cell_id: required"),
		Entry("StartActualLRPRequest without net_info",
			&models.StartActualLRPRequest{ProcessGuid: "web", InstanceGuid: anInstance, CellId: aCell}, "net_info: required"),
		Entry("StartActualLRPRequest without an address",
			&models.StartActualLRPRequest{ProcessGuid: "web", InstanceGuid: anInstance, CellId: aCell, NetInfo: &models.NetInfo{}},
			"net_info.address: required"),
		Entry("StartActualLRPRequest with a space in the address",
			&models.StartActualLRPRequest{ProcessGuid: "web", InstanceGuid: anInstance, CellId: aCell, NetInfo: &models.NetInfo{Address: "10.0.0.5 "}},
			`net_info.address: must be a host name or an IP address, got "10.0.0.5 "`),
		Entry("StartActualLRPRequest with container port 0",
			&models.StartActualLRPRequest{ProcessGuid: "web", InstanceGuid: anInstance, CellId: aCell, NetInfo: &models.NetInfo{
				Address: "10.0.0.5", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61001}, {HostPort: 61002}},
			}}, "net_info.ports[1].container_port: must be 1-65535, got 0"),
		Entry("StartActualLRPRequest with host port 65536",
			&models.StartActualLRPRequest{ProcessGuid: "web", InstanceGuid: anInstance, CellId: aCell, NetInfo: &models.NetInfo{
				Address: "10.0.0.5", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 65536}},
			}}, "net_info.ports[0].host_port: must be 1-65535, got 65536"),
		Entry("StartActualLRPRequest mapping one container port twice",
			&models.StartActualLRPRequest{ProcessGuid: "web", InstanceGuid: anInstance, CellId: aCell, NetInfo: &models.NetInfo{
				Address: "10.0.0.5", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61001}, {ContainerPort: 8080, HostPort: 61002}},
			}}, "net_info.ports[1].container_port: duplicates ports[0].container_port (8080)"),
		Entry("StartActualLRPRequest with nine ports",
			&models.StartActualLRPRequest{ProcessGuid: "web", InstanceGuid: anInstance, CellId: aCell, NetInfo: &models.NetInfo{
				Address: "10.0.0.5", Ports: nineMappings(),
			}}, "net_info.ports: must hold at most 8 ports, got 9"),
		Entry("StartActualLRPRequest with a bad instance address",
			&models.StartActualLRPRequest{ProcessGuid: "web", InstanceGuid: anInstance, CellId: aCell, NetInfo: &models.NetInfo{
				Address: "10.0.0.5", InstanceAddress: "10.255.0.7\n",
			}}, `net_info.instance_address: must be a host name or an IP address, got "10.255.0.7\n"`),

		Entry("CrashActualLRPRequest",
			&models.CrashActualLRPRequest{ProcessGuid: "web", InstanceGuid: anInstance, CellId: aCell, CrashReason: "exit status 2"}, ""),
		Entry("CrashActualLRPRequest without a reason",
			&models.CrashActualLRPRequest{ProcessGuid: "web", InstanceGuid: anInstance, CellId: aCell}, ""),
		Entry("CrashActualLRPRequest with a reason of exactly 4 KiB",
			&models.CrashActualLRPRequest{ProcessGuid: "web", InstanceGuid: anInstance, CellId: aCell, CrashReason: strings.Repeat("r", 4096)}, ""),
		Entry("CrashActualLRPRequest with a reason over 4 KiB",
			&models.CrashActualLRPRequest{ProcessGuid: "web", InstanceGuid: anInstance, CellId: aCell, CrashReason: strings.Repeat("r", 4097)},
			"crash_reason: must be at most 4096 bytes, got 4097"),
		Entry("CrashActualLRPRequest with NUL in its reason",
			&models.CrashActualLRPRequest{ProcessGuid: "web", InstanceGuid: anInstance, CellId: aCell, CrashReason: "boom\x00x"},
			"crash_reason: must not hold NUL (U+0000)"),
		Entry("CrashActualLRPRequest without an instance guid",
			&models.CrashActualLRPRequest{ProcessGuid: "web", CellId: aCell}, "instance_guid: required"),

		Entry("FailActualLRPRequest",
			&models.FailActualLRPRequest{ProcessGuid: "web", Index: 3, CellId: aCell, PlacementError: "insufficient disk"}, ""),
		Entry("FailActualLRPRequest without a reason",
			&models.FailActualLRPRequest{ProcessGuid: "web", Index: 3, CellId: aCell}, "placement_error: required"),
		Entry("FailActualLRPRequest with a reason not UTF-8",
			&models.FailActualLRPRequest{ProcessGuid: "web", CellId: aCell, PlacementError: "\xff"}, "placement_error: must be valid UTF-8"),
		Entry("FailActualLRPRequest with NUL in its reason",
			&models.FailActualLRPRequest{ProcessGuid: "web", CellId: aCell, PlacementError: "no\x00room"}, "placement_error: must not hold NUL (U+0000)"),
		Entry("FailActualLRPRequest without a cell",
			&models.FailActualLRPRequest{ProcessGuid: "web", PlacementError: "no"}, "cell_id: required"),

		Entry("EvacuateActualLRPRequest",
			&models.EvacuateActualLRPRequest{ProcessGuid: "web", Index: 3, InstanceGuid: anInstance, CellId: aCell}, ""),
		Entry("EvacuateActualLRPRequest without a guid",
			&models.EvacuateActualLRPRequest{InstanceGuid: anInstance, CellId: aCell}, "process_guid: required"),
		Entry("EvacuateActualLRPRequest with a negative index",
			&models.EvacuateActualLRPRequest{ProcessGuid: "web", Index: -1, InstanceGuid: anInstance, CellId: aCell},
			"index: must be between 0 and 99999 (or 100000, a validation instance, or 100001 to 100010, baseline instances), got -1"),
		Entry("EvacuateActualLRPRequest without an instance guid",
			&models.EvacuateActualLRPRequest{ProcessGuid: "web", CellId: aCell}, "instance_guid: required"),
		Entry("EvacuateActualLRPRequest without a cell",
			&models.EvacuateActualLRPRequest{ProcessGuid: "web", InstanceGuid: anInstance}, "cell_id: required"),
		Entry("DrainCellRequest", &models.DrainCellRequest{CellId: aCell}, ""),
		Entry("DrainCellRequest without a cell", &models.DrainCellRequest{}, "cell_id: required"),
		Entry("DrainCellRequest with a bad cell id", &models.DrainCellRequest{CellId: "z1/cell"},
			`cell_id: must match ^[a-zA-Z0-9][a-zA-Z0-9._-]{0,254}$, got "z1/cell"`),
		Entry("RemoveActualLRPRequest",
			&models.RemoveActualLRPRequest{ProcessGuid: "web", Presence: models.ActualLRP_SUSPECT, InstanceGuid: anInstance, CellId: aCell}, ""),
		Entry("RemoveActualLRPRequest without a presence",
			&models.RemoveActualLRPRequest{ProcessGuid: "web", InstanceGuid: anInstance, CellId: aCell}, "presence: required"),
		Entry("RemoveActualLRPRequest with an unknown presence",
			&models.RemoveActualLRPRequest{ProcessGuid: "web", Presence: 9, InstanceGuid: anInstance, CellId: aCell}, "presence: unknown presence 9"),
		Entry("RemoveActualLRPRequest without an instance guid",
			&models.RemoveActualLRPRequest{ProcessGuid: "web", Presence: models.ActualLRP_ORDINARY, CellId: aCell}, "instance_guid: required"),
		Entry("RemoveActualLRPRequest without a cell",
			&models.RemoveActualLRPRequest{ProcessGuid: "web", Presence: models.ActualLRP_ORDINARY, InstanceGuid: anInstance}, "cell_id: required"),

		Entry("CellsRequest", &models.CellsRequest{}, ""),
	)

	DescribeTable("BulkReportRequest",
		func(mutate func(*models.BulkReportRequest), want string) {
			second := validReported()
			second.Index = 3
			second.State = models.ActualLRP_CLAIMED
			second.NetInfo = nil
			report := &models.BulkReportRequest{CellId: aCell, Instances: []*models.ReportedInstance{validReported(), second}}
			mutate(report)
			expectValidation(report, want)
		},
		Entry("a running and a starting instance", func(*models.BulkReportRequest) {}, ""),
		Entry("a cell running nothing", func(r *models.BulkReportRequest) { r.Instances = nil }, ""),
		Entry("no cell", func(r *models.BulkReportRequest) { r.CellId = "" }, "cell_id: required"),
		Entry("the same index twice with different presences", func(r *models.BulkReportRequest) {
			r.Instances[1].Index = 2
			r.Instances[1].Presence = models.ActualLRP_EVACUATING
		}, ""),
		Entry("the same row twice", func(r *models.BulkReportRequest) {
			r.Instances = append(r.Instances, validReported())
		}, "instances[2]: duplicates instances[0] (web/2 ORDINARY)"),
		Entry("an instance without a guid", func(r *models.BulkReportRequest) { r.Instances[1].ProcessGuid = "" },
			"instances[1].process_guid: required"),
		Entry("an instance with a negative index", func(r *models.BulkReportRequest) { r.Instances[0].Index = -2 },
			"instances[0].index: must be between 0 and 99999 (or 100000, a validation instance, or 100001 to 100010, baseline instances), got -2"),
		Entry("an instance without a presence", func(r *models.BulkReportRequest) { r.Instances[0].Presence = 0 },
			"instances[0].presence: required"),
		Entry("an instance without an instance guid", func(r *models.BulkReportRequest) { r.Instances[1].InstanceGuid = "" },
			"instances[1].instance_guid: required"),
		Entry("an instance without a definition", func(r *models.BulkReportRequest) { r.Instances[1].DefinitionId = "" },
			"instances[1].definition_id: required"),
		Entry("an instance with a bad definition id", func(r *models.BulkReportRequest) { r.Instances[1].DefinitionId = "v 1" },
			`instances[1].definition_id: must match ^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$, got "v 1"`),
		Entry("an instance reported UNCLAIMED", func(r *models.BulkReportRequest) { r.Instances[1].State = models.ActualLRP_UNCLAIMED },
			"instances[1].state: must be CLAIMED or RUNNING, got UNCLAIMED"),
		Entry("an instance reported CRASHED", func(r *models.BulkReportRequest) { r.Instances[0].State = models.ActualLRP_CRASHED },
			"instances[0].state: must be CLAIMED or RUNNING, got CRASHED"),
		Entry("an instance without a state", func(r *models.BulkReportRequest) { r.Instances[0].State = 0 },
			"instances[0].state: must be CLAIMED or RUNNING, got STATE_UNKNOWN"),
		Entry("a running instance without net_info", func(r *models.BulkReportRequest) { r.Instances[0].NetInfo = nil },
			"instances[0].net_info: required when state is RUNNING"),
		Entry("a running instance with a bad port", func(r *models.BulkReportRequest) { r.Instances[0].NetInfo.Ports[1].HostPort = 0 },
			"instances[0].net_info.ports[1].host_port: must be 1-65535, got 0"),
		Entry("a starting instance with net_info without an address", func(r *models.BulkReportRequest) {
			r.Instances[1].NetInfo = &models.NetInfo{}
		}, "instances[1].net_info.address: required"),
		Entry("a nil instance", func(r *models.BulkReportRequest) { r.Instances[1] = nil }, "instances[1]: required"),
	)

	DescribeTable("EventsRequest",
		func(request *models.EventsRequest, want string) {
			expectValidation(request, want)
		},
		Entry("every type", &models.EventsRequest{}, ""),
		Entry("some types, in protobuf", &models.EventsRequest{Types: []string{"actual_lrp_changed", "cell_changed"}, Protobuf: true}, ""),
		Entry("every known type at once", &models.EventsRequest{Types: models.EventTypes()}, ""),
		Entry("an unknown type", &models.EventsRequest{Types: []string{"cell_changed", "actual_lrp_exploded"}},
			`types[1]: unknown event type "actual_lrp_exploded"; want one of actual_lrp_changed, actual_lrp_crashed, `+
				`actual_lrp_created, actual_lrp_removed, budget_group_changed, cell_changed, definition_health, desired_lrp_changed, desired_lrp_created, `+
				`desired_lrp_removed, events_lost, freeze_changed, operation_changed, rollout_changed`),
		Entry("a type in the wrong case", &models.EventsRequest{Types: []string{"Cell_Changed"}},
			`types[0]: unknown event type "Cell_Changed"; want one of actual_lrp_changed, actual_lrp_crashed, `+
				`actual_lrp_created, actual_lrp_removed, budget_group_changed, cell_changed, definition_health, desired_lrp_changed, desired_lrp_created, `+
				`desired_lrp_removed, events_lost, freeze_changed, operation_changed, rollout_changed`),
	)

	DescribeTable("nil messages",
		func(message validator, want string) {
			err := message.Validate()
			if want == "" {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(models.IsErrorType(err, models.Error_InvalidRequest)).To(BeTrue(), "want InvalidRequest, got %v", err)
			Expect(models.ConvertError(err).GetMessage()).To(Equal(want))
		},
		Entry("RegisterCellRequest", (*models.RegisterCellRequest)(nil), "cell: required"),
		Entry("CellsRequest", (*models.CellsRequest)(nil), ""),
		Entry("ClaimActualLRPRequest", (*models.ClaimActualLRPRequest)(nil), "process_guid: required"),
		Entry("StartActualLRPRequest", (*models.StartActualLRPRequest)(nil), "process_guid: required"),
		Entry("CrashActualLRPRequest", (*models.CrashActualLRPRequest)(nil), "process_guid: required"),
		Entry("FailActualLRPRequest", (*models.FailActualLRPRequest)(nil), "process_guid: required"),
		Entry("RemoveActualLRPRequest", (*models.RemoveActualLRPRequest)(nil), "process_guid: required"),
		Entry("BulkReportRequest", (*models.BulkReportRequest)(nil), "cell_id: required"),
		Entry("EventsRequest", (*models.EventsRequest)(nil), ""),
	)

	DescribeTable("ValidateCellID",
		func(id string, valid bool) {
			err := models.ValidateCellID(id)
			if valid {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(models.IsErrorType(err, models.Error_InvalidRequest)).To(BeTrue())
			Expect(err.Error()).To(HavePrefix("InvalidRequest: cell_id: "))
		},
		Entry("a Diego-style id", "cell_z1-0", true),
		Entry("a host name", "cell-1.z1.internal", true),
		Entry("a UUID", "2f1b8c1e-0d6a-4a8e-9b53-6f7d1e2a3b4c", true),
		Entry("empty", "", false),
		Entry("an underscore first", "_cell", false),
		Entry("a colon", "cell:1", false),
		Entry("a non-ASCII letter", "célula", false),
	)

	Describe("event payloads", func() {
		It("has a payload for every event type, and none for an unknown one", func() {
			for _, eventType := range models.EventTypes() {
				Expect(models.NewEventPayload(eventType)).NotTo(BeNil(), eventType)
			}
			Expect(models.NewEventPayload("nope")).To(BeNil())
		})

		It("decodes into the payload the constructors build", func() {
			events := []models.Event{
				models.DesiredLRPCreated(&models.DesiredLRP{ProcessGuid: "g"}),
				models.DesiredLRPChanged(&models.DesiredLRP{ProcessGuid: "g"}, &models.DesiredLRP{ProcessGuid: "g"}),
				models.DesiredLRPRemoved(&models.DesiredLRP{ProcessGuid: "g"}),
				models.ActualLRPCreated(&models.ActualLRP{ProcessGuid: "g"}),
				models.ActualLRPChanged(&models.ActualLRP{ProcessGuid: "g"}, &models.ActualLRP{ProcessGuid: "g"}),
				models.ActualLRPRemoved(&models.ActualLRP{ProcessGuid: "g"}),
				models.ActualLRPCrashed(&models.ActualLRP{ProcessGuid: "g"}),
				models.CellChanged(nil, &models.Cell{CellId: "c"}),
				models.RolloutChanged(&models.RolloutStatus{ProcessGuid: "g"}),
				models.OperationChanged(&models.Operation{ProcessGuid: "g"}),
				models.DefinitionHealthLogged("c", &models.DefinitionHealth{ProcessGuid: "g"}),
				models.FreezeChanged(nil, &models.FreezeWindow{Name: "xmas"}, "cork"),
				models.BudgetGroupChanged(nil, &models.BudgetGroup{Name: "checkout"}, "cork"),
			}
			types := []string{models.EventEventsLost}
			for _, e := range events {
				payload := models.NewEventPayload(e.Type)
				Expect(payload.ProtoReflect().Descriptor().FullName()).To(Equal(e.Payload.ProtoReflect().Descriptor().FullName()), e.Type)
				types = append(types, e.Type)
			}
			Expect(types).To(ConsistOf(models.EventTypes()), "every type has a constructor, events_lost aside")
		})
	})
})

func nineMappings() []*models.PortMapping {
	var mappings []*models.PortMapping
	for i := range 9 {
		mappings = append(mappings, &models.PortMapping{ContainerPort: uint32(8080 + i), HostPort: uint32(61000 + i)})
	}
	return mappings
}

var _ = Describe("CleanReason", func() {
	DescribeTable("makes any text a reason the board accepts (its worked examples)",
		func(text, want string) {
			Expect(models.CleanReason(text)).To(Equal(want))
		},
		Entry("1. a plain reason", "exited with code 3", "exited with code 3"),
		Entry("2. NUL dropped", "setup failed: boom\x00!", "setup failed: boom!"),
		Entry("3. invalid UTF-8 replaced", "bad \xff byte", "bad \uFFFD byte"),
		Entry("4. cut at a character's start", strings.Repeat("a", 4095)+"é", strings.Repeat("a", 4095)),
		Entry("exactly the limit", strings.Repeat("a", 4096), strings.Repeat("a", 4096)),
	)

	It("gives what a crash call accepts for random bytes (a property, seeded)", func() {
		random := rand.New(rand.NewPCG(28, 2))
		for range 2000 {
			raw := make([]byte, random.IntN(6000))
			for i := range raw {
				raw[i] = byte(random.IntN(256))
			}
			reason := models.CleanReason(string(raw))
			request := &models.CrashActualLRPRequest{ProcessGuid: "web", InstanceGuid: "i-1", CellId: "cell-1", CrashReason: reason}
			Expect(request.Validate()).To(Succeed(), "%q", raw)
		}
	})
})

// numberedTags is n distinct placement tags of size bytes each.
func numberedTags(n, size int) []string {
	tags := make([]string, n)
	for i := range tags {
		tag := fmt.Sprintf("tag-%d-", i)
		tags[i] = tag + strings.Repeat("t", size-len(tag))
	}
	return tags
}
