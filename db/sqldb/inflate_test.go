package sqldb_test

import (
	"bytes"
	"compress/flate"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/db/sqldb"
)

var dictionary = []byte(sqldb.PackDictionary)

// standardDeflate is what the standard library's writer makes of plain
// with the packed format's dictionary: blobs packed before the board had
// its own encoder, which may hold dynamic codes or several blocks.
func standardDeflate(plain []byte, level int) []byte {
	var out bytes.Buffer
	w, err := flate.NewWriterDict(&out, level, dictionary)
	Expect(err).NotTo(HaveOccurred())
	_, err = w.Write(plain)
	Expect(err).NotTo(HaveOccurred())
	Expect(w.Close()).To(Succeed())
	return out.Bytes()
}

// definitionLike is a blob shaped as the board's definitions are: an
// environment and arguments that repeat themselves.
var definitionLike = []byte(strings.Repeat("VAR_1=value-of-variable-number-1 --port 8080 /bin/app ", 20))

var _ = Describe("the fixed-code DEFLATE reader", func() {
	It("expands the worked example: a literal, a match of 3 at distance 1, end of block", func() {
		out, ok := sqldb.InflateFixed([]byte("ab"), []byte{0x4b, 0x04, 0x02, 0x00}, 100)
		Expect(ok).To(BeTrue())
		Expect(string(out)).To(Equal("aaaa"))
	})

	It("expands every blob the board's encoder writes, as the standard library's reader does", func() {
		for _, plain := range [][]byte{
			nil, []byte("a"), []byte("annotation replaced; x"), dictionary, definitionLike,
			[]byte(strings.Repeat("ab", 40_000)), // matches farther back than the dictionary, past 32 KB out
		} {
			stream := sqldb.DeflateFixed(plain)
			out, ok := sqldb.InflateFixed(dictionary, stream, len(plain))
			Expect(ok).To(BeTrue(), "%d bytes", len(plain))
			Expect(bytes.Equal(out, plain)).To(BeTrue(), "%d bytes", len(plain))
			std, err := inflate(stream)
			Expect(err).NotTo(HaveOccurred())
			Expect(bytes.Equal(out, std)).To(BeTrue())
		}
	})

	DescribeTable("leaves to the standard library's reader what it does not read itself",
		func(stream []byte, limit int) {
			_, ok := sqldb.InflateFixed(dictionary, stream, limit)
			Expect(ok).To(BeFalse())
		},
		Entry("dynamic codes (the standard library's writer)", standardDeflate(definitionLike, flate.BestCompression), 1<<20),
		Entry("a stored block", standardDeflate(definitionLike, flate.NoCompression), 1<<20),
		Entry("nothing", []byte{}, 1<<20),
		Entry("a fixed block that is not the last (BFINAL 0)", []byte{0x02}, 1<<20),
		Entry("a stream cut before its end of block", sqldb.DeflateFixed(definitionLike)[:20], 1<<20),
		Entry("more out than the limit", sqldb.DeflateFixed(definitionLike), len(definitionLike)-1),
		// 'a', then length 3 at distance 30 (code 29 is 24,577+, past
		// everything): the header, 'a', symbol 257, distance code 29.
		Entry("a distance past the dictionary", sqldbStream("011"+"10010001"+"0000001"+"11101"+"0000000000000"+"0000000"), 1<<20),
		Entry("distance code 30, which DEFLATE does not define", sqldbStream("011"+"0000001"+"11110"+"0000000"), 1<<20),
		Entry("length symbol 286, which DEFLATE does not define", sqldbStream("011"+"11000110"+"0000000"), 1<<20),
	)

	It("answers as the standard library for blobs it leaves to it: unpack reads the old blobs, and refuses corrupt ones", func() {
		plain := definitionLike
		old := append([]byte{0x00, 0x02}, standardDeflate(plain, flate.BestCompression)...)
		out, err := sqldb.Unpack(old)
		Expect(err).NotTo(HaveOccurred())
		Expect(bytes.Equal(out, plain)).To(BeTrue())

		cut := append([]byte{0x00, 0x02}, sqldb.DeflateFixed(plain)[:20]...)
		_, err = sqldb.Unpack(cut)
		Expect(err).To(MatchError(ContainSubstring("packed blob")))
	})
})

// sqldbStream packs bits written in stream order (each Huffman code
// most significant bit first, as RFC 1951 writes them; the 3 header bits
// BFINAL then BTYPE least significant first) into bytes, least
// significant bit first, padded with zeros.
func sqldbStream(bits string) []byte {
	out := make([]byte, (len(bits)+7)/8)
	for i, b := range bits {
		if b == '1' {
			out[i/8] |= 1 << (i % 8)
		}
	}
	return out
}

// BenchmarkUnpack is what unpacking one of the board's blobs costs, by
// the fixed-code reader and by the standard library's: a definition as
// bbs-load peer desires them (peerShapedLRP's), a repetitive one, and an
// event-sized blob.
func BenchmarkUnpack(b *testing.B) {
	event := []byte("\n\x8a\x01\n\x0bpeer-000123\x10\x01\x1a\x08ORDINARY\"\x24b7f43632-8467-479d-84ac-aa957f5cd77c*\x09cell-0094")
	event = append(event, event...)
	peer, err := proto.Marshal(peerShapedLRP("peer-1").Definition)
	if err != nil {
		b.Fatal(err)
	}
	for _, plain := range [][]byte{peer, definitionLike, event} {
		blob := sqldb.Pack(plain)
		for _, reader := range []struct {
			name   string
			unpack func([]byte) ([]byte, error)
		}{{"fixed-code reader", sqldb.Unpack}, {"standard library", sqldb.UnpackStandard}} {
			b.Run(fmt.Sprintf("%d of %d bytes, %s", len(blob), len(plain), reader.name), func(b *testing.B) {
				for b.Loop() {
					if _, err := reader.unpack(blob); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
