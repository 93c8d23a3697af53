package e2e_test

import (
	"crypto/tls"
	"net/http"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/certs"
)

// tlsCluster is a board and its reps with mutual TLS, and the
// certificates they and their callers use (made by internal/certs as
// corkboard-certs makes them).
type tlsCluster struct {
	dir string
}

// newTLSCluster writes a CA and certificates for the board, cell-z1,
// cell-z2, an API client and an operator.
func newTLSCluster() *tlsCluster {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	_, _, err := certs.WriteSet(dir, certs.SetOptions{Cells: []string{"cell-z1", "cell-z2"}})
	Expect(err).NotTo(HaveOccurred())
	return &tlsCluster{dir: dir}
}

func (c *tlsCluster) path(name string) string { return filepath.Join(c.dir, name) }

// section is the "tls" config key for certificate name.
func (c *tlsCluster) section(name string) map[string]any {
	return map[string]any{"ca_cert": c.path("ca.crt"), "cert": c.path(name + ".crt"), "key": c.path(name + ".key")}
}

// clientTLS is the client side for certificate name.
func (c *tlsCluster) clientTLS(name string) *tls.Config {
	GinkgoHelper()
	files := certs.Files{CACert: c.path("ca.crt"), Cert: c.path(name + ".crt"), Key: c.path(name + ".key")}
	config, err := files.ClientConfig()
	Expect(err).NotTo(HaveOccurred())
	return config
}

// httpClient calls with certificate name.
func (c *tlsCluster) httpClient(name string) *http.Client {
	GinkgoHelper()
	return &http.Client{Transport: &http.Transport{TLSClientConfig: c.clientTLS(name)}}
}

// corkEnv points cork at certificate name.
func (c *tlsCluster) corkEnv(name string) []string {
	return []string{"BBS_CA_CERT=" + c.path("ca.crt"), "BBS_CERT=" + c.path(name+".crt"), "BBS_KEY=" + c.path(name+".key")}
}

// startBoard runs a board serving TLS with the board's certificate; its
// client() and cork() are the operator's.
func (c *tlsCluster) startBoard() *board {
	GinkgoHelper()
	b := startBoard(map[string]any{"tls": c.section("board")})
	Expect(b.url).To(HavePrefix("https://"))
	b.tlsConfig = c.clientTLS("operator")
	b.corkEnv = c.corkEnv("operator")
	return b
}

// startRep runs the rep of cellID with its cell's certificate.
func (c *tlsCluster) startRep(b *board, cellID, zone string) *runningRep {
	GinkgoHelper()
	r := startRep(b, cellID, zone, map[string]any{"tls": c.section(cellID)})
	Expect(r.url).To(HavePrefix("https://"))
	r.httpClient = c.httpClient("operator")
	return r
}
