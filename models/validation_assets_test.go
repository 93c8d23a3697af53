package models_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("Assets and setup", func() {
	sum := strings.Repeat("ab", 32)
	withAssets := func(assets ...*models.Asset) *models.LRPDefinition {
		def := validDefinition()
		def.Assets = assets
		return def
	}
	DescribeTable("LRPDefinition",
		func(def *models.LRPDefinition, want string) { expectValidation(def, want) },
		Entry("a droplet unpacked into the instance's directory",
			withAssets(&models.Asset{Url: "https://blobs.example/hello-v1.tgz", Sha256: sum, Destination: "."}), ""),
		Entry("a plain file and a zip",
			withAssets(&models.Asset{Url: "http://blobs.example/config.yml", Sha256: sum, Destination: "etc/config.yml"},
				&models.Asset{Url: "file:///srv/assets/app.zip", Sha256: sum, Destination: "app"}), ""),
		Entry("url missing", withAssets(&models.Asset{Sha256: sum, Destination: "."}), "assets[0].url: required"),
		Entry("url of another scheme", withAssets(&models.Asset{Url: "ftp://x/y.tgz", Sha256: sum, Destination: "."}),
			`assets[0].url: must use one of the schemes [http https file], got "ftp://x/y.tgz"`),
		Entry("http url without a host", withAssets(&models.Asset{Url: "http:///y.tgz", Sha256: sum, Destination: "."}),
			`assets[0].url: must name a host, got "http:///y.tgz"`),
		Entry("checksum missing", withAssets(&models.Asset{Url: "http://x/y.tgz", Destination: "."}),
			"assets[0].sha256: required: the hex SHA-256 of the file at url"),
		Entry("checksum not hex", withAssets(&models.Asset{Url: "http://x/y.tgz", Sha256: strings.Repeat("zz", 32), Destination: "."}),
			`assets[0].sha256: must be 64 lowercase hex digits (a SHA-256), got "`+strings.Repeat("zz", 32)+`"`),
		Entry("checksum in upper case", withAssets(&models.Asset{Url: "http://x/y.tgz", Sha256: strings.ToUpper(sum), Destination: "."}),
			`assets[0].sha256: must be 64 lowercase hex digits (a SHA-256), got "`+strings.ToUpper(sum)+`"`),
		Entry("destination climbing out", withAssets(&models.Asset{Url: "http://x/y.tgz", Sha256: sum, Destination: "a/../../etc"}),
			`assets[0].destination: must stay inside the instance's directory, got "a/../../etc"`),
		Entry("destination absolute", withAssets(&models.Asset{Url: "http://x/y.tgz", Sha256: sum, Destination: "/etc"}),
			`assets[0].destination: must be relative to the instance's directory, got "/etc"`),
		Entry("a plain file onto the directory itself", withAssets(&models.Asset{Url: "http://x/hello", Sha256: sum, Destination: "."}),
			`assets[0].destination: must name a file for an asset that is not an archive (.tgz, .tar.gz, .zip), got "."`),
		Entry("two files onto one destination", withAssets(
			&models.Asset{Url: "http://x/a", Sha256: sum, Destination: "bin/app"},
			&models.Asset{Url: "http://x/b", Sha256: sum, Destination: "bin/./app"}),
			`assets[1].destination: duplicates assets[0].destination ("bin/./app")`),
		Entry("setup without a path", func() *models.LRPDefinition {
			def := validDefinition()
			def.Setup = &models.RunAction{Args: []string{"x"}}
			return def
		}(), "setup.path: required"),
		Entry("setup timeout over an hour", func() *models.LRPDefinition {
			def := validDefinition()
			def.Setup = &models.RunAction{Path: "./setup.sh"}
			def.SetupTimeoutMs = 3_600_001
			return def
		}(), "setup_timeout_ms: must be 0 (bounded by the start timeout alone) or from 1 to 3600000, got 3600001"),
	)
})
