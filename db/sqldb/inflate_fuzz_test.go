package sqldb_test

import (
	"bytes"
	"testing"

	"github.com/corkboard/corkboard/db/sqldb"
)

// FuzzInflateFixed holds the reader to the standard library's: any stream
// it says it expanded, the standard library's reader expands to the same
// bytes; and every stream the board's encoder writes, it expands itself,
// back to what was packed. Seeds in testdata/fuzz/FuzzInflateFixed.
func FuzzInflateFixed(f *testing.F) {
	for _, seed := range [][]byte{nil, []byte("a"), {0x4b, 0x04, 0x02, 0x00}, sqldb.DeflateFixed(definitionLike), dictionary} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if out, ok := sqldb.InflateFixed(dictionary, data, 1<<20); ok {
			std, err := inflate(data)
			if err != nil {
				t.Fatalf("%x: expanded to %q, the standard library's reader fails: %v", data, out, err)
			}
			if !bytes.Equal(out, std) {
				t.Fatalf("%x: expanded to %q, the standard library's reader to %q", data, out, std)
			}
		}
		stream := sqldb.DeflateFixed(data)
		out, ok := sqldb.InflateFixed(dictionary, stream, len(data))
		if !ok || !bytes.Equal(out, data) {
			t.Fatalf("%q: the board's own stream came back as %q (ok %v)", data, out, ok)
		}
	})
}
