package models_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

func hashedDefinition() *models.LRPDefinition {
	return &models.LRPDefinition{
		Action: &models.RunAction{
			Path: "/bin/app",
			Args: []string{"serve"},
			Env:  []*models.EnvironmentVariable{{Name: "A", Value: "1"}},
		},
		Ports:       []uint32{8080},
		HealthCheck: &models.HealthCheck{Type: models.HealthCheck_TCP, Port: 8080},
		MemoryMb:    128,
	}
}

var _ = Describe("Definition ids", func() {
	Describe("DefinitionContentHash", func() {
		// Pinned because stored ids depend on it: if a new build hashed the
		// same content differently, re-sending an unchanged definition would
		// make a new version and roll every instance. The value is the
		// SHA-256 of the canonical encoding worked out by hand (fields in
		// number order, packed ports, no defaults).
		It("is the sha256 of the canonical protobuf encoding", func() {
			Expect(models.DefinitionContentHash(hashedDefinition())).To(
				Equal("4d82d37bd3532e5e57bfc07371f1dd0f9e7c77143f240c652db465ec0b5367d8"))
		})

		It("is the same every time for the same content", func() {
			first := models.DefinitionContentHash(hashedDefinition())
			for range 20 {
				Expect(models.DefinitionContentHash(hashedDefinition())).To(Equal(first))
			}
		})

		It("ignores the definition's id and creation time", func() {
			named := hashedDefinition()
			named.DefinitionId = "v7"
			named.CreatedAt = 1700000000000000000
			Expect(models.DefinitionContentHash(named)).To(Equal(models.DefinitionContentHash(hashedDefinition())))
		})

		It("leaves the definition it hashes untouched", func() {
			def := hashedDefinition()
			def.DefinitionId = "v7"
			def.CreatedAt = 42
			before := proto.Clone(def)
			models.DefinitionContentHash(def)
			Expect(proto.Equal(before, def)).To(BeTrue())
		})

		It("hashes a nil definition like an empty one, the sha256 of no bytes", func() {
			Expect(models.DefinitionContentHash(nil)).To(
				Equal("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"))
			Expect(models.DefinitionContentHash(&models.LRPDefinition{})).To(Equal(models.DefinitionContentHash(nil)))
		})

		DescribeTable("changes with any change of content",
			func(change func(*models.LRPDefinition)) {
				changed := hashedDefinition()
				change(changed)
				Expect(models.DefinitionContentHash(changed)).NotTo(Equal(models.DefinitionContentHash(hashedDefinition())))
			},
			Entry("path", func(d *models.LRPDefinition) { d.Action.Path = "/bin/other" }),
			Entry("an argument", func(d *models.LRPDefinition) { d.Action.Args[0] = "worker" }),
			Entry("one more argument", func(d *models.LRPDefinition) { d.Action.Args = append(d.Action.Args, "-v") }),
			Entry("an environment value", func(d *models.LRPDefinition) { d.Action.Env[0].Value = "2" }),
			Entry("dir", func(d *models.LRPDefinition) { d.Action.Dir = "/srv" }),
			Entry("ports", func(d *models.LRPDefinition) { d.Ports = []uint32{8081} }),
			Entry("port order", func(d *models.LRPDefinition) { d.Ports = []uint32{9090, 8080} }),
			Entry("health check type", func(d *models.LRPDefinition) {
				d.HealthCheck.Type = models.HealthCheck_HTTP
				d.HealthCheck.Path = "/"
			}),
			Entry("start timeout", func(d *models.LRPDefinition) { d.StartTimeoutMs = 1 }),
			Entry("memory", func(d *models.LRPDefinition) { d.MemoryMb = 129 }),
			Entry("disk", func(d *models.LRPDefinition) { d.DiskMb = 1 }),
		)
	})

	Describe("GenerateDefinitionID", func() {
		It("is d- and the first 16 hex digits of the content hash", func() {
			Expect(models.GenerateDefinitionID(hashedDefinition())).To(Equal("d-4d82d37bd3532e5e"))
		})

		It("ignores the id the definition already carries", func() {
			named := hashedDefinition()
			named.DefinitionId = "v7"
			Expect(models.GenerateDefinitionID(named)).To(Equal("d-4d82d37bd3532e5e"))
		})

		It("is itself a valid update identifier", func() {
			Expect(models.ValidateUpdateIdentifier(models.GenerateDefinitionID(hashedDefinition()))).To(Succeed())
			Expect(models.ValidateUpdateIdentifier(models.GenerateDefinitionID(nil))).To(Succeed())
		})
	})

	DescribeTable("EffectiveDefinitionID",
		func(ownID, updateIdentifier, want string) {
			def := hashedDefinition()
			def.DefinitionId = ownID
			Expect(models.EffectiveDefinitionID(def, updateIdentifier)).To(Equal(want))
		},
		Entry("the update identifier first", "v1", "v1", "v1"),
		Entry("the update identifier for a definition without an id", "", "v2", "v2"),
		Entry("else the definition's own id", "v3", "", "v3"),
		Entry("else one generated from the content", "", "", "d-4d82d37bd3532e5e"),
	)
})
