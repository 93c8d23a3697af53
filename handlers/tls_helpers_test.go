package handlers_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/events"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/models"
)

// testCA is a certificate authority made up for the suite.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(name string) *testCA {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	template := &x509.Certificate{
		SerialNumber:          serialNumber(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	Expect(err).NotTo(HaveOccurred())
	cert, err := x509.ParseCertificate(der)
	Expect(err).NotTo(HaveOccurred())
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

func serialNumber() *big.Int {
	GinkgoHelper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	Expect(err).NotTo(HaveOccurred())
	return n
}

// issue signs a leaf certificate: a server's for 127.0.0.1 when server is
// true, a client's otherwise, with the given common name and URI SANs.
func (ca *testCA) issue(server bool, commonName string, uris ...string) tls.Certificate {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	template := &x509.Certificate{
		SerialNumber: serialNumber(),
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		template.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		template.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	for _, raw := range uris {
		u, err := url.Parse(raw)
		Expect(err).NotTo(HaveOccurred())
		template.URIs = append(template.URIs, u)
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca.cert, &key.PublicKey, ca.key)
	Expect(err).NotTo(HaveOccurred())
	leaf, err := x509.ParseCertificate(der)
	Expect(err).NotTo(HaveOccurred())
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// The suite's identities: who holds each client certificate.
const (
	asCell1     = "cell-1"
	asCell2     = "cell-2"
	asAPIClient = "api-client"
	asOperator  = "operator"
	asBoard     = "board"
	asNoRole    = "no role"
	asTwoRoles  = "two roles"
	asOtherCA   = "another CA"
)

// testPKI is the suite's CA and a certificate per identity, made once.
type testPKI struct {
	ca     *testCA
	server tls.Certificate
	// clients holds a client certificate per identity (the as* names);
	// asOtherCA's comes from a CA the board does not trust.
	clients map[string]tls.Certificate
}

var (
	pkiOnce   sync.Once
	sharedPKI *testPKI
)

func suitePKI() *testPKI {
	GinkgoHelper()
	pkiOnce.Do(func() {
		ca := newTestCA("corkboard test CA")
		other := newTestCA("someone else's CA")
		sharedPKI = &testPKI{
			ca:     ca,
			server: ca.issue(true, "board"),
			clients: map[string]tls.Certificate{
				asCell1:     ca.issue(false, "rep cell-1", models.CellIdentity("cell-1").URI().String()),
				asCell2:     ca.issue(false, "rep cell-2", models.CellIdentity("cell-2").URI().String()),
				asAPIClient: ca.issue(false, "cloud-controller", "corkboard://role/api-client"),
				asOperator:  ca.issue(false, "alice", "corkboard://role/operator"),
				asBoard:     ca.issue(false, "board", "corkboard://role/board"),
				asNoRole:    ca.issue(false, "nobody", "https://example.org/nobody"),
				asTwoRoles:  ca.issue(false, "confused", "corkboard://role/api-client", "corkboard://cell/cell-1"),
				asOtherCA:   other.issue(false, "intruder", "corkboard://role/operator"),
			},
		}
	})
	return sharedPKI
}

// newTLSBoard serves the API from store over TLS that requires and
// verifies client certificates from the suite's CA, as a production board
// does. Its client holds the operator's certificate; see client and as
// for the others.
func newTLSBoard(store db.DB, wire wireCodec, opts ...handlers.Option) *board {
	GinkgoHelper()
	pki := suitePKI()
	b := &board{
		wire:     wire,
		registry: prometheus.NewRegistry(),
		logger:   lagertest.NewTestLogger("handlers-test"),
	}
	b.server = httptest.NewUnstartedServer(handlers.New(b.logger, store, b.registry, opts...))
	b.server.TLS = &tls.Config{
		Certificates: []tls.Certificate{pki.server},
		ClientCAs:    pki.ca.pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	}
	// Refused handshakes are expected here; keep their log lines out of
	// the test output.
	b.server.Config.ErrorLog = log.New(GinkgoWriter, "", 0)
	b.server.StartTLS()
	DeferCleanup(b.server.Close)
	b.client = b.clientAs(asOperator)
	return b
}

// clientAs is an HTTP client holding the certificate of who (an as* name),
// or none when who is "".
func (b *board) clientAs(who string) *http.Client {
	GinkgoHelper()
	config := &tls.Config{RootCAs: suitePKI().ca.pool, MinVersion: tls.VersionTLS12}
	if who != "" {
		cert, ok := suitePKI().clients[who]
		Expect(ok).To(BeTrue(), "no certificate for %q", who)
		config.Certificates = []tls.Certificate{cert}
	}
	transport := &http.Transport{TLSClientConfig: config}
	DeferCleanup(transport.CloseIdleConnections)
	return &http.Client{Transport: transport}
}

// asIdentity is the board called with the certificate of who.
func (b *board) asIdentity(who string) *board {
	GinkgoHelper()
	return b.as(b.clientAs(who))
}

// newHub is an event hub closed when the spec ends.
func newHub() *events.Hub {
	hub := events.NewHub(events.WithHistory(100))
	DeferCleanup(hub.Close)
	return hub
}
