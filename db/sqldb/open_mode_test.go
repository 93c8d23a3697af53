package sqldb_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/db/sqldb"
)

var _ = Describe("SQLite file modes", func() {
	// Issue 26: the database file was 0644, readable by every user of the
	// machine. The umask is cleared so that only the board's own modes
	// count.
	var oldMask int
	BeforeEach(func() {
		oldMask = syscall.Umask(0)
		DeferCleanup(func() { syscall.Umask(oldMask) })
	})

	modeOf := func(path string) os.FileMode {
		GinkgoHelper()
		info, err := os.Stat(path)
		Expect(err).NotTo(HaveOccurred())
		return info.Mode().Perm()
	}
	write := func(path string) {
		GinkgoHelper()
		conn, err := sqldb.Open(context.Background(), sqldb.SQLite, path)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(conn.Close)
		_, err = conn.Exec(`CREATE TABLE IF NOT EXISTS t (x INTEGER)`)
		Expect(err).NotTo(HaveOccurred())
		_, err = conn.Exec(`INSERT INTO t VALUES (1)`)
		Expect(err).NotTo(HaveOccurred())
	}

	It("creates the folder 0700 and the database, its -wal and -shm 0600", func() {
		path := filepath.Join(GinkgoT().TempDir(), "data", "board.db")
		write(path)
		Expect(modeOf(filepath.Dir(path))).To(Equal(os.FileMode(0o700)))
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			Expect(modeOf(p)).To(Equal(os.FileMode(0o600)), "%s", filepath.Base(p))
		}
	})

	It("brings the files of an older board down to 0600", func() {
		path := filepath.Join(GinkgoT().TempDir(), "board.db")
		write(path)
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			Expect(os.Chmod(p, 0o644)).To(Succeed())
		}
		write(path)
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			Expect(modeOf(p)).To(Equal(os.FileMode(0o600)), "%s", filepath.Base(p))
		}
	})
})
