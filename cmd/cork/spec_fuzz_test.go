package main

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

// FuzzSpecFile reads arbitrary bytes as a spec from stdin, as
// `cork desire -` and `cork update --definition -` do, into a DesiredLRP
// and an LRPDefinition. readSpec must not panic; a spec it refuses gets a
// *specError naming <stdin> with a printable UTF-8 message; one it reads
// validates the same way every time, and the same after a protobuf round
// trip (what the board will see), so cork's verdict is the board's.
func FuzzSpecFile(f *testing.F) {
	seeds := []string{
		// The fixtures' shape: a desired LRP with routes and a definition.
		`{"process_guid": "web", "domain": "apps", "instances": 2,
		  "routes": {"http": [{"hostname": "web.example", "port": 8080}]},
		  "definition": {"action": {"path": "/bin/web", "args": ["--port", "8080"], "env": [{"name": "PORT", "value": "8080"}]},
		    "ports": [8080], "health_check": {"type": "HTTP", "port": 8080, "path": "/healthz"},
		    "memory_mb": 64, "disk_mb": 64}}`,
		// lowerCamelCase names, as protojson also reads them.
		`{"processGuid": "web", "domain": "apps", "definition": {"action": {"path": "sleep"}}, "updateStrategy": {"maxSurge": "25%"}}`,
		// A definition on its own (cork update --definition).
		`{"action": {"path": "/bin/web"}, "ports": [8080], "assets": [{"url": "https://example.com/app.tgz",
		  "sha256": "` + strings.Repeat("a", 64) + `", "destination": "."}], "setup": {"path": "/bin/setup"}}`,
		// Mistakes cork must explain.
		`{"process_guid": "web", "domian": "apps"}`,
		`{"process_guid": "web ", "domain": "apps", "definition": {"action": {"path": "sleep"}}}`,
		`{"process_guid": "web", "domain": "ap\u0000ps", "definition": {"action": {"path": "sleep"}}}`,
		`{"process_guid": "web", "instances": "two"}`,
		`{"process_guid": "web", "instances": 1e10}`,
		`{"routes": {"http": [{"port": 1e999}]}}`,
		`[1, 2, 3]`,
		`{"process_guid": "web",`,
		"  \n\t ",
		// protojson echoes the offending bytes raw (see checkSpec).
		"\xff\xfe{}",
		"{\"domain\" \x1b[31m}",
		"\"\x7f\"0",
		"{\"\x7f\": 1}",
	}
	for _, seed := range seeds {
		f.Add([]byte(seed))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		checkSpec(t, data, &models.DesiredLRP{})
		checkSpec(t, data, &models.LRPDefinition{})
	})
}

// checkSpec reads data as a spec into msg, as cork does, and checks the
// answer.
func checkSpec(t *testing.T, data []byte, msg interface {
	proto.Message
	Validate() error
}) {
	t.Helper()
	a := newApp(bytes.NewReader(data), io.Discard)
	err := a.readSpec("-", msg)
	if err != nil {
		var specErr *specError
		if !errors.As(err, &specErr) || specErr.file != "<stdin>" {
			t.Fatalf("readSpec: %v (%T), want a *specError about <stdin>", err, err)
		}
		// Not checkMessage, for now: readSpec passes protojson's decode
		// errors on as they are, and those echo the offending input raw
		// ("invalid value \xff", "unexpected character \x07",
		// "unexpected token \"\x7f\"", "unknown field \"\x1b[31m\""), so
		// a spec can make cork print invalid UTF-8 or terminal escapes.
		// That is cmd/cork/spec.go's to fix (quote the message's
		// unprintable bytes); then check these errors like the others.
		if decodeErrorsArePrintable {
			checkMessage(t, err.Error())
		}
		return
	}
	first := msg.Validate()
	if again := msg.Validate(); text(again) != text(first) {
		t.Fatalf("Validate answered %q, then %q", text(first), text(again))
	}
	wire, err := proto.Marshal(msg)
	if err != nil {
		t.Fatalf("a spec cork read does not encode for the board: %v", err)
	}
	sent := msg.ProtoReflect().New().Interface().(interface {
		proto.Message
		Validate() error
	})
	if err := proto.Unmarshal(wire, sent); err != nil {
		t.Fatalf("the board could not decode what cork sends: %v", err)
	}
	if got := sent.Validate(); text(got) != text(first) {
		t.Fatalf("cork says %q, the board would say %q", text(first), text(got))
	}
	if first != nil {
		invalid := invalidSpec("-", first)
		checkMessage(t, invalid.Error())
		if !models.IsErrorType(first, models.Error_InvalidRequest) {
			t.Fatalf("Validate answered %v, want an InvalidRequest", first)
		}
	}
}

// checkMessage holds an error cork prints to what a terminal can show:
// valid UTF-8 without control characters but line breaks.
func checkMessage(t *testing.T, message string) {
	t.Helper()
	if !utf8.ValidString(message) {
		t.Fatalf("error message is not valid UTF-8: %q", message)
	}
	if i := strings.IndexFunc(message, func(r rune) bool { return (r < ' ' && r != '\n') || r == 0x7f }); i >= 0 {
		t.Fatalf("error message holds a control character at byte %d: %q", i, message)
	}
}

// decodeErrorsArePrintable turns on the check of readSpec's decode errors
// once spec.go makes them printable (see checkSpec).
const decodeErrorsArePrintable = true

func text(err error) string {
	if err == nil {
		return "<valid>"
	}
	return err.Error()
}
