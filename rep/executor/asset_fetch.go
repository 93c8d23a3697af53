package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/corkboard/corkboard/models"
)

// fetchURL copies what url names into w, counting the bytes in dl as they
// arrive, and returns how many it copied. It reads http(s) URLs with a
// GET (any 2xx answer is the file) and file URLs from the cell's disk,
// regular files under fileDirs only (openFileAsset). Errors are for a
// person: "download failed: GET http://...: connection refused", "HTTP
// 404 Not Found".
func fetchURL(ctx context.Context, client *http.Client, fileDirs []string, rawURL string, w io.Writer, dl *assetDownload) (int64, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return 0, fmt.Errorf("not a URL: %w", err)
	}
	var body io.Reader
	switch u.Scheme {
	case "file":
		f, size, err := openFileAsset(fileDirs, u.Path)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		dl.total.Store(size)
		body = &contextReader{ctx: ctx, r: f}
	case "http", "https":
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
		if err != nil {
			return 0, fmt.Errorf("download failed: %w", err)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, fmt.Errorf("download failed: GET %s: %s", rawURL, describeFetchError(err))
		}
		defer resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return 0, fmt.Errorf("HTTP %s", resp.Status)
		}
		if resp.ContentLength >= 0 {
			dl.total.Store(resp.ContentLength)
		}
		body = resp.Body
	default:
		return 0, fmt.Errorf("cannot download a %s URL", u.Scheme)
	}

	n, err := io.Copy(w, &countingReader{r: body, n: &dl.received})
	if err != nil {
		what := "download failed: GET " + rawURL
		if u.Scheme == "file" {
			what = "download failed: reading " + u.Path
		}
		return n, fmt.Errorf("%s: %s after %s", what, describeFetchError(err), dl.progress())
	}
	return n, nil
}

// openFileAsset opens the file of a file:// asset, which must be a regular
// file under one of dirs (the rep's file_asset_dirs, their symbolic links
// resolved) once its own links are resolved. The rep reads it as root and
// copies it into an instance, and whoever may desire an LRP names the
// path: without this, an API client could have any file of the cell — its
// key, its config, a board's on the same host — copied into an instance
// it runs (and learn each one's checksum from the mismatch error first).
// A path outside dirs is refused before anything on the disk is looked
// at, so the refusal says nothing of what is there.
func openFileAsset(dirs []string, path string) (*os.File, int64, error) {
	refused := fmt.Errorf("refusing to read %s: this rep reads file:// assets only from its file_asset_dirs (%s)", path, describeDirs(dirs))
	if !under(dirs, filepath.Clean(path)) {
		return nil, 0, refused
	}
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, 0, fmt.Errorf("download failed: %w", err)
	}
	if !under(dirs, resolved) {
		return nil, 0, refused
	}
	// Without waiting for a writer, should it be a FIFO: it is refused
	// below, as a device is.
	f, err := os.OpenFile(resolved, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("download failed: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("download failed: %w", err)
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("refusing to read %s: not a regular file", path)
	}
	return f, info.Size(), nil
}

// under says whether path is one of dirs or inside one.
func under(dirs []string, path string) bool {
	for _, dir := range dirs {
		if path == dir || strings.HasPrefix(path, dir+string(filepath.Separator)) || dir == string(filepath.Separator) {
			return true
		}
	}
	return false
}

func describeDirs(dirs []string) string {
	if len(dirs) == 0 {
		return "none set"
	}
	return strings.Join(dirs, ", ")
}

// assetDialer dials as http.DefaultTransport does, but refuses to connect
// to a link-local or cloud metadata address (models.IsLinkLocalOrMetadata):
// the board refuses asset URLs naming one, and this catches the rest — a
// name that resolves to one, a redirect to one. The check runs on the
// address about to be connected to, after resolution, so no DNS answer
// can slip past it. (Through an HTTP proxy, the proxy connects, not the
// rep.)
func assetDialer() *net.Dialer {
	return &net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
		Control:   models.RefuseLinkLocal(errLinkLocalAsset),
	}
}

// errLinkLocalAsset is why a download to a link-local or metadata address
// fails.
var errLinkLocalAsset = errors.New("refusing to fetch an asset from a link-local or cloud metadata address (the rep's allow_link_local_asset_hosts allows it)")

// describeFetchError shortens the usual network failures to what a person
// needs; anything else keeps Go's wording.
func describeFetchError(err error) string {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.Is(err, errLinkLocalAsset) && errors.As(err, &opErr):
		return opErr.Err.Error()
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return "no such host " + dnsErr.Name
	default:
		return err.Error()
	}
}

// countingReader adds what it reads to n, for progress lines.
type countingReader struct {
	r io.Reader
	n interface{ Add(int64) int64 }
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// contextReader stops a copy from a file once ctx ends (an HTTP body
// stops by itself).
type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, context.Cause(c.ctx)
	}
	return c.r.Read(p)
}
