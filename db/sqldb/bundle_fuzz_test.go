package sqldb_test

import (
	"bytes"
	"testing"

	"github.com/corkboard/corkboard/db/sqldb"
)

// FuzzReadBundle holds the reader of a bundle's blob to its writer: any
// blob it accepts as count events is exactly what AppendBundle writes for
// those events, so two different blobs never read as the same events;
// and it never panics or reads past the blob. Seeds in
// testdata/fuzz/FuzzReadBundle.
func FuzzReadBundle(f *testing.F) {
	f.Add(sqldb.AppendBundle(nil, []string{"desired_lrp_changed", "operation_changed"}, [][]byte{[]byte("a"), nil}), 2)
	f.Add([]byte{0x01, 'x', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 2)
	f.Add([]byte{}, 2)
	f.Fuzz(func(t *testing.T, blob []byte, count int) {
		types, raws, err := sqldb.ReadBundle(blob, count)
		if err != nil {
			return
		}
		if len(types) != count || len(raws) != count {
			t.Fatalf("%x as %d events: read %d types and %d payloads", blob, count, len(types), len(raws))
		}
		if again := sqldb.AppendBundle(nil, types, raws); !bytes.Equal(again, blob) {
			t.Fatalf("%x read as %q %q, which is written %x", blob, types, raws, again)
		}
	})
}
