package sqldb

import (
	"fmt"
	"testing"
	"unsafe"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

// TestListStrings holds an instance list's string keeping to what it
// promises: equal strings for the columns' bytes, one copy of a value
// repeated (the row before's guid and definition, a kept domain), and no
// more than maxListStrings values kept.
func TestListStrings(t *testing.T) {
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	var l listStrings

	guid, def := l.lrp([]byte("web"), []byte("d1"))
	guid2, def2 := l.lrp([]byte("web"), []byte("d1"))
	if guid != "web" || def != "d1" || !same(guid, guid2) || !same(def, def2) {
		t.Fatalf("the row before's guid and definition: got %q %q then %q %q, not shared", guid, def, guid2, def2)
	}
	if g, d := l.lrp([]byte("api"), []byte("d1")); g != "api" || d != "d1" || !same(d, def) {
		t.Fatalf("a new guid with the same definition: got %q %q", g, d)
	}

	if s := l.shared(nil); s != "" {
		t.Fatalf("no bytes: got %q", s)
	}
	a, b := l.shared([]byte("apps")), l.shared([]byte("apps"))
	if a != "apps" || !same(a, b) {
		t.Fatalf("a repeated domain: got %q and %q, not shared", a, b)
	}
	for i := range maxListStrings + 10 {
		want := fmt.Sprintf("reason %d", i)
		if got := l.shared([]byte(want)); got != want {
			t.Fatalf("value %d: got %q", i, got)
		}
	}
	if len(l.kept) != maxListStrings {
		t.Fatalf("kept %d values, want at most %d", len(l.kept), maxListStrings)
	}
}

// TestRoutePortsMemo: a run of rows storing the same route ports decodes
// them once; other bytes decode anew, and a corrupt blob is an error that
// leaves the next blob decoded right.
func TestRoutePortsMemo(t *testing.T) {
	blob := func(route string) []byte {
		b, err := proto.Marshal(&models.RoutePorts{Ports: []*models.RoutePort{{Router: "http", Route: route, ContainerPort: 8080}}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var m routePortsMemo
	web := blob("web.example.com")
	first, err := m.decode(web)
	if err != nil || len(first) != 1 || first[0].Route != "web.example.com" {
		t.Fatalf("first decode: %v, %v", first, err)
	}
	again, err := m.decode(append([]byte(nil), web...))
	if err != nil || &again[0] != &first[0] {
		t.Fatalf("the same bytes decoded again: %v, %v", again, err)
	}
	if _, err := m.decode([]byte{0xff, 0xff}); err == nil {
		t.Fatal("a corrupt blob decoded")
	}
	api, err := m.decode(blob("api.example.com"))
	if err != nil || len(api) != 1 || api[0].Route != "api.example.com" {
		t.Fatalf("other bytes: %v, %v", api, err)
	}
}
