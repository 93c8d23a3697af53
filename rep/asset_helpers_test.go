package rep_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

// assetServer is a real HTTP server of assets for the executor's specs.
// It counts requests per path, can hold every answer until released, and
// can stall a path: send half of it, then wait for the client to leave.
type assetServer struct {
	url    string
	server *httptest.Server

	mu       sync.Mutex
	files    map[string][]byte
	requests map[string]int
	stalled  map[string]bool
	// gate, when set, holds every answer until it is closed.
	gate chan struct{}
	// gone gets the path of each stalled request whose client left.
	gone chan string
}

func newAssetServer() *assetServer {
	s := &assetServer{
		files:    map[string][]byte{},
		requests: map[string]int{},
		stalled:  map[string]bool{},
		gone:     make(chan string, 100),
	}
	s.server = httptest.NewServer(http.HandlerFunc(s.serve))
	DeferCleanup(s.server.Close)
	s.url = s.server.URL
	return s
}

func (s *assetServer) serve(w http.ResponseWriter, r *http.Request) {
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
	s.gone <- r.URL.Path
}

// add serves body at path and returns the asset of it, with its checksum.
func (s *assetServer) add(path string, body []byte, destination string) *models.Asset {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path] = body
	return &models.Asset{Url: s.url + path, Sha256: sha256Hex(body), Destination: destination}
}

func (s *assetServer) stall(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalled[path] = true
}

// hold makes answers wait until the returned func is called.
func (s *assetServer) hold() (release func()) {
	gate := make(chan struct{})
	s.mu.Lock()
	s.gate = gate
	s.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	DeferCleanup(release)
	return release
}

func (s *assetServer) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[path]
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// helloBinary is the built hello app.
func helloBinary() []byte {
	GinkgoHelper()
	body, err := os.ReadFile(filepath.Join(appsDir, "hello"))
	Expect(err).NotTo(HaveOccurred())
	return body
}

// archiveEntry is one entry of an archive built by a spec: a directory
// (name ending "/"), a symlink (link set), a hard link (hardLink set) or
// a file.
type archiveEntry struct {
	name     string
	mode     fs.FileMode
	body     []byte
	link     string
	hardLink string
}

func tgzOf(entries ...archiveEntry) []byte {
	GinkgoHelper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: int64(e.mode.Perm()), Typeflag: tar.TypeReg, Size: int64(len(e.body))}
		switch {
		case e.link != "":
			hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeSymlink, e.link, 0
		case e.hardLink != "":
			hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, e.hardLink, 0
		case len(e.name) > 0 && e.name[len(e.name)-1] == '/':
			hdr.Typeflag, hdr.Size = tar.TypeDir, 0
		}
		Expect(tw.WriteHeader(hdr)).To(Succeed())
		if hdr.Size > 0 {
			_, err := tw.Write(e.body)
			Expect(err).NotTo(HaveOccurred())
		}
	}
	Expect(tw.Close()).To(Succeed())
	Expect(gz.Close()).To(Succeed())
	return buf.Bytes()
}

func zipOf(entries ...archiveEntry) []byte {
	GinkgoHelper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		hdr := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		body := e.body
		switch {
		case e.link != "":
			hdr.SetMode(fs.ModeSymlink | 0o777)
			body = []byte(e.link)
		case len(e.name) > 0 && e.name[len(e.name)-1] == '/':
			hdr.SetMode(fs.ModeDir | e.mode.Perm())
		default:
			hdr.SetMode(e.mode.Perm())
		}
		w, err := zw.CreateHeader(hdr)
		Expect(err).NotTo(HaveOccurred())
		_, err = w.Write(body)
		Expect(err).NotTo(HaveOccurred())
	}
	Expect(zw.Close()).To(Succeed())
	return buf.Bytes()
}

// assetDefinition runs action (path and args) after the assets, checked
// as a process, with port 8080.
func assetDefinition(path string, args []string, assets ...*models.Asset) *models.LRPDefinition {
	return &models.LRPDefinition{
		DefinitionId:   "v1",
		Action:         &models.RunAction{Path: path, Args: args},
		Ports:          []uint32{8080},
		StartTimeoutMs: 30000,
		Assets:         assets,
	}
}
