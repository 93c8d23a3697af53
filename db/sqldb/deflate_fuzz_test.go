package sqldb_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/corkboard/corkboard/db/sqldb"
)

// FuzzDeflateFixed holds the encoder to the standard library's reader:
// whatever it is given, the stream expands to it. Seeds in
// testdata/fuzz/FuzzDeflateFixed.
func FuzzDeflateFixed(f *testing.F) {
	for _, seed := range []string{"", "a", "aaaa", "annotation replaced; x", sqldb.PackDictionary, strings.Repeat("ab", 300)} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, plain []byte) {
		back, err := inflate(sqldb.DeflateFixed(plain))
		if err != nil {
			t.Fatalf("%q: the stream does not expand: %v", plain, err)
		}
		if !bytes.Equal(back, plain) {
			t.Fatalf("%q expanded to %q", plain, back)
		}
	})
}
