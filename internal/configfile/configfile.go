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
	"os"
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
		return fmt.Errorf("config %s: %s", path, describeJSONError(err))
	}
	return nil
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
