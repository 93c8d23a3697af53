package models_test

import (
	"crypto/x509"
	"net/url"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

func uris(raw ...string) []*url.URL {
	GinkgoHelper()
	var parsed []*url.URL
	for _, r := range raw {
		u, err := url.Parse(r)
		Expect(err).NotTo(HaveOccurred())
		parsed = append(parsed, u)
	}
	return parsed
}

var _ = Describe("Identity", func() {
	DescribeTable("the identity a certificate's URI SANs name",
		func(sans []string, want models.Identity) {
			Expect(models.IdentityFromURIs(uris(sans...))).To(Equal(want))
		},
		Entry("a cell", []string{"corkboard://cell/cell-z1"}, models.CellIdentity("cell-z1")),
		Entry("a cell id with dots and underscores", []string{"corkboard://cell/cell_z1-0.example"}, models.CellIdentity("cell_z1-0.example")),
		Entry("an API client", []string{"corkboard://role/api-client"}, models.RoleIdentity(models.RoleAPIClient)),
		Entry("an operator", []string{"corkboard://role/operator"}, models.RoleIdentity(models.RoleOperator)),
		Entry("the board", []string{"corkboard://role/board"}, models.RoleIdentity(models.RoleBoard)),
		Entry("an upper-case scheme (URLs' schemes are case-insensitive)", []string{"CORKBOARD://role/operator"}, models.RoleIdentity(models.RoleOperator)),
		Entry("beside URIs of other schemes", []string{"spiffe://example.org/cc", "corkboard://role/api-client", "https://cc.example"}, models.RoleIdentity(models.RoleAPIClient)),
		Entry("the same identity twice", []string{"corkboard://cell/c1", "corkboard://cell/c1"}, models.CellIdentity("c1")),

		Entry("nothing", nil, models.NoIdentity),
		Entry("only other schemes", []string{"spiffe://example.org/cell/c1", "https://corkboard/role/operator"}, models.NoIdentity),
		Entry("two cells", []string{"corkboard://cell/c1", "corkboard://cell/c2"}, models.NoIdentity),
		Entry("a cell and a role", []string{"corkboard://cell/c1", "corkboard://role/operator"}, models.NoIdentity),
		Entry("two roles", []string{"corkboard://role/api-client", "corkboard://role/operator"}, models.NoIdentity),
		Entry("an unknown role", []string{"corkboard://role/admin"}, models.NoIdentity),
		Entry("an unknown role beside a known one", []string{"corkboard://role/operator", "corkboard://role/admin"}, models.NoIdentity),
		Entry("the role none", []string{"corkboard://role/none"}, models.NoIdentity),
		Entry("the role cell", []string{"corkboard://role/cell"}, models.NoIdentity),
		Entry("an unknown host", []string{"corkboard://user/alice"}, models.NoIdentity),
		Entry("an upper-case host", []string{"corkboard://ROLE/operator"}, models.NoIdentity),
		Entry("a cell without an id", []string{"corkboard://cell/"}, models.NoIdentity),
		Entry("a cell without a path", []string{"corkboard://cell"}, models.NoIdentity),
		Entry("an invalid cell id", []string{"corkboard://cell/-bad"}, models.NoIdentity),
		Entry("a cell id with a slash", []string{"corkboard://cell/c1/c2"}, models.NoIdentity),
		Entry("an escaped cell id", []string{"corkboard://cell/c%2F1"}, models.NoIdentity),
		Entry("a role with a trailing slash", []string{"corkboard://role/operator/"}, models.NoIdentity),
		Entry("a port", []string{"corkboard://role:1/operator"}, models.NoIdentity),
		Entry("a user", []string{"corkboard://alice@role/operator"}, models.NoIdentity),
		Entry("a query", []string{"corkboard://role/operator?x=1"}, models.NoIdentity),
		Entry("a fragment", []string{"corkboard://role/operator#x"}, models.NoIdentity),
		Entry("an opaque URI", []string{"corkboard:role/operator"}, models.NoIdentity),
	)

	It("reads the URI SANs of a certificate", func() {
		cert := &x509.Certificate{URIs: uris("corkboard://cell/cell-1")}
		Expect(models.IdentityFromCertificate(cert)).To(Equal(models.CellIdentity("cell-1")))
		Expect(models.IdentityFromCertificate(nil)).To(Equal(models.NoIdentity))
		Expect(models.IdentityFromCertificate(&x509.Certificate{})).To(Equal(models.NoIdentity))
	})

	DescribeTable("the URI that names an identity, which reads back as that identity",
		func(id models.Identity, want string) {
			Expect(id.URI().String()).To(Equal(want))
			Expect(models.IdentityFromURIs(uris(want))).To(Equal(id))
		},
		Entry("a cell", models.CellIdentity("cell-z1"), "corkboard://cell/cell-z1"),
		Entry("an API client", models.RoleIdentity(models.RoleAPIClient), "corkboard://role/api-client"),
		Entry("an operator", models.RoleIdentity(models.RoleOperator), "corkboard://role/operator"),
		Entry("the board", models.RoleIdentity(models.RoleBoard), "corkboard://role/board"),
	)

	DescribeTable("how a refusal names a certificate of the identity, on the board and the reps alike",
		func(id models.Identity, want string) { Expect(id.Certificate()).To(Equal(want)) },
		Entry("a cell", models.CellIdentity("cell-z1"), `cell "cell-z1"`),
		Entry("an api-client", models.RoleIdentity(models.RoleAPIClient), "an api-client certificate"),
		Entry("an operator", models.RoleIdentity(models.RoleOperator), "an operator certificate"),
		Entry("the board", models.RoleIdentity(models.RoleBoard), "a board certificate"),
		Entry("none (no identity, or two)", models.NoIdentity, "a certificate naming no corkboard identity"),
	)

	It("has no URI for an identity no certificate can carry", func() {
		Expect(models.NoIdentity.URI()).To(BeNil())
		Expect(models.CellIdentity("").URI()).To(BeNil())
		Expect(models.CellIdentity("a/b").URI()).To(BeNil())
		Expect(models.RoleIdentity(models.RoleCell).URI()).To(BeNil())
		Expect(models.RoleIdentity("admin").URI()).To(BeNil())
	})

	It("names itself for people", func() {
		Expect(models.CellIdentity("cell-z1").String()).To(Equal(`cell "cell-z1"`))
		Expect(models.RoleIdentity(models.RoleAPIClient).String()).To(Equal("api-client"))
		Expect(models.RoleIdentity(models.RoleOperator).String()).To(Equal("operator"))
		Expect(models.NoIdentity.String()).To(Equal("none"))
	})
})
