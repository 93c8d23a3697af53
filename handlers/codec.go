package handlers

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/corkboard/corkboard/models"
)

// codec is one of the two body encodings the API speaks. A request is
// answered in the encoding it was sent in.
type codec struct {
	contentType string
	unmarshal   func([]byte, proto.Message) error
	marshal     func(proto.Message) ([]byte, error)
}

var protobufCodec = codec{
	contentType: models.ContentTypeProtobuf,
	unmarshal:   unmarshalProtobuf,
	marshal:     proto.Marshal,
}

// JSON answers use the proto field names (snake_case, as in the .proto
// files and the CLI output) and leave out unset fields, as proto3 JSON does.
// Input accepts both the proto names and the lowerCamelCase JSON names, and
// rejects fields it does not know.
var jsonCodec = codec{
	contentType: models.ContentTypeJSON,
	unmarshal:   unmarshalJSON,
	marshal:     marshalJSON,
}

var protojsonOptions = protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: false}

// marshalJSON encodes msg in JSON, first decoding the fields a list read
// left encoded (models.KeepEncoded), which protojson would leave out: in
// msg, an item, or in the items of its lists, a response.
func marshalJSON(msg proto.Message) ([]byte, error) {
	if err := decodeEncodedFields(msg.ProtoReflect()); err != nil {
		return nil, err
	}
	var err error
	msg.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if !fd.IsList() || fd.Message() == nil {
			return true
		}
		list := v.List()
		for i := 0; i < list.Len() && err == nil; i++ {
			err = decodeEncodedFields(list.Get(i).Message())
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	return protojsonOptions.Marshal(msg)
}

// decodeEncodedFields is models.DecodeEncodedFields, its error an
// InvalidRecord naming the item.
func decodeEncodedFields(m protoreflect.Message) error {
	if err := models.DecodeEncodedFields(m.Interface()); err != nil {
		return models.NewError(models.Error_InvalidRecord, "%s: stored field does not decode: %v", m.Descriptor().Name(), err)
	}
	return nil
}

// codecFor picks the codec for a request's Content-Type. No Content-Type
// means protobuf, the board's native encoding.
func codecFor(r *http.Request) (codec, error) {
	header := r.Header.Get("Content-Type")
	if header == "" {
		return protobufCodec, nil
	}
	mediaType, _, err := mime.ParseMediaType(header)
	if err != nil {
		return jsonCodec, fmt.Errorf("Content-Type: cannot parse %q", header)
	}
	switch mediaType {
	case models.ContentTypeProtobuf:
		return protobufCodec, nil
	case models.ContentTypeJSON:
		return jsonCodec, nil
	}
	return jsonCodec, fmt.Errorf("Content-Type: unsupported %q; use %s or %s", mediaType, models.ContentTypeProtobuf, models.ContentTypeJSON)
}

// requestCodec is the encoding to answer a request in before its body is
// read: the one its Content-Type names (protobuf when it names none, as for
// any API call), JSON when that is not one the API speaks.
func requestCodec(r *http.Request) codec {
	c, err := codecFor(r)
	if err != nil {
		return jsonCodec
	}
	return c
}

// readBody reads at most models.MaxRequestBodyBytes and decodes it into msg.
// Every failure is an InvalidRequest about the request body.
func readBody(w http.ResponseWriter, r *http.Request, c codec, msg proto.Message) *models.Error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, models.MaxRequestBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return bodyTooLarge()
		}
		return models.ErrInvalidField("request body", err.Error())
	}
	// An empty body is the empty message in both encodings, so that
	// `curl -X POST -H 'Content-Type: application/json' .../v1/ping` works.
	if len(body) == 0 {
		return nil
	}
	if err := c.unmarshal(body, msg); err != nil {
		return models.ErrInvalidField("request body", trimProtoPrefix(err.Error()))
	}
	return nil
}

// unmarshalJSON is models.UnmarshalJSON: its errors name the field as the
// protobuf decoder's do.
func unmarshalJSON(body []byte, msg proto.Message) error {
	return models.UnmarshalJSON(body, msg)
}

// unmarshalProtobuf rejects fields this board does not know, like the JSON
// decoder does: silently dropping a field a newer client relies on would
// apply a different request than the one sent. It also rejects a varint
// too large for its 32-bit field (see models.CheckWireRanges), which
// protobuf-go would cut to its low 32 bits where JSON refuses it.
func unmarshalProtobuf(body []byte, msg proto.Message) error {
	if err := proto.Unmarshal(body, msg); err != nil {
		// The decoder's refusals name no field ("string field contains
		// invalid UTF-8"): say where, when the walk finds it.
		if where := models.ExplainWire(body, msg.ProtoReflect().Descriptor()); where != nil {
			return where
		}
		return err
	}
	declaredOnly, err := models.CheckWireRanges(body, msg.ProtoReflect().Descriptor())
	if err != nil {
		proto.Reset(msg)
		return err
	}
	if declaredOnly {
		return nil // nothing unknown to find (see CheckWireRanges)
	}
	return models.UnknownFields(msg.ProtoReflect())
}

// trimProtoPrefix drops the "proto:" the protobuf library puts in front of
// its errors (followed by a space or, deliberately, a no-break space).
func trimProtoPrefix(s string) string {
	if rest, ok := strings.CutPrefix(s, "proto:"); ok {
		return strings.TrimLeft(rest, " \u00a0")
	}
	return s
}

// writeMessage encodes msg in the request's encoding and returns the
// status it wrote. Encoding fails only on a string that is not valid UTF-8
// (errors are made safe before, see safeError) or a bug: that is answered
// as a plain 500, and the error returned so that the log and the metrics
// say what the caller got.
func writeMessage(w http.ResponseWriter, c codec, status int, msg proto.Message) (int, error) {
	body, err := c.marshal(msg)
	if err != nil {
		http.Error(w, "encode response: "+strings.ToValidUTF8(err.Error(), "\uFFFD"), http.StatusInternalServerError)
		return http.StatusInternalServerError, err
	}
	w.Header().Set("Content-Type", c.contentType)
	w.WriteHeader(status)
	w.Write(body) //nolint:errcheck // the client went away; nothing to do
	return status, nil
}
