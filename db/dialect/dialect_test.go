package dialect_test

import (
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/db/dialect"
)

var _ = Describe("dialect", func() {
	DescribeTable("Rebind",
		func(name dialect.Name, query, want string) {
			Expect(dialect.Rebind(name, query)).To(Equal(want))
		},
		Entry("Postgres numbers placeholders", dialect.Postgres,
			"SELECT a FROM t WHERE b = ? AND c IN (?, ?)", "SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)"),
		Entry("Postgres counts past nine", dialect.Postgres,
			"(?,?,?,?,?,?,?,?,?,?,?)", "($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11)"),
		Entry("Postgres numbers many placeholders in order", dialect.Postgres,
			strings.Repeat("?,", 1000)+"?", manyPostgres(1001)),
		Entry("Postgres without placeholders", dialect.Postgres, "SELECT 1", "SELECT 1"),
		Entry("Postgres with an empty query", dialect.Postgres, "", ""),
		Entry("Postgres keeps multi-byte text around placeholders", dialect.Postgres,
			"SELECT 'é' WHERE a = ?", "SELECT 'é' WHERE a = $1"),
		Entry("SQLite keeps ?", dialect.SQLite, "DELETE FROM t WHERE a = ? AND b = ?", "DELETE FROM t WHERE a = ? AND b = ?"),
		Entry("MySQL keeps ?", dialect.MySQL, "DELETE FROM t WHERE a = ? AND b = ?", "DELETE FROM t WHERE a = ? AND b = ?"),
		Entry("SQLite without placeholders", dialect.SQLite, "SELECT 1", "SELECT 1"),
	)

	DescribeTable("Parse",
		func(s string, want dialect.Name, wantErr string) {
			got, err := dialect.Parse(s)
			if wantErr != "" {
				Expect(err).To(MatchError(wantErr))
				Expect(dialect.Known(s)).To(BeFalse())
				return
			}
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(Equal(want))
			Expect(dialect.Known(s)).To(BeTrue())
		},
		Entry("sqlite", "sqlite", dialect.SQLite, ""),
		Entry("postgres", "postgres", dialect.Postgres, ""),
		Entry("mysql", "mysql", dialect.MySQL, ""),
		Entry("an unknown name", "oracle", dialect.Name(""),
			`unknown database dialect "oracle" (want sqlite, postgres or mysql)`),
		Entry("the empty name", "", dialect.Name(""),
			`unknown database dialect "" (want sqlite, postgres or mysql)`),
		Entry("another case", "SQLite", dialect.Name(""),
			`unknown database dialect "SQLite" (want sqlite, postgres or mysql)`),
		Entry("a driver alias", "postgresql", dialect.Name(""),
			`unknown database dialect "postgresql" (want sqlite, postgres or mysql)`),
	)

	It("keeps the names on disk and in configs", func() {
		Expect(dialect.All()).To(Equal([]dialect.Name{"sqlite", "postgres", "mysql"}))
		Expect(dialect.Choices()).To(Equal("sqlite, postgres or mysql"))
	})

	It("hands out a copy of the list", func() {
		dialect.All()[0] = "oracle"
		Expect(dialect.All()[0]).To(Equal(dialect.SQLite))
	})
})

func manyPostgres(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteByte(',')
		}
		b.WriteString("$" + strconv.Itoa(i))
	}
	return b.String()
}
