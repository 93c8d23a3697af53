package migrations

import (
	"github.com/corkboard/corkboard/models"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"
)

var _ = DescribeTable("decodeRunInfo",
	func(blob string, want *models.LRPDefinition) {
		got, err := decodeRunInfo([]byte(blob))
		Expect(err).NotTo(HaveOccurred())
		Expect(proto.Equal(got, want)).To(BeTrue(), "got %v", got)
	},
	Entry("only an action", `{"action":{"path":"/bin/app"}}`,
		&models.LRPDefinition{Action: &models.RunAction{Path: "/bin/app"}}),
	Entry("everything", `{"action":{"path":"/bin/app","args":["-v"],"env":[{"name":"A","value":"b"}],"dir":"/srv"},
		"ports":[80,443],"health_check":{"type":"http","port":80,"path":"/ok"},"start_timeout_ms":5000}`,
		&models.LRPDefinition{
			Action:         &models.RunAction{Path: "/bin/app", Args: []string{"-v"}, Env: []*models.EnvironmentVariable{{Name: "A", Value: "b"}}, Dir: "/srv"},
			Ports:          []uint32{80, 443},
			HealthCheck:    &models.HealthCheck{Type: models.HealthCheck_HTTP, Port: 80, Path: "/ok"},
			StartTimeoutMs: 5000,
		}),
	Entry("a tcp check", `{"action":{"path":"/x"},"health_check":{"type":"tcp","port":9}}`,
		&models.LRPDefinition{Action: &models.RunAction{Path: "/x"}, HealthCheck: &models.HealthCheck{Type: models.HealthCheck_TCP, Port: 9}}),
)

var _ = DescribeTable("decodeRunInfo on blobs it cannot import",
	func(blob, message string) {
		_, err := decodeRunInfo([]byte(blob))
		Expect(err).To(MatchError(ContainSubstring(message)))
	},
	Entry("empty", "  ", "run_info: empty"),
	Entry("not JSON", "\x08\x01", "run_info: invalid character"),
	Entry("no action", `{"ports":[80]}`, "run_info.action: required"),
	Entry("an unknown field", `{"action":{"path":"/x"},"rootfs":"cflinuxfs4"}`, `run_info: json: unknown field "rootfs"`),
	Entry("an unknown health check", `{"action":{"path":"/x"},"health_check":{"type":"grpc"}}`, `run_info.health_check.type: "grpc" is not one of`),
	Entry("trailing data", `{"action":{"path":"/x"}} {}`, "unexpected data after the JSON value"),
)

var _ = DescribeTable("decodeNetInfo",
	func(text string, want *models.NetInfo) {
		got, err := decodeNetInfo(text)
		Expect(err).NotTo(HaveOccurred())
		Expect(proto.Equal(got, want)).To(BeTrue(), "got %v", got)
	},
	Entry("none", "", nil),
	Entry("an address and ports", `{"address":"10.0.0.1","instance_address":"172.16.0.2","ports":[{"container_port":8080,"host_port":61000}]}`,
		&models.NetInfo{Address: "10.0.0.1", InstanceAddress: "172.16.0.2", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61000}}}),
)

var _ = Describe("decodeNetInfo and decodePlacementTags on bad input", func() {
	It("names net_info", func() {
		_, err := decodeNetInfo(`{"address":"10.0.0.1","zone":"z1"}`)
		Expect(err).To(MatchError(ContainSubstring(`net_info: json: unknown field "zone"`)))
	})
	It("names placement_tags", func() {
		_, err := decodePlacementTags(`{"a":1}`)
		Expect(err).To(MatchError(ContainSubstring("placement_tags:")))
	})
})
