package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/corkboard/corkboard/models"
)

// listWriter writes a list response message a page at a time (see
// lists.go). For a DesiredLRPsResponse of two LRPs that ends in an error:
//
//	protobuf: [tag 2, len, LRP 1] [tag 2, len, LRP 2] [tag 1, len, Error]
//	JSON:     {"desired_lrps":[{…},{…}],"error":{…}}
//
// which is what proto.Marshal and protojson would write for the whole
// message (up to field order and spacing, which neither encoding fixes).
type listWriter struct {
	w          http.ResponseWriter
	controller *http.ResponseController
	cd         codec
	items      protoreflect.FieldDescriptor
	// started: the headers (and JSON's "{") are out; inArray: JSON's
	// `"name":[` is.
	started, inArray bool
	buf              []byte
	// writeTimeout bounds the writing of one page, instead of the
	// server's bound on the whole answer: a long list to a client that
	// keeps reading is not cut, a client that stops is.
	writeTimeout time.Duration
}

// errorFieldNumber is the number of every response's error field (see
// errorOnly).
const errorFieldNumber = 1

// encodeError is an item or error the codec could not encode (a string
// that is not valid UTF-8): nothing of it was written.
type encodeError struct{ err error }

func (e encodeError) Error() string { return "encode response: " + e.err.Error() }

// Unwrap lets the answer's error be the codec's own when it is a
// models.Error (a stored definition that does not decode, marshalJSON).
func (e encodeError) Unwrap() error { return e.err }

func newListWriter(w http.ResponseWriter, cd codec, items protoreflect.FieldDescriptor, writeTimeout time.Duration) *listWriter {
	return &listWriter{w: w, controller: http.NewResponseController(w), cd: cd, items: items, writeTimeout: writeTimeout}
}

// encode encodes one page of items, for write to send; it keeps no
// reference to them, so that a caller that lets go of them before write
// does not hold them while a slow client takes the bytes. An encodeError
// leaves nothing to write; the caller ends the answer with it.
func (lw *listWriter) encode(items []listItem) error {
	lw.buf = lw.buf[:0]
	for _, item := range items {
		var err error
		if lw.buf, err = lw.appendItem(lw.buf, item); err != nil {
			lw.buf = lw.buf[:0]
			return encodeError{err}
		}
	}
	return nil
}

func (lw *listWriter) appendItem(buf []byte, item proto.Message) ([]byte, error) {
	if lw.cd.contentType == models.ContentTypeProtobuf {
		return appendSizedField(buf, lw.items.Number(), item)
	}
	encoded, err := lw.cd.marshal(item)
	if err != nil {
		return buf, err
	}
	if !lw.inArray {
		buf = fmt.Appendf(buf, "%q:[", lw.items.Name())
		lw.inArray = true
	} else {
		buf = append(buf, ',')
	}
	return append(buf, encoded...), nil
}

// appendField appends msg as field number of a message.
func appendField(buf []byte, number protowire.Number, msg proto.Message) ([]byte, error) {
	encoded, err := proto.Marshal(msg)
	if err != nil {
		return buf, err
	}
	buf = protowire.AppendTag(buf, number, protowire.BytesType)
	return protowire.AppendBytes(buf, encoded), nil
}

// appendSizedField is appendField for a message that proto.Size measured
// last, unchanged since — readPage measures every item of a page, fresh
// from the store, to bound the page — encoded with the sizes that left in
// it and in the messages under it instead of measuring it all again
// (measuring again was half of encoding a page of scheduling infos). A
// message never measured is measured here.
func appendSizedField(buf []byte, number protowire.Number, msg proto.Message) ([]byte, error) {
	cached := proto.MarshalOptions{UseCachedSize: true}
	field := protowire.AppendTag(buf, number, protowire.BytesType)
	field = protowire.AppendVarint(field, uint64(cached.Size(msg)))
	field, err := cached.MarshalAppend(field, msg)
	if err != nil {
		return buf, err
	}
	return field, nil
}

// end closes the message, with failed as its error field when set.
func (lw *listWriter) end(failed *models.Error) error {
	lw.buf = lw.buf[:0]
	if lw.cd.contentType == models.ContentTypeProtobuf {
		if failed != nil {
			var err error
			if lw.buf, err = appendField(lw.buf, errorFieldNumber, failed); err != nil {
				return err
			}
		}
		return lw.write()
	}
	if lw.inArray {
		lw.buf = append(lw.buf, ']')
	}
	if failed != nil {
		encoded, err := lw.cd.marshal(failed)
		if err != nil {
			return err
		}
		if lw.inArray {
			lw.buf = append(lw.buf, ',')
		}
		lw.buf = append(lw.buf, `"error":`...)
		lw.buf = append(lw.buf, encoded...)
	}
	lw.buf = append(lw.buf, '}')
	return lw.write()
}

// write sends buf, the headers first when they are not out yet, within
// writeTimeout.
func (lw *listWriter) write() error {
	if !lw.started {
		lw.started = true
		lw.w.Header().Set("Content-Type", lw.cd.contentType)
		lw.w.WriteHeader(http.StatusOK)
		if lw.cd.contentType != models.ContentTypeProtobuf {
			lw.buf = append([]byte{'{'}, lw.buf...)
		}
	}
	// Not every ResponseWriter can move its deadline (a test recorder,
	// HTTP/2 before Go 1.20); the server's write timeout holds there.
	if err := lw.controller.SetWriteDeadline(time.Now().Add(lw.writeTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	if _, err := lw.w.Write(lw.buf); err != nil {
		return err
	}
	if err := lw.controller.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}
