package sqldb_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("packed blobs", func() {
	It("packs a blob that shrinks, behind 00 02, and unpacks it to the same bytes", func() {
		def, err := proto.Marshal(&models.LRPDefinition{
			Action: &models.RunAction{Path: "/bin/app", Args: []string{"--" + string(bytes.Repeat([]byte("flag-"), 40))}},
		})
		Expect(err).NotTo(HaveOccurred())
		packed := sqldb.Pack(def)
		Expect(packed[:2]).To(Equal([]byte{0x00, 0x02}))
		Expect(len(packed)).To(BeNumerically("<", len(def)/2))
		Expect(sqldb.Unpack(packed)).To(Equal(def))
	})

	It("leaves a blob plain when packing would not shorten it, and unpack passes it through", func() {
		short := []byte{0x0a, 0x03, 'w', 'e', 'b'}
		random := make([]byte, 300)
		rand.Read(random)
		random[0] = 0x0a // a protobuf blob never starts with 0x00
		for _, plain := range [][]byte{nil, {}, short, random} {
			Expect(sqldb.Pack(plain)).To(Equal(plain))
			Expect(sqldb.Unpack(plain)).To(Equal(plain))
		}
	})

	It("unpacks a blob packed by the first version that packed: the dictionary is part of the format", func() {
		packed, err := hex.DecodeString("0002a2c46c052cc94787684140000000ffff")
		Expect(err).NotTo(HaveOccurred())
		Expect(sqldb.Unpack(packed)).To(Equal([]byte("type.googleapis.com/corkboard.models.UpdateDesiredLRPRequest annotation replaced, annotation replaced, annotation replaced")))
	})

	It("says a corrupt packed blob is corrupt", func() {
		_, err := sqldb.Unpack([]byte{0x00, 0x02, 0xff, 0xff, 0xff})
		Expect(err).To(MatchError(ContainSubstring("packed blob")))
	})
})
