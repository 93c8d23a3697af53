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
	"syscall"
	"time"

	"github.com/corkboard/corkboard/models"
)

// fetchURL copies what url names into w, counting the bytes in dl as they
// arrive, and returns how many it copied. It reads http(s) URLs with a
// GET (any 2xx answer is the file) and file URLs from the cell's disk.
// Errors are for a person: "download failed: GET http://...: connection
// refused", "HTTP 404 Not Found".
func fetchURL(ctx context.Context, client *http.Client, rawURL string, w io.Writer, dl *assetDownload) (int64, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return 0, fmt.Errorf("not a URL: %w", err)
	}
	var body io.Reader
	switch u.Scheme {
	case "file":
		f, err := os.Open(u.Path)
		if err != nil {
			return 0, fmt.Errorf("download failed: %w", err)
		}
		defer f.Close()
		if info, err := f.Stat(); err == nil && info.Mode().IsRegular() {
			dl.total.Store(info.Size())
		}
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
