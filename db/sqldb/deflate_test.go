package sqldb_test

import (
	"bytes"
	"compress/flate"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/db/sqldb"
)

// inflate expands raw DEFLATE with the packing dictionary using the
// standard library's reader: the oracle the board's own encoder is held to.
func inflate(stream []byte) ([]byte, error) {
	var out bytes.Buffer
	_, err := out.ReadFrom(flate.NewReaderDict(bytes.NewReader(stream), []byte(sqldb.PackDictionary)))
	return out.Bytes(), err
}

var _ = Describe("the fixed-code DEFLATE encoder", func() {
	roundTrips := func(plain []byte) {
		GinkgoHelper()
		stream := sqldb.DeflateFixed(plain)
		back, err := inflate(stream)
		Expect(err).NotTo(HaveOccurred())
		Expect(bytes.Equal(back, plain)).To(BeTrue(), "%d bytes came back as %d, differing", len(plain), len(back))
	}

	It("writes the worked example's stream: a match into the dictionary, a literal, end of block", func() {
		plain := []byte("annotation replaced; x")
		stream := sqldb.DeflateFixed(plain)
		Expect(stream).To(HaveLen(5))
		Expect(inflate(stream)).To(Equal(plain))
	})

	It("round-trips what the standard library's reader expands, for inputs of every shape (seeded)", func() {
		seed := uint64(GinkgoRandomSeed())
		r := rand.New(rand.NewPCG(seed, seed^0x5eed))
		words := strings.Fields(sqldb.PackDictionary + " web api worker --port 8080 /bin/app VAR_ value-of")
		shapes := map[string]func(n int) []byte{
			"random bytes": func(n int) []byte {
				b := make([]byte, n)
				for i := range b {
					b[i] = byte(r.Uint32())
				}
				return b
			},
			"four letters": func(n int) []byte {
				b := make([]byte, n)
				for i := range b {
					b[i] = "acgt"[r.IntN(4)]
				}
				return b
			},
			"one byte repeated (distance 1, longest matches)": func(n int) []byte {
				return bytes.Repeat([]byte{byte(r.Uint32())}, n)
			},
			"the dictionary's words": func(n int) []byte {
				var b []byte
				for len(b) < n {
					b = append(b, words[r.IntN(len(words))]...)
					b = append(b, ' ')
				}
				return b[:n]
			},
			"a block repeated beyond the 32 KB window": func(n int) []byte {
				block := make([]byte, 1+r.IntN(40000))
				for i := range block {
					block[i] = byte(r.Uint32())
				}
				var b []byte
				for len(b) < n {
					b = append(b, block...)
				}
				return b[:n]
			},
		}
		for name, shape := range shapes {
			for _, n := range []int{0, 1, 2, 3, 4, 257, 258, 259, 1000, 70000, 1 << 20} {
				By(fmt.Sprintf("%s, %d bytes", name, n))
				roundTrips(shape(n))
			}
			for range 50 {
				roundTrips(shape(r.IntN(5000)))
			}
		}
	})

	It("packs the board's blobs no larger than the standard library's writer did", func() {
		for _, plain := range [][]byte{
			[]byte(strings.Repeat("type.googleapis.com/corkboard.models.UpdateDesiredLRPRequest annotation replaced, ", 3)),
			[]byte(strings.Repeat("VAR_1=value-of-variable-number-1 ", 20)),
		} {
			var std bytes.Buffer
			w, err := flate.NewWriterDict(&std, flate.DefaultCompression, []byte(sqldb.PackDictionary))
			Expect(err).NotTo(HaveOccurred())
			_, err = w.Write(plain)
			Expect(err).NotTo(HaveOccurred())
			Expect(w.Close()).To(Succeed())
			Expect(len(sqldb.DeflateFixed(plain))).To(BeNumerically("<=", std.Len()))
		}
	})
})

// BenchmarkPack is what packing one of the board's blobs costs, and its
// size: an annotation update's parameters (about 100 bytes) and a
// definition-sized blob (about 1 KB).
func BenchmarkPack(b *testing.B) {
	for _, plain := range [][]byte{
		[]byte("\n<type.googleapis.com/corkboard.models.UpdateDesiredLRPRequest\x12\x1a\n\x0bpeer-000123\x12\x0b\x1a\tnotes 77"),
		[]byte(strings.Repeat("VAR_1=value-of-variable-number-1 --port 8080 /bin/app ", 20)),
	} {
		b.Run(fmt.Sprintf("%d bytes", len(plain)), func(b *testing.B) {
			var packed []byte
			for b.Loop() {
				packed = sqldb.Pack(plain)
			}
			b.ReportMetric(float64(len(packed)), "packed-bytes")
		})
	}
}
