package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

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
	if err := models.UnmarshalJSON(data, msg); err != nil {
		return &specError{file: name, msg: placedInFile(err)}
	}
	return nil
}

// placedInFile says why a spec did not decode, where in the file first
// ("line 3:5: desired_lrp.definition: unknown field "colour"").
func placedInFile(err error) string {
	msg := err.Error()
	var jsonErr *models.JSONError
	if errors.As(err, &jsonErr) {
		msg = jsonErr.Text
		if jsonErr.Line > 0 {
			msg = fmt.Sprintf("line %d:%d: %s", jsonErr.Line, jsonErr.Column, msg)
		}
	}
	// The decoder echoes the bytes it refuses: a spec must not put raw
	// bytes or terminal escapes on a person's screen.
	return models.PrintableText(msg)
}

// invalidSpec names the file in a validation error about its content.
func invalidSpec(path string, err error) error {
	if path == "-" {
		path = "<stdin>"
	}
	return &specError{file: path, msg: err.Error()}
}
