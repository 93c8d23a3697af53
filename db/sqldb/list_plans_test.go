package sqldb_test

import (
	"database/sql"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

// A page of a list must cost its own rows, not the table's: its query is
// planned as a walk of an index in the list's order that stops after the
// page, never as a read and sort of every row after the cursor. The plans
// are read from each database itself, as the store runs the queries (in
// the dialect's page transaction). A plan with a sort is the failure this
// spec exists for: Postgres picks one on a table with few rows or stale
// statistics unless its page transaction forbids it.
var _ = forEachDialect("planning list pages", func(b *board) {
	BeforeEach(func() {
		for _, guid := range []string{"a", "b", "c", "d", "e", "f"} {
			domain := "apps"
			if guid > "c" {
				domain = "jobs"
			}
			_, err := b.store.DesireLRP(b.ctx, newLRP(guid, domain, 2))
			Expect(err).NotTo(HaveOccurred())
			b.setState(guid, 0, models.ActualLRP_RUNNING, "cell-1")
		}
	})

	// planOf returns query's plan, a line a row, and its lines that sort
	// (none when the plan reads in index order).
	planOf := func(query string, args []any, settings ...string) (plan, sorting []string) {
		GinkgoHelper()
		tx, err := b.conn.BeginTx(b.ctx, &sql.TxOptions{ReadOnly: true})
		Expect(err).NotTo(HaveOccurred())
		defer tx.Rollback()
		if planning := sqldb.PagePlanning(b.dialect); planning != "" {
			_, err := tx.ExecContext(b.ctx, planning)
			Expect(err).NotTo(HaveOccurred())
		}
		for _, setting := range settings {
			_, err := tx.ExecContext(b.ctx, setting)
			Expect(err).NotTo(HaveOccurred())
		}
		explain, sorts := "EXPLAIN ", "Sort"
		switch b.dialect {
		case sqldb.SQLite:
			explain, sorts = "EXPLAIN QUERY PLAN ", "TEMP B-TREE"
		case sqldb.MySQL:
			sorts = "filesort"
		}
		rows, err := tx.QueryContext(b.ctx, dialect.Rebind(dialect.Name(b.dialect), explain+query), args...)
		Expect(err).NotTo(HaveOccurred())
		defer rows.Close()
		columns, err := rows.Columns()
		Expect(err).NotTo(HaveOccurred())
		for rows.Next() {
			values := make([]sql.NullString, len(columns))
			dest := make([]any, len(values))
			for i := range values {
				dest[i] = &values[i]
			}
			Expect(rows.Scan(dest...)).To(Succeed())
			var line []string
			for _, v := range values {
				line = append(line, v.String)
			}
			plan = append(plan, strings.Join(line, " | "))
			if strings.Contains(plan[len(plan)-1], sorts) || strings.Contains(plan[len(plan)-1], "temporary") {
				sorting = append(sorting, plan[len(plan)-1])
			}
		}
		Expect(rows.Err()).NotTo(HaveOccurred())
		Expect(plan).NotTo(BeEmpty())
		if len(sorting) > 0 {
			AddReportEntry("plan", strings.Join(plan, "\n"))
		}
		return plan, sorting
	}
	sortsIn := func(query string, args []any) []string {
		GinkgoHelper()
		_, sorting := planOf(query, args)
		return sorting
	}

	It("reads each page of desired LRPs and scheduling infos off an index, filtered or not", func() {
		for _, filter := range []db.DesiredLRPFilter{
			{Limit: 500},
			{Limit: 500, After: "b"},
			{Limit: 500, After: "b", Domain: "jobs"},
			{Limit: 500, After: "b", ProcessGuids: []string{"f", "c", "a"}},
		} {
			query, args := sqldb.DesiredPageQuery(filter)
			Expect(sortsIn(query, args)).To(BeEmpty(), "desired LRPs %+v: %s", filter, query)
			query, args = sqldb.SchedulingInfoPageQuery(filter)
			Expect(sortsIn(query, args)).To(BeEmpty(), "scheduling infos %+v: %s", filter, query)
		}
	})

	It("reads the definitions of a page of desired LRPs from the cursor on, even in a merge join", func() {
		if b.dialect != sqldb.Postgres {
			Skip("a merge join is Postgres's plan; MySQL and SQLite look each definition up")
		}
		// Without nested loops and sorts, Postgres can only merge the
		// join, reading run_infos in key order: it must start at the
		// cursor, or each page reads every definition before it.
		for _, filter := range []db.DesiredLRPFilter{{Limit: 500, After: "b"}, {Limit: 500, After: "b", Domain: "jobs"}} {
			for _, query := range []func(db.DesiredLRPFilter) (string, []any){sqldb.DesiredPageQuery, sqldb.SchedulingInfoPageQuery} {
				q, args := query(filter)
				plan, _ := planOf(q, args, "SELECT set_config('enable_nestloop', 'off', true)")
				text := strings.Join(plan, "\n")
				Expect(text).To(ContainSubstring("Merge"), "%s", text)
				Expect(text).To(MatchRegexp(`on run_infos r .*\n\s+Index Cond: \(\(?\(?process_guid\)::text > `), "%s", text)
			}
		}
	})

	It("reads each page of actual LRPs off an index, filtered or not", func() {
		after := &models.ActualLRPKey{ProcessGuid: "b", Index: 0, Presence: models.ActualLRP_ORDINARY}
		for _, filter := range []db.ActualLRPFilter{
			{Limit: 500},
			{Limit: 500, After: after},
			{Limit: 500, After: after, Domain: "jobs"},
			{Limit: 500, After: after, CellID: "cell-1"},
			{Limit: 500, After: after, ProcessGuid: "e"},
		} {
			query, args := sqldb.ActualPageQuery(filter)
			sorts := sortsIn(query, args)
			if b.dialect == sqldb.MySQL && filter.ProcessGuid != "" {
				// MariaDB may sort one LRP's instances when it thinks
				// there are few: it reads only those (ref on the
				// primary key's guid), whatever the table holds.
				for _, line := range sorts {
					Expect(line).To(ContainSubstring("| ref | "), "actual LRPs %+v: %s", filter, query)
					Expect(line).To(ContainSubstring("| PRIMARY | "), "actual LRPs %+v: %s", filter, query)
				}
				continue
			}
			Expect(sorts).To(BeEmpty(), "actual LRPs %+v: %s", filter, query)
		}
	})

	It("reads each page of cell ids off the primary key, except on Postgres", func() {
		for i := 0; i < 5; i++ {
			Expect(b.store.RegisterCell(b.ctx, &models.Cell{
				CellId: fmt.Sprintf("cell-%d", i), Capacity: &models.CellCapacity{MemoryMb: 1, DiskMb: 1, Instances: 1},
			}, time.Minute)).To(Succeed())
		}
		plan, sorts := planOf(sqldb.CellPageQuery(b.dialect, 500), []any{"cell-1"})
		if b.dialect == sqldb.Postgres {
			// cells.cell_id has the database's collation there: the
			// page sorts the cells after the cursor (see cellPageQuery),
			// at the forbidden sort's cost, which must not make
			// Postgres compile the query.
			Expect(sorts).NotTo(BeEmpty())
			Expect(strings.Join(plan, "\n")).NotTo(ContainSubstring("JIT"))
			return
		}
		Expect(sorts).To(BeEmpty())
	})
})
