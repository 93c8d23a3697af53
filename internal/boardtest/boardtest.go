// Package boardtest holds a board for the specs of the cell side of the
// board's API (the rep's agent, internal/simcell): the real API over
// SQLite, behind a proxy that meddles with calls as a failing network or
// a killed board would. It is for tests only: it fails the running Ginkgo
// spec on any error.
package boardtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"

	"code.cloudfoundry.org/lager/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
	"github.com/corkboard/corkboard/models"
)

// MeddlingBoard is a real board (the API over SQLite) behind a proxy that
// meddles with the first call of a route (see Meddle). No convergence
// runs: the specs make its writes themselves (see Place).
type MeddlingBoard struct {
	// Store is the board's storage, for the specs' own reads and writes.
	Store *sqldb.SQLDB
	URL   string

	mu     sync.Mutex
	calls  map[string]int
	before map[string]func()
	cut    map[string]bool
}

// StartMeddlingBoard starts a board on a new SQLite database, both gone
// when the spec ends. wrap, when set, puts the spec's own double around
// the storage the API uses (to answer some calls differently, say).
func StartMeddlingBoard(wrap func(db.DB) db.DB) *MeddlingBoard {
	GinkgoHelper()
	ctx := context.Background()
	database, err := testdb.Create(testdb.SQLite)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(database.Drop)
	conn, err := sqldb.Open(ctx, testdb.SQLite, database.DSN)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(conn.Close)
	Expect(migrations.Up(ctx, conn, testdb.SQLite)).To(Succeed())

	b := &MeddlingBoard{Store: sqldb.New(conn, testdb.SQLite), calls: map[string]int{}, before: map[string]func(){}, cut: map[string]bool{}}
	var store db.DB = b.Store
	if wrap != nil {
		store = wrap(store)
	}
	api := handlers.New(lager.NewLogger("board"), store, nil)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.calls[r.URL.Path]++
		first := b.calls[r.URL.Path] == 1
		before, cut := b.before[r.URL.Path], b.cut[r.URL.Path]
		b.mu.Unlock()
		if first && before != nil {
			before()
		}
		if !first || !cut {
			api.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(httptest.NewRecorder(), r)
		conn, _, err := http.NewResponseController(w).Hijack()
		Expect(err).NotTo(HaveOccurred())
		conn.Close()
	}))
	DeferCleanup(server.Close)
	b.URL = server.URL
	return b
}

// Meddle sets what the first call of route meets: before, when set, runs
// before it reaches the board; cut has the board apply it and the
// connection closed before the answer goes back, as when the board is
// killed right after writing it.
func (b *MeddlingBoard) Meddle(route string, before func(), cut bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.before[route], b.cut[route] = before, cut
}

// Count is how many calls of route the board got.
func (b *MeddlingBoard) Count(route string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[route]
}

// Row is the ORDINARY row of (processGuid, index), nil when there is none.
func (b *MeddlingBoard) Row(processGuid string, index int32) *models.ActualLRP {
	GinkgoHelper()
	rows, err := b.Store.ActualLRPs(context.Background(), db.ActualLRPFilter{ProcessGuid: processGuid})
	Expect(err).NotTo(HaveOccurred())
	for _, lrp := range rows {
		if lrp.GetIndex() == index && lrp.GetPresence() == models.ActualLRP_ORDINARY {
			return lrp
		}
	}
	return nil
}

// Place puts the UNCLAIMED row of (processGuid, index) on cellID, as a
// convergence pass does.
func (b *MeddlingBoard) Place(processGuid string, index int32, cellID string) {
	GinkgoHelper()
	row := b.Row(processGuid, index)
	Expect(row).NotTo(BeNil())
	result, err := b.Store.ApplyConvergence(context.Background(), &convergence.ConvergenceWrites{
		Place: []convergence.Placement{{CellID: cellID, Row: RowVersion(row)}},
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(result.Applied).To(Equal(1))
}

// Redefine moves the ORDINARY row of (processGuid, index), which must
// serve nothing (UNCLAIMED or CLAIMED), onto definitionID in place, as a
// rolling update does.
func (b *MeddlingBoard) Redefine(processGuid string, index int32, definitionID string) {
	GinkgoHelper()
	result, err := b.Store.ApplyConvergence(context.Background(), &convergence.ConvergenceWrites{
		Redefine: []convergence.Redefinition{{Row: RowVersion(b.Row(processGuid, index)), DefinitionID: definitionID}},
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(result.Applied).To(Equal(1))
}

// RowVersion is the version of lrp a convergence write names.
func RowVersion(lrp *models.ActualLRP) convergence.RowVersion {
	return convergence.RowVersion{
		Key:   models.ActualLRPKey{ProcessGuid: lrp.GetProcessGuid(), Index: lrp.GetIndex(), Presence: lrp.GetPresence()},
		State: lrp.GetState(), ModificationIndex: int64(lrp.GetModificationTag().GetIndex()),
	}
}
