package client_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/events"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/certs"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("TLS", func() {
	var (
		dir   string
		board *httptest.Server
		hub   *events.Hub
	)

	files := func(name string) certs.Files {
		return certs.Files{CACert: filepath.Join(dir, "ca.crt"), Cert: filepath.Join(dir, name+".crt"), Key: filepath.Join(dir, name+".key")}
	}
	clientConfig := func(name string) *tls.Config {
		GinkgoHelper()
		config, err := files(name).ClientConfig()
		Expect(err).NotTo(HaveOccurred())
		return config
	}

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		_, _, err := certs.WriteSet(dir, certs.SetOptions{Cells: []string{"cell-z1"}})
		Expect(err).NotTo(HaveOccurred())
		serverConfig, err := files("board").ServerConfig()
		Expect(err).NotTo(HaveOccurred())
		hub = events.NewHub()
		DeferCleanup(hub.Close)
		board = httptest.NewUnstartedServer(newBoardHandler(handlers.WithEvents(hub)))
		board.TLS = serverConfig
		board.StartTLS()
		DeferCleanup(board.Close)
	})

	It("calls a board that requires client certificates, and streams its events", func() {
		ctx := context.Background()
		api := client.New(board.URL, client.WithTLSConfig(clientConfig("operator")))
		_, err := api.Ping(ctx)
		Expect(err).NotTo(HaveOccurred())
		_, err = api.DesireLRP(ctx, helloLRP("over-tls"))
		Expect(err).NotTo(HaveOccurred())
		stream, err := api.Events(ctx, client.EventsOptions{})
		Expect(err).NotTo(HaveOccurred())
		defer stream.Close()
		hub.Publish(models.CellChanged(nil, &models.Cell{CellId: "cell-z1"}))
		event, err := stream.Next()
		Expect(err).NotTo(HaveOccurred())
		Expect(event.Type).To(Equal(models.EventCellChanged))

		cell := client.NewCellClient(board.URL, "cell-z1", client.WithTLSConfig(clientConfig("cell-z1")))
		_, err = cell.RegisterCell(ctx, &models.Cell{
			CellId: "cell-z1", Zone: "z1", RepUrl: "https://127.0.0.1:1800",
			Capacity: &models.CellCapacity{MemoryMb: 1024, DiskMb: 1024, Instances: 4},
		})
		Expect(err).NotTo(HaveOccurred())
	})

	It("refuses a board whose certificate names a cell or another role, at once and naming both identities", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ca, err := certs.LoadCA(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"))
		Expect(err).NotTo(HaveOccurred())
		for name, names := range map[string]string{
			"cell-z1":    `cell "cell-z1"`,
			"api-client": "api-client",
		} {
			// The CA signed it, so only the identity check stands between.
			id := models.CellIdentity(name)
			if name == "api-client" {
				id = models.RoleIdentity(models.RoleAPIClient)
			}
			leaf, err := ca.Issue(certs.LeafRequest{Identity: id, Server: true})
			Expect(err).NotTo(HaveOccurred())
			keyPEM, err := leaf.KeyPEM()
			Expect(err).NotTo(HaveOccurred())
			pair, err := tls.X509KeyPair(leaf.CertPEM(), keyPEM)
			Expect(err).NotTo(HaveOccurred())
			pool := ca.Pool()
			var served atomic.Int64
			impostor := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { served.Add(1) }))
			impostor.TLS = certs.ServerConfig(pair, pool)
			impostor.StartTLS()
			DeferCleanup(impostor.Close)

			api := client.New(impostor.URL, client.WithTLSConfig(clientConfig("operator")), client.WithRetryBackoff(5*time.Second))
			began := time.Now()
			_, err = api.Ping(ctx)
			var mismatch *certs.PeerIdentityError
			Expect(errors.As(err, &mismatch)).To(BeTrue(), "%s: %v", name, err)
			Expect(mismatch.Expected).To(Equal(models.RoleIdentity(models.RoleBoard)))
			Expect(err.Error()).To(ContainSubstring("the peer's certificate names " + names + ", but this connection expects board"))
			Expect(time.Since(began)).To(BeNumerically("<", 5*time.Second), "no retry")

			cell := client.NewCellClient(impostor.URL, "cell-z1", client.WithTLSConfig(clientConfig("cell-z1")))
			_, err = cell.RegisterCell(ctx, &models.Cell{CellId: "cell-z1", Zone: "z1", RepUrl: "https://127.0.0.1:1800",
				Capacity: &models.CellCapacity{MemoryMb: 1024, DiskMb: 1024, Instances: 4}})
			Expect(errors.As(err, &mismatch)).To(BeTrue(), "a rep refuses it too: %v", err)
			Expect(served.Load()).To(BeZero(), "%s: no request went out", name)
		}
	})

	It("fails at once, without retrying, when the handshake does", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// No certificate: the board ends the handshake.
		pool, err := certs.LoadPool(filepath.Join(dir, "ca.crt"))
		Expect(err).NotTo(HaveOccurred())
		anonymous := client.New(board.URL, client.WithTLSConfig(&tls.Config{RootCAs: pool}), client.WithRetryBackoff(5*time.Second))
		began := time.Now()
		_, err = anonymous.Ping(ctx)
		Expect(err).To(MatchError(ContainSubstring("certificate")))
		Expect(err.Error()).NotTo(ContainSubstring("gave up"))
		Expect(time.Since(began)).To(BeNumerically("<", 5*time.Second), "no retry")

		// The board's CA not trusted: the client ends it.
		untrusting := client.New(board.URL, client.WithRetryBackoff(5*time.Second))
		_, err = untrusting.Ping(ctx)
		Expect(err).To(MatchError(ContainSubstring("certificate")))
		Expect(err.Error()).NotTo(ContainSubstring("gave up"))
	})
})
