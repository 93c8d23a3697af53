package executor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	neturl "net/url"
	"strconv"
	"syscall"
	"time"

	"github.com/corkboard/corkboard/models"
)

// healthCheck is a TCP or HTTP check of one instance. A PROCESS check
// needs none: the running process is the check.
type healthCheck struct {
	kind          models.HealthCheck_Type
	containerPort uint32
	target        string // host:port
	path          string
	client        *http.Client
	// The definition's settings, defaults applied: the pause between
	// checks of a healthy instance, how long one check may take (an
	// instance slower to accept a connection or to answer fails it), and
	// how many failures in a row make a healthy instance unhealthy.
	interval  time.Duration
	timeout   time.Duration
	threshold int
}

// newHealthCheck builds the check a definition asks for, against the host
// port its container port maps to. It returns nil for PROCESS (and for no
// health check at all, which means PROCESS).
func newHealthCheck(hc *models.HealthCheck, address string, ports []*models.PortMapping) (*healthCheck, error) {
	if hc.GetType() == models.HealthCheck_PROCESS {
		return nil, nil
	}
	var hostPort uint32
	var known []uint32
	for _, m := range ports {
		known = append(known, m.GetContainerPort())
		if m.GetContainerPort() == hc.GetPort() {
			hostPort = m.GetHostPort()
		}
	}
	if hostPort == 0 {
		return nil, fmt.Errorf("InstanceSpec.Definition.health_check.port %d is not one of the definition's ports %v", hc.GetPort(), known)
	}
	check := &healthCheck{
		kind:          hc.GetType(),
		containerPort: hc.GetPort(),
		target:        net.JoinHostPort(address, strconv.FormatUint(uint64(hostPort), 10)),
		path:          hc.GetPath(),
		interval:      hc.Interval(),
		timeout:       hc.Timeout(),
		threshold:     hc.Threshold(),
	}
	if check.kind == models.HealthCheck_HTTP {
		check.client = &http.Client{
			Timeout: check.timeout,
			// A redirect is an answer, and not a 2xx one.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			// Each check opens its own connection, as a client would, and
			// leaves none behind.
			Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil},
		}
	}
	return check, nil
}

// String describes the check the way failure reasons name it.
func (h *healthCheck) String() string {
	if h.kind == models.HealthCheck_HTTP {
		return fmt.Sprintf("GET %s on port %d", h.path, h.containerPort)
	}
	return fmt.Sprintf("TCP connect to port %d", h.containerPort)
}

// checkFailure is a failed check, in two forms: Error() is the short one
// that crash reasons quote, naming the definition's port ("GET /health on
// port 8080: 503"); output is the one an operator reads in the
// instance's health report and a rollout's blocked_by, naming the address
// the cell checked and all the answer said ("GET
// http://10.0.0.1:61001/health: 503 Service Unavailable").
type checkFailure struct {
	short, output string
}

func (f *checkFailure) Error() string { return f.short }

// checkOutput is what a failed check said, as a health report carries it
// (at most models.MaxCheckFailureBytes).
func checkOutput(err error) string {
	var f *checkFailure
	if errors.As(err, &f) {
		return models.CutCheckFailure(f.output)
	}
	return models.CutCheckFailure(err.Error())
}

// run performs one check; its error reads after "health check failed: ",
// e.g. "GET /health on port 8080: 503" (a *checkFailure, see checkOutput
// for the operator's form).
func (h *healthCheck) run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	if h.kind == models.HealthCheck_HTTP {
		return h.runHTTP(ctx)
	}
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "tcp", h.target)
	if err != nil {
		problem := h.describeNetError(err)
		return &checkFailure{
			short:  fmt.Sprintf("%s: %s", h, problem),
			output: fmt.Sprintf("TCP connect to %s: %s", h.target, problem),
		}
	}
	conn.Close()
	return nil
}

func (h *healthCheck) runHTTP(ctx context.Context) error {
	url := "http://" + h.target + h.path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return &checkFailure{short: fmt.Sprintf("%s: %v", h, err), output: fmt.Sprintf("GET %s: %v", url, err)}
	}
	resp, err := h.client.Do(req)
	if err != nil {
		// The client's error repeats the method and URL ("Get
		// \"http://...\": EOF"): the output names them once.
		bare := err
		var urlErr *neturl.Error
		if errors.As(err, &urlErr) {
			bare = urlErr.Err
		}
		return &checkFailure{
			short:  fmt.Sprintf("%s: %s", h, h.describeNetError(err)),
			output: fmt.Sprintf("GET %s: %s", url, h.describeNetError(bare)),
		}
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// resp.Status is the status line's code and text, "503 Service
		// Unavailable" (or the app's own text).
		return &checkFailure{short: fmt.Sprintf("%s: %d", h, resp.StatusCode), output: fmt.Sprintf("GET %s: %s", url, resp.Status)}
	}
	return nil
}

// describeNetError shortens the usual failures to what a person needs;
// anything else keeps Go's wording.
func (h *healthCheck) describeNetError(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return fmt.Sprintf("no answer within %s", h.timeout)
	default:
		return err.Error()
	}
}

func isTimeout(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}
