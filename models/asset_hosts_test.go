package models_test

import (
	"fmt"

	"net/netip"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("Asset URLs", func() {
	sum := strings.Repeat("ab", 32)
	definition := func(url string) *models.LRPDefinition {
		def := validDefinition()
		def.Assets = []*models.Asset{{Url: "https://blobs.example/ok.tgz", Sha256: sum, Destination: "."}, {Url: url, Sha256: sum, Destination: "file"}}
		return def
	}

	DescribeTable("with credentials are refused, without echoing them",
		func(url string) {
			err := definition(url).Validate()
			Expect(err).To(HaveOccurred())
			msg := models.ConvertError(err).GetMessage()
			Expect(msg).To(HavePrefix("assets[1].url: "))
			Expect(msg).NotTo(ContainSubstring("secret"))
		},
		Entry("user and password", "http://user:secret@blobs.example/app"),
		Entry("a user alone", "https://secret@blobs.example/app"),
		Entry("an empty password", "https://secret:@blobs.example/app"),
		Entry("a file URL with a user", "file://secret@/srv/app"),
		Entry("credentials in a URL that does not parse", "http://user:secret@blobs.example/%zz"),
		Entry("credentials and no host", "http://user:secret@/app"),
	)

	DescribeTable("naming a link-local or metadata host",
		func(url string, refused bool) {
			def := definition(url)
			Expect(def.Validate()).To(Succeed(), "Validate leaves hosts to ValidateAssetHosts")
			err := models.ValidateAssetHosts("desired_lrp.definition", def, false)
			if !refused {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(err).To(HaveOccurred())
			Expect(models.ConvertError(err).GetType()).To(Equal(models.Error_InvalidRequest))
			Expect(models.ConvertError(err).GetMessage()).To(HavePrefix("desired_lrp.definition.assets[1].url: must "))
			if !strings.Contains(models.ConvertError(err).GetMessage(), "dotted decimal") {
				// The setting allows it.
				Expect(models.ValidateAssetHosts("desired_lrp.definition", def, true)).To(Succeed())
			}
		},
		Entry("the metadata address", "http://169.254.169.254/latest/meta-data/", true),
		Entry("ECS credentials", "http://169.254.170.2/v2/credentials", true),
		Entry("the edge of 169.254/16", "http://169.254.255.255/x", true),
		Entry("IPv6 link-local", "http://[fe80::1]/x", true),
		Entry("IPv6 link-local with a zone", "http://[fe80::1%25eth0]/x", true),
		Entry("IPv4-mapped metadata", "http://[::ffff:169.254.169.254]/x", true),
		Entry("AWS IPv6 metadata", "http://[fd00:ec2::254]/x", true),
		Entry("Alibaba metadata", "http://100.100.100.200/x", true),
		Entry("GCP's name", "http://metadata.google.internal/computeMetadata/v1/", true),
		Entry("GCP's name in capitals with a final dot", "https://METADATA.Google.Internal./x", true),
		Entry("GCP's short name", "http://metadata/x", true),
		Entry("AWS's name", "http://instance-data.ec2.internal/x", true),
		Entry("a port does not hide it", "http://169.254.169.254:80/x", true),
		Entry("the address as one decimal", "http://2852039166/x", true),
		Entry("the address in hex", "http://0xa9fea9fe/x", true),
		Entry("the address in octal", "http://0251.0376.0251.0376/x", true),
		Entry("the address in three parts", "http://169.254.43518/x", true),
		Entry("a plain host", "https://blobs.example/app", false),
		Entry("a private address", "http://10.0.0.5:8080/app", false),
		Entry("loopback", "http://127.0.0.1:8080/app", false),
		Entry("next to link-local", "http://169.255.0.1/app", false),
		Entry("a name that starts with metadata", "http://metadata.example/app", false),
		Entry("a name with a number", "http://1e100.net/app", false),
		Entry("a file URL", "file:///srv/assets/app", false),
	)

	DescribeTable("IsLinkLocalOrMetadata, the rep's check at connect time",
		func(addr string, want bool) {
			Expect(models.IsLinkLocalOrMetadata(netip.MustParseAddr(addr))).To(Equal(want))
		},
		Entry(nil, "169.254.169.254", true),
		Entry(nil, "169.254.0.0", true),
		Entry(nil, "fe80::abcd", true),
		Entry(nil, "febf::1", true),
		Entry(nil, "::ffff:169.254.1.1", true),
		Entry(nil, "fd00:ec2::254", true),
		Entry(nil, "100.100.100.200", true),
		Entry(nil, "100.100.100.201", false),
		Entry(nil, "fec0::1", false),
		Entry(nil, "10.0.0.1", false),
		Entry(nil, "127.0.0.1", false),
		Entry(nil, "::1", false),
	)
})

var _ = Describe("Analysis webhooks", func() {
	webhooks := func(urls ...string) *models.RolloutAnalysis {
		a := &models.RolloutAnalysis{Checks: []*models.AnalysisCheck{{Name: "crashes", Provider: "board", Signal: "crash_rate"}}}
		for i, u := range urls {
			a.Checks = append(a.Checks, &models.AnalysisCheck{Name: fmt.Sprint("gate", i), Provider: "webhook", Url: u})
		}
		return a
	}
	It("may not name a link-local or metadata host, unless the board allows them", func() {
		err := models.ValidateAnalysisHosts("update.analysis", webhooks("https://gate.example/ok", "http://169.254.169.254/latest"), false)
		Expect(err).To(MatchError(ContainSubstring("update.analysis.checks[2].url: must not name a link-local or cloud metadata address, got 169.254.169.254")))
		Expect(models.ValidateAnalysisHosts("update.analysis", webhooks("http://metadata.google.internal/"), false)).To(MatchError(ContainSubstring("update.analysis.checks[1].url")))
		Expect(models.ValidateAnalysisHosts("update.analysis", webhooks("http://169.254.169.254/latest"), true)).To(Succeed())
		Expect(models.ValidateAnalysisHosts("update.analysis", webhooks("https://gate.example/ok", "http://10.0.0.1:8080/"), false)).To(Succeed())
		Expect(models.ValidateAnalysisHosts("update.analysis", nil, false)).To(Succeed())
	})
})
