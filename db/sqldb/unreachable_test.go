package sqldb_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/go-sql-driver/mysql"
	"github.com/lib/pq"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/db/sqldb"
)

var _ = Describe("telling an unreachable database from a refused statement", func() {
	DescribeTable("isUnreachable",
		func(err error, unreachable bool) {
			Expect(sqldb.IsUnreachable(err)).To(Equal(unreachable))
			Expect(sqldb.IsUnreachable(fmt.Errorf("claim: %w", err))).To(Equal(unreachable), "wrapped")
		},
		Entry("connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, true),
		Entry("a read that timed out (WithIOTimeout)", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, true),
		Entry("a connection reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true),
		Entry("the server closed the connection", io.ErrUnexpectedEOF, true),
		Entry("a connection the driver gave up on", driver.ErrBadConn, true),
		Entry("MySQL's invalid connection", mysql.ErrInvalidConn, true),
		Entry("the call's deadline passed", context.DeadlineExceeded, true),
		Entry("Postgres shutting down", &pq.Error{Code: "57P01"}, true),
		Entry("Postgres starting up", &pq.Error{Code: "57P03"}, true),
		Entry("Postgres connection failure", &pq.Error{Code: "08006"}, true),
		Entry("MySQL shutting down", &mysql.MySQLError{Number: 1053}, true),
		Entry("a unique violation", &pq.Error{Code: "23505"}, false),
		Entry("a MySQL duplicate", &mysql.MySQLError{Number: 1062}, false),
		Entry("the caller went away", context.Canceled, false),
		Entry("anything else", errors.New("syntax error"), false),
	)
})
