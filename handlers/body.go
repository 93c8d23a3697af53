package handlers

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/internal/admission"
	"github.com/corkboard/corkboard/models"
)

// Bodies are read before a request takes a place in flight (see
// internal/admission): a client trickling a body holds one of its own
// body-reader places for at most the body timeout, never one of the
// board's requests in flight, so a thousand slow clients cannot stop the
// board serving anyone else.

// bodyTooLarge is the refusal of a body over models.MaxRequestBodyBytes,
// whether its Content-Length says so or its bytes do.
func bodyTooLarge() *models.Error {
	return models.ErrInvalidField("request body", fmt.Sprintf("larger than the limit of %d bytes", models.MaxRequestBodyBytes))
}

// readBodyFirst reads r's body into memory, bounded by
// models.MaxRequestBodyBytes and the body timeout, under a body-reader
// place of the caller's, and puts it back as r.Body for the decoder. A
// Content-Length over the cap is refused at once, unread. It answers the
// request itself and returns false when the body cannot be had; every
// such answer closes the connection, as bytes of the body may remain on
// it.
//
// A body in an encoding the API does not speak is left unread: decode
// answers 415 without reading it, and the connection is closed.
func (c *call) readBodyFirst(w http.ResponseWriter, r *http.Request, status int, errorResponse func(*models.Error) proto.Message) bool {
	controller := http.NewResponseController(w)
	// abandon gives up what is left of the body: the connection closes
	// after the answer, and the server, which would otherwise read a
	// small remainder before closing (blocking on a slow one), stops at
	// once. Not every ResponseWriter can move its deadline (a test
	// recorder); the server's read timeout holds there.
	abandon := func() {
		w.Header().Set("Connection", "close")
		controller.SetReadDeadline(time.Now()) //nolint:errcheck // see above
	}
	if _, err := codecFor(r); err != nil {
		// decode answers 415 without reading the body.
		abandon()
		return true
	}
	refuse := func(err *models.Error, status int) bool {
		abandon()
		c.fail(w, requestCodec(r), status, errorResponse, err)
		return false
	}
	if r.ContentLength > models.MaxRequestBodyBytes {
		return refuse(bodyTooLarge(), http.StatusOK)
	}
	reading, refused := c.api.admissions.take(admission.Body, c.client, c.class, cellCall(c.route, c.who))
	if refused != nil {
		return refuse(refused, status)
	}
	defer reading.release()

	deadlineSet := controller.SetReadDeadline(time.Now().Add(c.api.requestBodyTimeout)) == nil
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, models.MaxRequestBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		var netErr net.Error
		switch {
		case errors.As(err, &tooLarge):
			return refuse(bodyTooLarge(), http.StatusOK)
		case errors.As(err, &netErr) && netErr.Timeout():
			return refuse(models.ErrInvalidField("request body", fmt.Sprintf("not received within %s", c.api.requestBodyTimeout)), http.StatusOK)
		}
		return refuse(models.ErrInvalidField("request body", err.Error()), http.StatusOK)
	}
	if deadlineSet {
		// The body is in: lift the deadline, or the server's watch for
		// the client going away would end a long answer when it passes.
		controller.SetReadDeadline(time.Time{}) //nolint:errcheck // set once already
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return true
}
