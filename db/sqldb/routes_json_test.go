package sqldb_test

import (
	"fmt"
	"math/rand"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/db/sqldb"
)

// decodeRoutes reads stored routes with a fast path and protojson behind
// it; whatever the text, its answer must be protojson's.
var _ = Describe("decoding stored routes", func() {
	expectAsProtojson := func(text string) {
		want := &structpb.Struct{}
		wantErr := protojson.Unmarshal([]byte(text), want)
		got, err := sqldb.DecodeRoutes(text)
		if wantErr != nil {
			Expect(err).To(HaveOccurred(), "protojson refuses %q: %v", text, wantErr)
			return
		}
		Expect(err).NotTo(HaveOccurred(), "protojson reads %q", text)
		Expect(proto.Equal(got, want)).To(BeTrue(), "%q: got %v, protojson %v", text, got, want)
		expectProtobufAsParsed(text)
	}

	DescribeTable("answers as protojson does",
		func(text string) {
			expectAsProtojson(text)
			expectProtobufAsParsed(text)
		},
		Entry("a cf-router route", `{"cf-router":[{"hostnames":["web.example.com"],"port":8080}]}`),
		Entry("spaces and newlines", " {\n \"a\" : [ 1 , 2.5 ,-3e2, 0.5E-1 ] ,\t\"b\":{ } }\r\n"),
		Entry("true, false, null and empty containers", `{"t":true,"f":false,"n":null,"o":{},"l":[]}`),
		Entry("unicode", `{"ルート":"héllo ✓ 🚀"}`),
		Entry("negative zero", `{"z":-0}`),
		Entry("an escaped quote", `{"a":"say \"hi\""}`),
		Entry("a unicode escape and a surrogate pair", `{"a":"\u00e9\ud83d\ude80"}`),
		Entry("an escaped slash", `{"a":"a\/b"}`),
		Entry("an empty object", `{}`),
		Entry("nested deeper than the fast path goes", strings.Repeat(`{"a":`, 40)+"1"+strings.Repeat("}", 40)),
		Entry("a repeated key", `{"a":1,"a":2}`),
		Entry("nine keys", `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":{"a":[]}}`),
		Entry("a key repeated after eight others", `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"c":0}`),
		Entry("a number out of range", `{"a":1e400}`),
		Entry("a leading zero", `{"a":01}`),
		Entry("a bare dot", `{"a":1.}`),
		Entry("a plus sign", `{"a":+1}`),
		Entry("a control character in a string", "{\"a\":\"x\ty\"}"),
		Entry("invalid UTF-8", "{\"a\":\"\xff\"}"),
		Entry("a trailing comma", `{"a":1,}`),
		Entry("text after the object", `{"a":1} x`),
		Entry("a list at the top", `[1]`),
		Entry("a misspelled literal", `{"a":tru}`),
		Entry("an unterminated string", `{"a":"x`),
		Entry("nothing", ` `),
	)

	It("reads the routes protojson writes, for random routes", func() {
		random := rand.New(rand.NewSource(GinkgoRandomSeed()))
		for i := range 500 {
			routes := randomStruct(random, 3)
			raw, err := protojson.Marshal(routes)
			Expect(err).NotTo(HaveOccurred())
			expectAsProtojson(string(raw))
			if i%50 == 0 {
				indented, err := protojson.MarshalOptions{Multiline: true}.Marshal(routes)
				Expect(err).NotTo(HaveOccurred())
				expectAsProtojson(string(indented))
			}
		}
	})

	It("takes the fast path for routes as protojson writes them", func() {
		routes, err := structpb.NewStruct(map[string]any{
			"cf-router":  []any{map[string]any{"hostnames": []any{"web.example.com", "www.example.com"}, "port": 8080}},
			"tcp-router": []any{map[string]any{"external_port": 61000, "container_port": 5222, "enabled": true, "group": nil}},
		})
		Expect(err).NotTo(HaveOccurred())
		raw, err := protojson.Marshal(routes)
		Expect(err).NotTo(HaveOccurred())
		parsed, ok := sqldb.ParseRoutes(string(raw))
		Expect(ok).To(BeTrue(), "%s", raw)
		Expect(proto.Equal(parsed, routes)).To(BeTrue())
	})
})

// expectProtobufAsParsed holds routesProtobuf to parseRoutes: it writes
// for the texts parseRoutes reads, the Struct parseRoutes reads, and
// leaves to protojson the texts parseRoutes leaves.
func expectProtobufAsParsed(text string) {
	parsed, ok := sqldb.ParseRoutes(text)
	encoded, encodedOK := sqldb.RoutesProtobuf(text)
	Expect(encodedOK).To(Equal(ok), "%q: parseRoutes %v, routesProtobuf %v", text, ok, encodedOK)
	if !ok {
		return
	}
	read := &structpb.Struct{}
	Expect(proto.Unmarshal(encoded, read)).To(Succeed(), "%q", text)
	Expect(proto.Equal(read, parsed)).To(BeTrue(), "%q: written %v, parsed %v", text, read, parsed)
}

// randomStruct is a Struct of random keys and values, strings drawn to
// include quotes, backslashes, control characters and non-ASCII text.
func randomStruct(random *rand.Rand, depth int) *structpb.Struct {
	fields := map[string]*structpb.Value{}
	for range random.Intn(4) {
		fields[randomText(random)] = randomValue(random, depth)
	}
	return &structpb.Struct{Fields: fields}
}

func randomValue(random *rand.Rand, depth int) *structpb.Value {
	kind := random.Intn(7)
	if depth == 0 {
		kind = random.Intn(5)
	}
	switch kind {
	case 0:
		return structpb.NewNullValue()
	case 1:
		return structpb.NewBoolValue(random.Intn(2) == 0)
	case 2:
		numbers := []float64{0, 1, -1, 8080, 61000.5, 1e-7, -2.5e300, float64(random.Int63()), random.NormFloat64() * 1e6}
		return structpb.NewNumberValue(numbers[random.Intn(len(numbers))])
	case 3, 4:
		return structpb.NewStringValue(randomText(random))
	case 5:
		return structpb.NewStructValue(randomStruct(random, depth-1))
	}
	list := &structpb.ListValue{}
	for range random.Intn(4) {
		list.Values = append(list.Values, randomValue(random, depth-1))
	}
	return structpb.NewListValue(list)
}

func randomText(random *rand.Rand) string {
	pieces := []string{"web", ".example.com", "port", `"`, `\`, "/", "\n", "\t", "\x01", "é", "ルート", "🚀", " ", "<&>", fmt.Sprint(random.Intn(100))}
	var b strings.Builder
	for range random.Intn(5) {
		b.WriteString(pieces[random.Intn(len(pieces))])
	}
	return b.String()
}
