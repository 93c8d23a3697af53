package testdb_test

import (
	"database/sql"
	"testing"

	"github.com/corkboard/corkboard/internal/testdb"
)

// Each configured dialect yields a database that accepts a write and is gone
// after Drop.
func TestCreateAndDrop(t *testing.T) {
	dialects, err := testdb.Dialects()
	if err != nil {
		t.Fatal(err)
	}
	for _, dialect := range dialects {
		t.Run(dialect, func(t *testing.T) {
			d, err := testdb.Create(dialect)
			if err != nil {
				t.Fatal(err)
			}
			conn, err := sql.Open(dialect, d.DSN)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Exec("CREATE TABLE probe (id INTEGER PRIMARY KEY)"); err != nil {
				t.Fatalf("write to fresh %s database: %v", dialect, err)
			}
			conn.Close()
			if err := d.Drop(); err != nil {
				t.Fatalf("drop: %v", err)
			}
		})
	}
}
