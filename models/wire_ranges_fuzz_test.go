package models_test

import (
	"math"
	"regexp"
	"strconv"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

// FuzzWireRanges runs models.CheckWireRanges on bytes as one of the
// validated messages (picked by the first byte). It must not panic; it
// must pass every message's own encoding (whatever proto.Unmarshal decodes
// from the bytes, marshalled again, is in range by construction); and a
// range refusal must name a value that indeed does not fit the kind it
// names. The committed corpus (testdata/fuzz/FuzzWireRanges) holds
// out-of-range values at the top, nested, packed, in a map entry, and
// deep nesting.
func FuzzWireRanges(f *testing.F) {
	types := validatedTypes()
	desire, err := proto.Marshal(&models.DesireLRPRequest{DesiredLrp: validDesiredLRPForFuzz()})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(typeIndex(types, "DesireLRPRequest"), desire)
	lrp := protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), 1<<32+2)
	f.Add(typeIndex(types, "DesireLRPRequest"), protowire.AppendBytes(protowire.AppendTag(desire, 1, protowire.BytesType), lrp))

	refusal := regexp.MustCompile(`^invalid value for (int32|uint32|sint32|bool|enum [\w.]+) field .+: (-?\d+)$`)
	wireTypeRefusal := regexp.MustCompile(`^invalid value for (\w+|enum [\w.]+) field .+: wire type (varint|fixed32|fixed64|bytes|group)$`)
	entryRefusal := regexp.MustCompile(`^.+\]: unknown field number \d+$`)
	f.Fuzz(func(t *testing.T, pick uint8, data []byte) {
		mt := types[int(pick)%len(types)]
		md := mt.Descriptor()
		_, checkErr := models.CheckWireRanges(data, md)

		msg := mt.New().Interface()
		// What decoded whole (nothing kept as unknown, which the board
		// refuses either way) encodes again in range.
		if proto.Unmarshal(data, msg) == nil && models.UnknownFields(msg.ProtoReflect()) == nil {
			again, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
			if err != nil {
				t.Fatalf("%s: marshal what decoded: %v", md.Name(), err)
			}
			if _, err := models.CheckWireRanges(again, md); err != nil {
				t.Fatalf("%s: refuses its own encoding %x: %v", md.Name(), again, err)
			}
		}
		if checkErr == nil {
			return
		}
		if wireTypeRefusal.MatchString(checkErr.Error()) || entryRefusal.MatchString(checkErr.Error()) {
			// A declared field in a wire type it does not take, or a
			// field a map entry does not declare: what the decoder keeps
			// as unknown or drops, named.
			return
		}
		m := refusal.FindStringSubmatch(checkErr.Error())
		if m == nil {
			// Not a range refusal: the bytes are not an encoding, which
			// proto.Unmarshal must say too.
			if proto.Unmarshal(data, mt.New().Interface()) == nil {
				t.Fatalf("%s: refused %x, which decodes, with %v", md.Name(), data, checkErr)
			}
			return
		}
		v, err := strconv.ParseInt(m[2], 10, 64)
		fits := err == nil && v >= math.MinInt32 && v <= math.MaxInt32
		switch m[1] {
		case "uint32", "sint32":
			u, err := strconv.ParseUint(m[2], 10, 64)
			fits = err == nil && u <= math.MaxUint32
		case "bool":
			fits = m[2] == "0" || m[2] == "1"
		}
		if fits {
			t.Fatalf("%s: refused a value that fits: %v", md.Name(), checkErr)
		}
	})
}

func validDesiredLRPForFuzz() *models.DesiredLRP {
	return &models.DesiredLRP{
		ProcessGuid: "web", Domain: "apps", Instances: 2,
		Definition: &models.LRPDefinition{
			Action:      &models.RunAction{Path: "/bin/web"},
			Ports:       []uint32{8080, 9090},
			HealthCheck: &models.HealthCheck{Type: models.HealthCheck_HTTP, Port: 8080, Path: "/healthz"},
		},
	}
}
