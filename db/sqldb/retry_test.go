package sqldb_test

import (
	"database/sql"
	"errors"
	"fmt"
	"net/url"

	"github.com/go-sql-driver/mysql"
	"github.com/lib/pq"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("classifying driver errors", func() {
	DescribeTable("IsRetryable",
		func(err error, retryable bool) {
			Expect(sqldb.IsRetryable(err)).To(Equal(retryable))
		},
		Entry("MySQL deadlock", &mysql.MySQLError{Number: 1213}, true),
		Entry("MySQL lock wait timeout", &mysql.MySQLError{Number: 1205}, true),
		Entry("MySQL duplicate entry", &mysql.MySQLError{Number: 1062}, false),
		Entry("MySQL syntax error", &mysql.MySQLError{Number: 1064}, false),
		Entry("Postgres serialization failure", &pq.Error{Code: "40001"}, true),
		Entry("Postgres deadlock detected", &pq.Error{Code: "40P01"}, true),
		Entry("Postgres unique violation", &pq.Error{Code: "23505"}, false),
		Entry("Postgres undefined table", &pq.Error{Code: "42P01"}, false),
		Entry("a wrapped deadlock", fmt.Errorf("insert: %w", &mysql.MySQLError{Number: 1213}), true),
		Entry("a plain error", errors.New("connection refused"), false),
		Entry("no rows", sql.ErrNoRows, false),
		Entry("a model error", models.NewError(models.Error_ResourceConflict, "x"), false),
		Entry("nil", nil, false),
	)

	DescribeTable("IsUniqueViolation",
		func(err error, unique bool) {
			Expect(sqldb.IsUniqueViolation(err)).To(Equal(unique))
		},
		Entry("MySQL duplicate entry", &mysql.MySQLError{Number: 1062}, true),
		Entry("MySQL deadlock", &mysql.MySQLError{Number: 1213}, false),
		Entry("Postgres unique violation", &pq.Error{Code: "23505"}, true),
		Entry("Postgres foreign key violation", &pq.Error{Code: "23503"}, false),
		Entry("a plain error", errors.New("duplicate"), false),
	)
})

var _ = forEachDialect("transactions", func(b *board) {
	domainCount := func() int { return b.count("SELECT COUNT(*) FROM domains") }
	insertDomain := func(tx *sql.Tx, name string) error {
		_, err := tx.Exec(dialect.Rebind(dialect.Name(b.dialect), "INSERT INTO domains (domain, expires_at) VALUES (?, 0)"), name)
		return err
	}

	It("runs a transaction again after a deadlock-ish error and commits the attempt that succeeds", func() {
		attempts := 0
		err := b.store.Transact(b.ctx, func(tx *sql.Tx) error {
			attempts++
			if err := insertDomain(tx, fmt.Sprintf("attempt-%d", attempts)); err != nil {
				return err
			}
			if attempts < 3 {
				return &pq.Error{Code: "40P01", Message: "deadlock detected"}
			}
			return nil
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(attempts).To(Equal(3))
		Expect(b.count("SELECT COUNT(*) FROM domains WHERE domain = ?", "attempt-3")).To(Equal(1))
		Expect(domainCount()).To(Equal(1), "failed attempts were rolled back")
	})

	It("gives up after the bounded attempts with a Deadlock error and nothing written", func() {
		store := newStore(b.conn, b.dialect, sqldb.WithMaxAttempts(3))
		attempts := 0
		err := store.Transact(b.ctx, func(tx *sql.Tx) error {
			attempts++
			if err := insertDomain(tx, "never"); err != nil {
				return err
			}
			return &mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock"}
		})
		Expect(err).To(HaveErrorType(models.Error_Deadlock))
		Expect(err.Error()).To(ContainSubstring("Deadlock found"))
		Expect(attempts).To(Equal(3))
		Expect(domainCount()).To(BeZero())
	})

	It("does not retry other errors, and reports them as UnknownError", func() {
		attempts := 0
		err := b.store.Transact(b.ctx, func(tx *sql.Tx) error {
			attempts++
			Expect(insertDomain(tx, "dup")).To(Succeed())
			return insertDomain(tx, "dup")
		})
		Expect(err).To(HaveErrorType(models.Error_UnknownError))
		Expect(attempts).To(Equal(1))
		Expect(domainCount()).To(BeZero())
	})

	It("passes model errors through unchanged", func() {
		err := b.store.Transact(b.ctx, func(tx *sql.Tx) error {
			return models.NewError(models.Error_ResourceConflict, "no")
		})
		Expect(err).To(HaveErrorType(models.Error_ResourceConflict))
	})

	It("recognises this database's own unique violation", func() {
		tx, err := b.conn.Begin()
		Expect(err).NotTo(HaveOccurred())
		defer tx.Rollback()
		Expect(insertDomain(tx, "dup")).To(Succeed())
		err = insertDomain(tx, "dup")
		Expect(sqldb.IsUniqueViolation(err)).To(BeTrue(), "%v", err)
		Expect(sqldb.IsRetryable(err)).To(BeFalse())
	})

	It("recognises this database's own lock conflict as retryable", func() {
		err := provokeLockConflict(b)
		Expect(err).To(HaveOccurred())
		Expect(sqldb.IsRetryable(err)).To(BeTrue(), "%v", err)
		Expect(sqldb.IsUniqueViolation(err)).To(BeFalse())
	})
})

// provokeLockConflict makes the database refuse a transaction because of
// another one: a deadlock on Postgres and MySQL, a busy database on SQLite.
func provokeLockConflict(b *board) error {
	if b.dialect == sqldb.SQLite {
		return provokeSQLiteBusy(b)
	}
	for _, name := range []string{"a", "b"} {
		b.exec("INSERT INTO domains (domain, expires_at) VALUES (?, 0)", name)
	}
	tx1, err := b.conn.BeginTx(b.ctx, nil)
	Expect(err).NotTo(HaveOccurred())
	defer tx1.Rollback()
	tx2, err := b.conn.BeginTx(b.ctx, nil)
	Expect(err).NotTo(HaveOccurred())
	defer tx2.Rollback()
	if b.dialect == sqldb.Postgres {
		// Detect the deadlock in milliseconds rather than the default second.
		for _, tx := range []*sql.Tx{tx1, tx2} {
			_, err := tx.Exec("SET LOCAL deadlock_timeout = '20ms'")
			Expect(err).NotTo(HaveOccurred())
		}
	}
	lock := func(tx *sql.Tx, name string) error {
		_, err := tx.Exec(dialect.Rebind(dialect.Name(b.dialect), "UPDATE domains SET expires_at = 1 WHERE domain = ?"), name)
		return err
	}
	Expect(lock(tx1, "a")).To(Succeed())
	Expect(lock(tx2, "b")).To(Succeed())
	// Each now waits for the other's row; the database must pick a victim.
	done := make(chan error, 1)
	go func() {
		err := lock(tx1, "b")
		if err != nil {
			tx1.Rollback()
		}
		done <- err
	}()
	err2 := lock(tx2, "a")
	if err2 != nil {
		tx2.Rollback()
	}
	err1 := <-done
	Expect((err1 == nil) != (err2 == nil)).To(BeTrue(), "exactly one victim: %v / %v", err1, err2)
	return errors.Join(err1, err2)
}

// provokeSQLiteBusy takes the write lock and asks for it again on a second
// connection that does not wait.
func provokeSQLiteBusy(b *board) error {
	path := migratedDatabaseFor(sqldb.SQLite).database.DSN
	impatient, err := sql.Open("sqlite", "file:"+path+"?"+url.Values{"_txlock": {"immediate"}}.Encode())
	Expect(err).NotTo(HaveOccurred())
	defer impatient.Close()
	impatient.SetMaxOpenConns(1)
	_, err = impatient.Exec("PRAGMA busy_timeout = 0")
	Expect(err).NotTo(HaveOccurred())

	holder, err := b.conn.BeginTx(b.ctx, nil)
	Expect(err).NotTo(HaveOccurred())
	defer holder.Rollback()
	tx, err := impatient.BeginTx(b.ctx, nil)
	if err == nil {
		tx.Rollback()
	}
	return err
}
