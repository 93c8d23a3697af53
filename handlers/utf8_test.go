package handlers_test

import (
	"net/http"
	"unicode/utf8"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// Error messages quote what they choke on; a request holding bytes that
// are not UTF-8 must still get its typed error (protojson and protobuf
// refuse to encode a string that is not UTF-8), and the log and metrics
// must say what the caller got.
var _ = Describe("Invalid UTF-8 in a request", func() {
	// A slice, not a map: the spec tree must be built in the same order
	// every time.
	bodies := []struct{ where, body string }{
		{"in a string field", "{\"process_guid\": \"web\xff\"}"},
		{"in a field name", "{\"process\xff_guid\": \"web\"}"},
		{"as a value outside a string", "{\"process_guid\": \xff}"},
		{"after the message", "{\"process_guid\": \"web\"}\xff"},
		// Field 1 (process_guid), 4 bytes, the last not UTF-8.
		{"in a protobuf string field", "\x0a\x04web\xff"},
	}

	for _, wire := range wires {
		for _, sent := range bodies {
			where, body := sent.where, sent.body
			It("is a 200 with a valid UTF-8 InvalidRequest, logged and counted as such: "+where+", sent as "+wire.name, func() {
				b := newBoard(stores[testdb.SQLite], wire)
				resp, raw := b.postRaw(models.RouteDesiredLRPByProcessGuid, wire.contentType, []byte(body))
				Expect(resp.StatusCode).To(Equal(http.StatusOK), "body: %q", raw)
				Expect(resp.Header.Get("Content-Type")).To(Equal(wire.contentType))
				answer := &models.DesiredLRPResponse{}
				Expect(wire.unmarshal(raw, answer)).To(Succeed(), "body: %q", raw)
				Expect(answer.GetError().GetType()).To(Equal(models.Error_InvalidRequest))
				message := answer.GetError().GetMessage()
				Expect(message).To(HavePrefix("request body:"))
				Expect(utf8.ValidString(message)).To(BeTrue(), "message: %q", message)

				logs := logsWith(b.logger.Logs(), "request_id", resp.Header.Get(handlers.RequestIDHeader))
				Expect(logs).To(HaveLen(1))
				Expect(logs[0].Data).To(HaveKeyWithValue("status", BeEquivalentTo(http.StatusOK)))
				Expect(logs[0].Data).To(HaveKeyWithValue("outcome", "InvalidRequest"))
				Expect(logs[0].Data).To(HaveKeyWithValue("error", message))
				Expect(b.counter(models.RouteDesiredLRPByProcessGuid, "InvalidRequest")).To(BeEquivalentTo(1))
				Expect(b.counter(models.RouteDesiredLRPByProcessGuid, "UnknownError")).To(BeZero())
			})
		}
	}

	It("escapes the invalid byte where the message quotes it", func() {
		b := newBoard(stores[testdb.SQLite], jsonWire)
		answer := &models.DesiredLRPResponse{}
		b.postDecode(models.RouteDesiredLRPByProcessGuid, models.ContentTypeJSON, []byte("{\"process_guid\": \xff}"), answer)
		Expect(answer.GetError().GetMessage()).To(ContainSubstring(`invalid value \xff`))
	})

	It("is a 404 with a valid UTF-8 error in a path", func() {
		b := newBoard(stores[testdb.SQLite], jsonWire)
		resp, raw := b.postRaw("/v1/desired_lrps/%ff", models.ContentTypeJSON, []byte("{}"))
		Expect(resp.StatusCode).To(Equal(http.StatusNotFound), "body: %q", raw)
		answer := &models.DesiredLRPResponse{}
		Expect(jsonWire.unmarshal(raw, answer)).To(Succeed(), "body: %q", raw)
		Expect(answer.GetError().GetType()).To(Equal(models.Error_InvalidRequest))
		Expect(answer.GetError().GetMessage()).To(Equal(`path: no API route /v1/desired_lrps/\xff`))
		logs := logsWith(b.logger.Logs(), "request_id", resp.Header.Get(handlers.RequestIDHeader))
		Expect(logs).To(HaveLen(1))
		Expect(logs[0].Data).To(HaveKeyWithValue("status", BeEquivalentTo(http.StatusNotFound)))
		Expect(b.counter("unmatched", "InvalidRequest")).To(BeEquivalentTo(1))
	})
})

var _ = Describe("Control characters in a request", func() {
	It("are escaped where the message quotes them, so an error never carries a terminal escape", func() {
		b := newBoard(stores[testdb.SQLite], jsonWire)
		answer := &models.DesiredLRPResponse{}
		b.postDecode(models.RouteDesiredLRPByProcessGuid, models.ContentTypeJSON, []byte("{\x01}"), answer)
		Expect(answer.GetError().GetType()).To(Equal(models.Error_InvalidRequest))
		Expect(answer.GetError().GetMessage()).To(ContainSubstring(`\u0001`))
		Expect(answer.GetError().GetMessage()).NotTo(ContainSubstring("\x01"))
	})
})
