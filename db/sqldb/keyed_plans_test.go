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
