// Package configfile loads the commands' JSON config files strictly: an
// unknown key is an error, so that a typo does not silently fall back to a
// default, and every error names the key it is about. Durations are Go
// durations in strings ("30s"), checked by key.
package configfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Load decodes the JSON file at path into v, a pointer to the config
// struct, refusing keys the struct does not have. Errors name the file and,
// where encoding/json knows it, the key ("capacity.memory_mb").
func Load(path string, v any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(v); err != nil {
		if strings.Contains(err.Error(), "unknown field") {
			if key := unknownKey(raw, reflect.TypeOf(v)); key != "" {
				// encoding/json names the unknown key but not where it
				// is: "bogus" of tls, or of the top level.
				return fmt.Errorf("config %s: unknown field %q", path, key)
			}
		}
		return fmt.Errorf("config %s: %s", path, describeJSONError(err))
	}
	return nil
}

// unknownKey is the path ("tls.bogus", "cells[1].nmae") of a key of the
// JSON raw that t (a struct, or a pointer, slice or map of one) has no
// field for, the first with an object's keys in name order; "" when there
// is none or raw does not decode. Fields match their json
// names as encoding/json matches them: exactly, else ignoring case.
func unknownKey(raw []byte, t reflect.Type) string {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return ""
	}
	return unknownIn(doc, t, "")
}

func unknownIn(doc any, t reflect.Type, path string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		object, ok := doc.(map[string]any)
		if !ok {
			return ""
		}
		fields := jsonFields(t)
		for _, key := range slices.Sorted(maps.Keys(object)) {
			field, ok := fields[key]
			if !ok {
				for name, f := range fields {
					if strings.EqualFold(name, key) {
						field, ok = f, true
						break
					}
				}
			}
			if !ok {
				return join(path, key)
			}
			if found := unknownIn(object[key], field.Type, join(path, key)); found != "" {
				return found
			}
		}
	case reflect.Slice, reflect.Array:
		items, _ := doc.([]any)
		for i, item := range items {
			if found := unknownIn(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); found != "" {
				return found
			}
		}
	case reflect.Map:
		object, _ := doc.(map[string]any)
		for _, key := range slices.Sorted(maps.Keys(object)) {
			if found := unknownIn(object[key], t.Elem(), join(path, key)); found != "" {
				return found
			}
		}
	}
	return ""
}

// jsonFields are t's fields by their json names, those of embedded
// structs among them, without the ones json skips.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	fields := map[string]reflect.StructField{}
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || f.Anonymous && f.Type.Kind() == reflect.Struct {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f
	}
	return fields
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// describeJSONError names the offending key where encoding/json knows it.
func describeJSONError(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return fmt.Sprintf("%s: want a %s, got a JSON %s", typeErr.Field, typeErr.Type, typeErr.Value)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// KeyError is a bad value of one key; it reads "config: KEY: REASON".
type KeyError struct {
	Key    string
	Reason string
}

func (e *KeyError) Error() string { return fmt.Sprintf("config: %s: %s", e.Key, e.Reason) }

// Invalid returns the *KeyError for key.
func Invalid(key, reason string) error {
	return &KeyError{Key: key, Reason: reason}
}

// Duration is one duration key to check: its value as written, the least
// it may be (0: any positive duration), and whether 0 is allowed too (for
// a key whose 0s turns something off).
type Duration struct {
	Key   string
	Value string
	Least time.Duration
	Zero  bool
}

// CheckDurations returns a *KeyError for the first duration that is not a
// positive Go duration (or 0, where Zero allows it) or is shorter than its
// Least, and nil when all are good.
func CheckDurations(durations ...Duration) error {
	for _, d := range durations {
		parsed, err := time.ParseDuration(d.Value)
		switch {
		case err == nil && parsed == 0 && d.Zero:
			// 0 turns the key's setting off: nothing more to check.
		case err != nil || parsed <= 0:
			return Invalid(d.Key, fmt.Sprintf("%q is not a positive duration like \"30s\"", d.Value))
		case parsed < d.Least:
			return Invalid(d.Key, fmt.Sprintf("%q is shorter than the minimum of %s", d.Value, d.Least))
		}
	}
	return nil
}

// MustDuration parses a value CheckDurations has accepted; it panics on
// any other, which is a bug in the caller.
func MustDuration(value string) time.Duration {
	d, err := time.ParseDuration(value)
	if err != nil {
		panic(fmt.Sprintf("configfile: duration %q was not checked: %v", value, err))
	}
	return d
}
