package sqldb_test

import (
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/db/sqldb"
)

// FuzzRoutesJSON holds the stored-routes decoder to its promise: whatever
// the text, its answer is protojson's — the same routes when protojson
// reads them, an error when protojson refuses — the fast path never
// claims a text protojson would read otherwise, and routesProtobuf takes
// the texts the fast path takes and writes the Struct it reads. Seeds in
// testdata/fuzz/FuzzRoutesJSON: routes as the board stores them, and the
// texts the fast path must leave to protojson.
func FuzzRoutesJSON(f *testing.F) {
	for _, seed := range []string{
		`{"cf-router":[{"hostnames":["web.example.com"],"port":8080}]}`,
		`{"tcp-router":[{"external_port":61000,"container_port":5222}],"http":{"a":[1,2.5,-3e2,true,false,null]}}`,
		`{"a":"say \"hi\"","b":"\u00e9\ud83d\ude80"}`,
		`{"a":1,"a":2}`,
		`{"a":1e400}`,
		`{"a":01}`,
		"{\"a\":\"\xff\"}",
		`{"a":1} x`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, err := sqldb.DecodeRoutes(text)
		if text == "" {
			if got != nil || err != nil {
				t.Fatalf("empty text: got %v, %v; want no routes and no error", got, err)
			}
			return
		}
		want := &structpb.Struct{}
		wantErr := protojson.Unmarshal([]byte(text), want)
		switch {
		case wantErr != nil && err == nil:
			t.Fatalf("%q: protojson refuses it (%v), the decoder read %v", text, wantErr, got)
		case wantErr == nil && err != nil:
			t.Fatalf("%q: protojson reads %v, the decoder refused: %v", text, want, err)
		case wantErr == nil && !proto.Equal(got, want):
			t.Fatalf("%q: the decoder read %v, protojson %v", text, got, want)
		}
		fast, ok := sqldb.ParseRoutes(text)
		if ok {
			if wantErr != nil || !proto.Equal(fast, want) {
				t.Fatalf("%q: the fast path read %v, protojson %v (%v)", text, fast, want, wantErr)
			}
		}
		encoded, encodedOK := sqldb.RoutesProtobuf(text)
		if encodedOK != ok {
			t.Fatalf("%q: the fast path took it %v, routesProtobuf %v", text, ok, encodedOK)
		}
		if ok {
			read := &structpb.Struct{}
			if err := proto.Unmarshal(encoded, read); err != nil || !proto.Equal(read, fast) {
				t.Fatalf("%q: routesProtobuf wrote %v (%v), the fast path read %v", text, read, err, fast)
			}
		}
	})
}
