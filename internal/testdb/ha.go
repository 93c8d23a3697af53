package testdb

import (
	"context"
	"time"
)

// HACluster is a replicated database with automatic failover behind one
// address: what the HA scenarios run boards on. Everything it starts runs
// on free loopback ports in temporary directories; Close stops all of it.
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
