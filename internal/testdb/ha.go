package testdb

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// HACluster is a replicated database with automatic failover behind one
// address: what the HA scenarios run boards on. Everything it starts runs
// on free loopback ports in temporary directories (the front also on the
// addresses it was started with); Close stops all of it.
type HACluster interface {
	// Dialect is testdb.MySQL or testdb.Postgres (the board's database_driver).
	Dialect() string
	// AdminDSN reaches the current writer through the front (HAProxy), in the
	// form testdb.CreateOn(Dialect(), AdminDSN()) accepts.
	AdminDSN() string
	// Writer names the node taking writes now.
	Writer() (string, error)
	// KillWriter SIGKILLs the node taking writes and returns its name.
	KillWriter() (string, error)
	// Restart starts a killed node again; it rejoins as a replica (Galera: IST/SST).
	Restart(node string) error
	// WaitForWriter blocks until a write through AdminDSN succeeds (or ctx ends)
	// and returns how long it waited.
	WaitForWriter(ctx context.Context) (time.Duration, error)
	Close() error
}

// frontBinds is HAProxy's bind lines for a front on port at 127.0.0.1
// and at each of also, each line indented by indent.
func frontBinds(port int, also []string, indent string) string {
	var b strings.Builder
	for _, addr := range append([]string{"127.0.0.1"}, also...) {
		fmt.Fprintf(&b, "%sbind %s\n", indent, net.JoinHostPort(addr, strconv.Itoa(port)))
	}
	return b.String()
}
