package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

// response is what every API response message has in common.
type response interface {
	proto.Message
	GetError() *models.Error
}

// repeat says whether a call may be sent again after a transport failure.
type repeat bool

const (
	safeToRepeat repeat = true
	sendOnce     repeat = false
)

// call posts request to route and decodes the answer into resp. A typed
// board error in the answer is returned as *models.Error.
func (c *transport) call(ctx context.Context, route string, request proto.Message, resp response, mayRepeat repeat) error {
	body, err := proto.Marshal(request)
	if err != nil {
		return fmt.Errorf("encode %s request: %w", route, err)
	}
	return c.withRetries(ctx, mayRepeat, func() error {
		return c.attempt(ctx, route, body, resp)
	})
}

// withRetries runs attempt, and again after a transport failure when the
// call may repeat, pausing in between. A call the board refused as
// ResourceExhausted (at its cap of requests in flight) is sent again
// whether it may repeat or not: the board refused it before doing
// anything.
func (c *transport) withRetries(ctx context.Context, mayRepeat repeat, attempt func() error) error {
	var lastErr error
	sent := 0
	for sent < 1+c.retries {
		if sent > 0 && !c.pause(ctx, sent) {
			break
		}
		sent++
		err := attempt()
		var failure *transportFailure
		switch {
		case errors.As(err, &failure):
			lastErr = failure.err
			if !mayRepeat {
				return lastErr
			}
		case models.IsErrorType(err, models.Error_ResourceExhausted):
			lastErr = err
		default:
			return err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if sent > 1 {
		return fmt.Errorf("%w (gave up after %d attempts)", lastErr, sent)
	}
	return lastErr
}

// pause waits before the retry-th retry; false when ctx ended first.
func (c *transport) pause(ctx context.Context, retry int) bool {
	backoff := c.retryBackoff
	for i := 1; i < retry && backoff < maxRetryBackoff; i++ {
		backoff *= 2
	}
	timer := time.NewTimer(min(backoff, maxRetryBackoff))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// transportFailure is an attempt that got no complete answer for a reason
// worth retrying.
type transportFailure struct{ err error }

func (f *transportFailure) Error() string { return f.err.Error() }
func (f *transportFailure) Unwrap() error { return f.err }

// attempt sends the request once.
func (c *transport) attempt(ctx context.Context, route string, body []byte, resp response) error {
	attemptCtx := ctx
	if c.timeout > 0 {
		var cancel context.CancelFunc
		attemptCtx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(attemptCtx, http.MethodPost, c.baseURL+route, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("build %s request: %w", route, err)
	}
	req.Header.Set("Content-Type", models.ContentTypeProtobuf)
	req.Header.Set("Accept", models.ContentTypeProtobuf)
	c.setHeaders(req)

	httpResp, err := c.httpClient.Do(req)
	if err != nil {
		return classify(ctx, c.describeTimeout(ctx, err))
	}
	defer httpResp.Body.Close()
	answer, err := io.ReadAll(httpResp.Body)
	if err != nil {
		return classify(ctx, fmt.Errorf("read %s response: %w", route, c.describeTimeout(ctx, err)))
	}
	return decode(route, httpResp, answer, resp)
}

// describeTimeout says so when the attempt's own time limit, not the
// caller's context, cut it short.
func (c *transport) describeTimeout(callerCtx context.Context, err error) error {
	if errors.Is(err, context.DeadlineExceeded) && c.timeout > 0 && callerCtx.Err() == nil {
		return fmt.Errorf("%w (timeout %s per attempt)", err, c.timeout)
	}
	return err
}

// classify marks err as a transportFailure when it is one.
func classify(callerCtx context.Context, err error) error {
	if isTransportFailure(callerCtx, err) {
		return &transportFailure{err: err}
	}
	return err
}

// isTransportFailure reports whether err means the connection failed before a
// whole answer arrived, as opposed to the caller giving up or a request that
// can never succeed (bad URL, TLS verification).
func isTransportFailure(callerCtx context.Context, err error) bool {
	if callerCtx.Err() != nil {
		return false
	}
	for _, errno := range []syscall.Errno{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE} {
		if errors.Is(err, errno) {
			return true
		}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	// net/http's sentinel for a connection the server closed just as the
	// request went out is unexported; its message is all there is to match.
	if strings.Contains(err.Error(), "server closed idle connection") {
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}

// decode reads the board's answer. The body is decoded whatever the status,
// because the board may send a typed error with 200 or with a mapped status.
func decode(route string, httpResp *http.Response, answer []byte, resp response) error {
	ok := httpResp.StatusCode >= 200 && httpResp.StatusCode < 300
	decodeErr := unmarshal(httpResp.Header.Get("Content-Type"), answer, resp)
	if decodeErr == nil {
		if boardErr := resp.GetError(); boardErr != nil {
			return boardErr
		}
		if ok {
			return nil
		}
	}
	if !ok {
		return newHTTPStatusError(route, httpResp, answer)
	}
	return fmt.Errorf("decode %s response: %w", route, decodeErr)
}

func unmarshal(contentType string, answer []byte, resp response) error {
	mediaType, _, err := mime.ParseMediaType(contentType)
	if contentType == "" {
		mediaType, err = models.ContentTypeProtobuf, nil
	}
	if err != nil {
		return fmt.Errorf("content type %q: %w", contentType, err)
	}
	switch mediaType {
	case models.ContentTypeProtobuf, "application/octet-stream":
		return proto.Unmarshal(answer, resp)
	case models.ContentTypeJSON:
		return protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(answer, resp)
	}
	return fmt.Errorf("unexpected content type %q", contentType)
}
