package executor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
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

// run performs one check; its error reads after "health check failed: ",
// e.g. "GET /health on port 8080: 503".
func (h *healthCheck) run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	if h.kind == models.HealthCheck_HTTP {
		return h.runHTTP(ctx)
	}
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "tcp", h.target)
	if err != nil {
		return fmt.Errorf("%s: %s", h, h.describeNetError(err))
	}
	conn.Close()
	return nil
}

func (h *healthCheck) runHTTP(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+h.target+h.path, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", h, err)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %s", h, h.describeNetError(err))
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s: %d", h, resp.StatusCode)
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
