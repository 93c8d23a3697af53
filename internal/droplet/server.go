package droplet

import (
	"fmt"
	"maps"
	"net/http"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
)

// Server serves a directory of droplets (and anything else in it) over
// HTTP and counts the requests for each file, so a test can tell how many
// downloads a desire or a rollout caused — one per cell with a cache, one
// per instance without. Use it with httptest.NewServer(droplet.NewServer(dir))
// or any http.Server.
type Server struct {
	files http.Handler

	// Logf, when set (before serving), is called once per request with a
	// line saying what was asked and answered.
	Logf func(format string, args ...any)

	mu     sync.Mutex
	counts map[string]int
}

// NewServer serves dir. Paths are confined to it (os.DirFS refuses
// "..").
func NewServer(dir string) *Server {
	return &Server{
		files:  http.FileServerFS(os.DirFS(dir)),
		counts: map[string]int{},
	}
}

// ServeHTTP answers GET and HEAD from the directory; anything else is 405.
// Every request is counted under its file name, found or not.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	name := requestName(r.URL.Path)
	s.mu.Lock()
	s.counts[name]++
	s.mu.Unlock()

	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		rec.Header().Set("Allow", "GET, HEAD")
		http.Error(rec, "only GET and HEAD", http.StatusMethodNotAllowed)
	} else {
		s.files.ServeHTTP(rec, r)
	}
	if s.Logf != nil {
		s.Logf("%s %s %s: %d, %d bytes in %s", r.RemoteAddr, r.Method, r.URL.Path,
			rec.status, rec.bytes, time.Since(start).Round(time.Microsecond))
	}
}

// Requests is how many requests asked for name, a path relative to the
// served directory ("hello-v1.tgz", "lrps/hello.json").
func (s *Server) Requests(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[requestName(name)]
}

// Counts is a copy of every file's request count, by name.
func (s *Server) Counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.counts)
}

// String lists the counts, for a test's failure message.
func (s *Server) String() string {
	counts := s.Counts()
	parts := make([]string, 0, len(counts))
	for _, n := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s=%d", n, counts[n]))
	}
	return "droplet requests: " + strings.Join(parts, " ")
}

// requestName turns a URL path (or a name given to Requests) into the
// counted name: cleaned, without the leading slash.
func requestName(p string) string {
	return strings.TrimPrefix(path.Clean("/"+p), "/")
}

// statusRecorder notes the status and size of an answer for the log.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}
