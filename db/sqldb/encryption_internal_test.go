package sqldb

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"testing"
)

// TestOpenBlobNeverPanics feeds openBlob every truncation of an envelope
// and random corruptions of it: each must be an error (or, for a blob no
// longer starting with the marker, plain bytes passed through), never a
// panic and never other plaintext.
func TestOpenBlobNeverPanics(t *testing.T) {
	keys, err := ParseEncryptionKeys(map[string]string{
		"k1": base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32)),
		"k2": base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{2}, 32)),
	}, "k1")
	if err != nil {
		t.Fatal(err)
	}
	row := runInfoRow("web", "v1")
	plain := []byte("\x0a\x02v1 the definition")
	sealed, err := keys.seal(row, plain)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := keys.openBlob(row, sealed); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("round trip: %q, %v", got, err)
	}
	for n := 0; n < len(sealed); n++ {
		if _, err := keys.openBlob(row, sealed[:n]); err == nil && n > 0 {
			t.Errorf("a blob cut to %d of %d bytes opened", n, len(sealed))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5000; i++ {
		blob := bytes.Clone(sealed)
		for j := 0; j <= rng.IntN(3); j++ {
			blob[1+rng.IntN(len(blob)-1)] ^= byte(1 + rng.IntN(255))
		}
		if got, err := keys.openBlob(row, blob); err == nil {
			t.Fatalf("a corrupted envelope opened: %x → %q", blob, got)
		}
		for _, k := range []*Keyring{nil, keys} {
			k.openBlob(blobRow{table: "operations", key: []string{"x"}}, blob[:rng.IntN(len(blob))])
		}
	}
}
