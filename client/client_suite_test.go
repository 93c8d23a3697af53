package client_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"testing"

	"code.cloudfoundry.org/lager/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
	"github.com/corkboard/corkboard/models"
)

func TestClient(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Client Suite")
}

// newBoardHandler serves the real API over a fresh, migrated SQLite database
// that is dropped when the spec ends. The client only speaks HTTP, so one
// dialect is enough here; the storage suites cover the others.
func newBoardHandler(opts ...handlers.Option) http.Handler {
	database, err := testdb.Create(testdb.SQLite)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(database.Drop)
	ctx := context.Background()
	conn, err := sqldb.Open(ctx, database.Dialect, database.DSN)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(conn *sql.DB) { Expect(conn.Close()).To(Succeed()) }, conn)
	Expect(migrations.Up(ctx, conn, database.Dialect)).To(Succeed())
	return handlers.New(lager.NewLogger("client-test"), sqldb.New(conn, database.Dialect), prometheus.NewRegistry(), opts...)
}

// startBoard serves newBoardHandler on a loopback port.
func startBoard() *httptest.Server {
	server := httptest.NewServer(newBoardHandler())
	DeferCleanup(server.Close)
	return server
}

func helloLRP(guid string) *models.DesiredLRP {
	return &models.DesiredLRP{
		ProcessGuid: guid,
		Domain:      "cork",
		Instances:   2,
		Annotation:  "from the client suite",
		Definition:  helloDefinition("v1"),
	}
}

func helloDefinition(version string) *models.LRPDefinition {
	return &models.LRPDefinition{
		Action: &models.RunAction{
			Path: "./hello",
			Env:  []*models.EnvironmentVariable{{Name: "VERSION", Value: version}},
		},
		Ports:       []uint32{8080},
		HealthCheck: &models.HealthCheck{Type: models.HealthCheck_HTTP, Port: 8080, Path: "/health"},
		MemoryMb:    64,
		DiskMb:      32,
	}
}

// errorOfType matches a *models.Error of type t.
func errorOfType(t models.Error_Type) OmegaMatcher {
	return And(
		BeAssignableToTypeOf(&models.Error{}),
		WithTransform(func(err error) models.Error_Type {
			typ, _ := models.ErrorTypeOf(err)
			return typ
		}, Equal(t)),
	)
}
