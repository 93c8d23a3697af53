package sqldb

import (
	"context"
	"database/sql"
	"net"
	"time"

	"github.com/lib/pq"
)

// openPool opens the database/sql pool. With an I/O timeout, Postgres
// connections are dialled through deadlineDialer; MySQL's driver takes
// the timeout from its DSN (mysqlDSN) and SQLite has no network.
func openPool(dialect, dsn string, ioTimeout time.Duration) (*sql.DB, error) {
	if dialect != Postgres || ioTimeout <= 0 {
		return sql.Open(dialect, dsn)
	}
	connector, err := pq.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	connector.Dialer(deadlineDialer{timeout: ioTimeout})
	return sql.OpenDB(connector), nil
}

// deadlineDialer dials Postgres connections whose every read and write
// must complete within timeout (see WithIOTimeout).
type deadlineDialer struct {
	timeout time.Duration
}

func (d deadlineDialer) Dial(network, address string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, address)
}

func (d deadlineDialer) DialTimeout(network, address string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), min(timeout, d.timeout))
	defer cancel()
	return d.DialContext(ctx, network, address)
}

func (d deadlineDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	dialer := net.Dialer{Timeout: d.timeout, KeepAlive: 30 * time.Second}
	conn, err := dialer.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return deadlineConn{Conn: conn, timeout: d.timeout}, nil
}

// deadlineConn moves the connection's deadline before each read and
// write, so that each must complete within timeout. An idle pooled
// connection is not reading and has no deadline running.
type deadlineConn struct {
	net.Conn
	timeout time.Duration
}

func (c deadlineConn) Read(p []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

func (c deadlineConn) Write(p []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}
