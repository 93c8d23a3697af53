package sqldb_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/db/sqldb"
)

var _ = forEachDialect("DatabaseTime", func(b *board) {
	It("reads the database's clock, whatever the store's clock says", func() {
		// The database runs on this machine, so its clock is this
		// machine's; the store's is the suite's fake clock, years back.
		before := time.Now()
		at, err := sqldb.DatabaseTime(b.ctx, b.conn, b.dialect)
		after := time.Now()
		Expect(err).NotTo(HaveOccurred())
		// SQLite's clock has milliseconds.
		Expect(at).To(BeTemporally(">=", before.Truncate(time.Millisecond)))
		Expect(at).To(BeTemporally("<=", after))
		Expect(b.clock.Now()).NotTo(BeTemporally("~", at, time.Hour))
	})

	It("refuses a dialect it does not know", func() {
		_, err := sqldb.DatabaseTime(b.ctx, b.conn, "oracle")
		Expect(err).To(MatchError(ContainSubstring(`unknown dialect "oracle"`)))
	})
})
