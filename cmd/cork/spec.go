package main

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"regexp"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

// specError is a spec file that cannot be used; it names the file.
type specError struct {
	file string
	msg  string
}

func (e *specError) Error() string { return e.file + ": " + e.msg }

// readSpec decodes the protojson file at path ("-" for stdin) into msg.
// Unknown fields are errors, so a typo is not silently dropped.
func (a *app) readSpec(path string, msg proto.Message) error {
	name := path
	var data []byte
	var err error
	if path == "-" {
		name = "<stdin>"
		data, err = io.ReadAll(a.stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		// The file is named already; "open FILE: " would say it twice.
		err = pathErr.Err
	}
	if err != nil {
		return &specError{file: name, msg: err.Error()}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return &specError{file: name, msg: "empty, want a JSON object"}
	}
	if err := protojson.Unmarshal(data, msg); err != nil {
		return &specError{file: name, msg: withoutProtoPrefix(err.Error())}
	}
	return nil
}

// protoPosition is how protojson places an error: "(line 3:5): ".
var protoPosition = regexp.MustCompile(`^\(line (\d+:\d+)\): `)

// withoutProtoPrefix drops the "proto:" the protobuf library starts its
// messages with (followed by a space or, at random, a no-break space) and
// writes the position as "line 3:5: ".
func withoutProtoPrefix(msg string) string {
	// The decoder echoes the bytes it refuses: a spec must not put raw
	// bytes or terminal escapes on a person's screen.
	msg = models.PrintableText(strings.TrimLeft(strings.TrimPrefix(msg, "proto:"), " \u00a0"))
	return protoPosition.ReplaceAllString(msg, "line $1: ")
}

// invalidSpec names the file in a validation error about its content.
func invalidSpec(path string, err error) error {
	if path == "-" {
		path = "<stdin>"
	}
	return &specError{file: path, msg: err.Error()}
}
