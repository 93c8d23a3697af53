package reptest

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"

	. "github.com/onsi/ginkgo/v2"

	"github.com/corkboard/corkboard/models"
)

// AssetServer is a real HTTP server of assets for the specs. It counts
// requests per path, can hold every answer until released, and can stall
// a path: send half of it, then wait for the client to leave.
type AssetServer struct {
	URL    string
	server *httptest.Server
	// Gone gets the path of each stalled request whose client left.
	Gone chan string

	mu       sync.Mutex
	files    map[string][]byte
	requests map[string]int
	stalled  map[string]bool
	// gate, when set, holds every answer until it is closed.
	gate chan struct{}
}

// NewAssetServer starts an asset server that closes after the spec.
func NewAssetServer() *AssetServer {
	s := &AssetServer{
		files:    map[string][]byte{},
		requests: map[string]int{},
		stalled:  map[string]bool{},
		Gone:     make(chan string, 100),
	}
	s.server = httptest.NewServer(http.HandlerFunc(s.serve))
	DeferCleanup(s.server.Close)
	s.URL = s.server.URL
	return s
}

func (s *AssetServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests[r.URL.Path]++
	body, ok := s.files[r.URL.Path]
	gate, stalled := s.gate, s.stalled[r.URL.Path]
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	if !stalled {
		_, _ = w.Write(body)
		return
	}
	_, _ = w.Write(body[:len(body)/2])
	w.(http.Flusher).Flush()
	<-r.Context().Done()
	s.Gone <- r.URL.Path
}

// Add serves body at path and returns the asset of it, with its checksum.
func (s *AssetServer) Add(path string, body []byte, destination string) *models.Asset {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path] = body
	return &models.Asset{Url: s.URL + path, Sha256: Sha256Hex(body), Destination: destination}
}

// Stall makes path's answers send half the body, then wait for the
// client to leave.
func (s *AssetServer) Stall(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalled[path] = true
}

// Hold makes answers wait until the returned func is called.
func (s *AssetServer) Hold() (release func()) {
	gate := make(chan struct{})
	s.mu.Lock()
	s.gate = gate
	s.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	DeferCleanup(release)
	return release
}

// Count is how many requests path got.
func (s *AssetServer) Count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[path]
}

func Sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
