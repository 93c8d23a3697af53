package migrations

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = DescribeTable("splitStatements",
	func(text string, want []string) {
		Expect(splitStatements(text)).To(Equal(want))
	},
	Entry("two statements", "CREATE TABLE a (x INT);\nCREATE TABLE b (y INT);\n",
		[]string{"CREATE TABLE a (x INT)", "CREATE TABLE b (y INT)"}),
	Entry("a last statement without a semicolon", "SELECT 1;\nSELECT 2", []string{"SELECT 1", "SELECT 2"}),
	Entry("semicolons inside quotes", `INSERT INTO t VALUES ('a;b', "c;d", `+"`e;f`"+`);`,
		[]string{`INSERT INTO t VALUES ('a;b', "c;d", ` + "`e;f`" + `)`}),
	Entry("a doubled quote", "INSERT INTO t VALUES ('it''s; fine');", []string{"INSERT INTO t VALUES ('it''s; fine')"}),
	Entry("a backslash-escaped quote", `INSERT INTO t VALUES ('a\'; b');`, []string{`INSERT INTO t VALUES ('a\'; b')`}),
	Entry("semicolons in comments", "-- one; two\nSELECT 1; /* three; */ SELECT 2;",
		[]string{"-- one; two\nSELECT 1", "/* three; */ SELECT 2"}),
	Entry("a comment-only file", "-- nothing here;\n/* nor; here */\n", nil),
	Entry("an empty file", "", nil),
)

var _ = Describe("splitStatements on bad input", func() {
	It("reports an unterminated quote", func() {
		_, err := splitStatements("SELECT 'abc;")
		Expect(err).To(MatchError("unterminated ' quote"))
	})
	It("reports an unterminated comment", func() {
		_, err := splitStatements("SELECT 1; /* abc")
		Expect(err).To(MatchError("unterminated /* comment"))
	})
})
