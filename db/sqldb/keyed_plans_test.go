package sqldb_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/db/sqldb"
)

// The driver's keyed reads and writes reach their rows by the primary key,
// however many keys they name. MariaDB once walked the whole key for an
// UPDATE naming one row as a one-row tuple list, locking every row it
// passed, which made every lifecycle call on MySQL wait for every other
// (lifecycle_mysql.go, inTuples). The plans are read from the database,
// over a table of 200 instances.
var _ = forEachDialect("planning keyed writes", func(b *board) {
	if b.dialect != sqldb.MySQL {
		return // the other dialects name keys by joining a VALUES list, planned as lookups
	}

	BeforeEach(func() {
		for i := range 100 {
			_, err := b.store.DesireLRP(b.ctx, newLRP(fmt.Sprintf("lrp-%03d", i), "apps", 2))
			Expect(err).NotTo(HaveOccurred())
		}
		b.exec("ANALYZE TABLE actual_lrps")
	})

	// keyArgs are n keys of rows that exist, the query's placeholders.
	keyArgs := func(n int) []any {
		var args []any
		for i := range n {
			args = append(args, fmt.Sprintf("lrp-%03d", 10*i), 1, "ORDINARY")
		}
		return args
	}

	DescribeTable("reaches n rows by the primary key, looking at no more than n",
		func(query func(n int) string, setArgs []any, n int) {
			rows, err := b.conn.Query("EXPLAIN "+query(n), append(setArgs, keyArgs(n)...)...)
			Expect(err).NotTo(HaveOccurred())
			defer rows.Close()
			columns, err := rows.Columns()
			Expect(err).NotTo(HaveOccurred())
			var plans []map[string]string
			for rows.Next() {
				values := make([]any, len(columns))
				for i := range values {
					values[i] = new(any)
				}
				Expect(rows.Scan(values...)).To(Succeed())
				plan := map[string]string{}
				for i, c := range columns {
					switch v := (*values[i].(*any)).(type) {
					case nil:
					case []byte:
						plan[c] = string(v)
					default:
						plan[c] = fmt.Sprint(v)
					}
				}
				plans = append(plans, plan)
			}
			Expect(rows.Err()).NotTo(HaveOccurred())
			Expect(plans).To(HaveLen(1), "one table")
			Expect(plans[0]).To(HaveKeyWithValue("key", "PRIMARY"))
			Expect(plans[0]["type"]).To(BeElementOf("const", "eq_ref", "range"), "%v", plans[0])
			Expect(plans[0]["rows"]).To(Equal(fmt.Sprint(n)), "%v", plans[0])
		},
		Entry("an update of one row", func(n int) string { return sqldb.UpdateActualByKeys(sqldb.MySQL, n) }, []any{"RUNNING"}, 1),
		Entry("an update of two rows", func(n int) string { return sqldb.UpdateActualByKeys(sqldb.MySQL, n) }, []any{"RUNNING"}, 2),
		Entry("a delete of one row", func(n int) string { return sqldb.DeleteActualByKeys(sqldb.MySQL, n) }, nil, 1),
		Entry("a delete of two rows", func(n int) string { return sqldb.DeleteActualByKeys(sqldb.MySQL, n) }, nil, 2),
		Entry("a locked read of one row", func(n int) string { return sqldb.SelectActualByKeys(sqldb.MySQL, n, true) }, nil, 1),
		Entry("a locked read of two rows", func(n int) string { return sqldb.SelectActualByKeys(sqldb.MySQL, n, true) }, nil, 2),
	)
})

// SQLite reads its keys from one JSON argument (json_each) so that the
// statement's text does not vary with their number; it must still look
// each up in the table's key index rather than scan the table.
var _ = forEachDialect("planning keyed statements on SQLite", func(b *board) {
	if b.dialect != sqldb.SQLite {
		return
	}

	BeforeEach(func() {
		for i := range 100 {
			_, err := b.store.DesireLRP(b.ctx, newLRP(fmt.Sprintf("lrp-%03d", i), "apps", 2))
			Expect(err).NotTo(HaveOccurred())
		}
		b.exec("ANALYZE")
	})

	DescribeTable("searches the key index for each key, scanning only the keys",
		func(query string, setArgs []any) {
			// The keys' argument comes first: the WITH that reads it opens
			// the statement.
			rows, err := b.conn.Query("EXPLAIN QUERY PLAN "+query, append([]any{`[["lrp-010",1,"ORDINARY"],["lrp-020",1,"ORDINARY"]]`}, setArgs...)...)
			Expect(err).NotTo(HaveOccurred())
			defer rows.Close()
			var steps []string
			for rows.Next() {
				var id, parent, unused int
				var detail string
				Expect(rows.Scan(&id, &parent, &unused, &detail)).To(Succeed())
				steps = append(steps, detail)
			}
			Expect(rows.Err()).NotTo(HaveOccurred())
			Expect(steps).To(ContainElement(MatchRegexp(`^SEARCH actual_lrps USING (INDEX|PRIMARY KEY|COVERING INDEX) .*process_guid=\? AND instance_index=\? AND presence=\?`)), "%q", steps)
			Expect(steps).NotTo(ContainElement(HavePrefix("SCAN actual_lrps")), "%q", steps)
		},
		Entry("a read", sqldb.SelectActualByKeys(sqldb.SQLite, 2, false), nil),
		Entry("an update", sqldb.UpdateActualByKeys(sqldb.SQLite, 2), []any{"RUNNING"}),
		Entry("a delete", sqldb.DeleteActualByKeys(sqldb.SQLite, 2), nil),
	)
})
