// Package configcheck holds what the board's and the rep's config fuzz
// targets ask of a config loader: errors a person can read, naming keys
// the config really has.
package configcheck

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/corkboard/corkboard/internal/configfile"
)

// Keys lists the keys a config struct has (its json tags), nested ones
// as "parent.key".
func Keys(typ reflect.Type) map[string]bool {
	return keysUnder(typ, "")
}

func keysUnder(typ reflect.Type, prefix string) map[string]bool {
	keys := map[string]bool{}
	for i := range typ.NumField() {
		field := typ.Field(i)
		name, _, _ := strings.Cut(field.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		keys[prefix+name] = true
		inner := field.Type
		for inner.Kind() == reflect.Pointer || inner.Kind() == reflect.Slice {
			inner = inner.Elem()
		}
		if inner.Kind() == reflect.Struct {
			for key := range keysUnder(inner, prefix+name+".") {
				keys[key] = true
			}
		}
	}
	return keys
}

// typeErrorKey is how configfile names the key of a value of the wrong
// JSON type: "config FILE: KEY: want a TYPE, got a JSON VALUE".
var typeErrorKey = regexp.MustCompile(`^config [^ ]+: ([^ :]+): want a `)

// indexes strips list indexes from a key: "placement_tags[1]" is a
// placement_tags key.
var indexes = regexp.MustCompile(`\[\d+\]`)

// CheckError holds a refused config to a printable UTF-8 message that
// names, when it is about one key's value, a key the config has.
func CheckError(t testing.TB, err error, keys map[string]bool) {
	t.Helper()
	message := err.Error()
	if !utf8.ValidString(message) {
		t.Fatalf("error message is not valid UTF-8: %q", message)
	}
	if i := strings.IndexFunc(message, func(r rune) bool { return r < ' ' || r == 0x7f }); i >= 0 {
		t.Fatalf("error message holds a control character at byte %d: %q", i, message)
	}
	if !strings.HasPrefix(message, "config") {
		t.Fatalf("error message does not say it is about the config: %q", message)
	}
	var keyErr *configfile.KeyError
	if errors.As(err, &keyErr) {
		if !keys[indexes.ReplaceAllString(keyErr.Key, "")] {
			t.Fatalf("error names %q, not a key of the config: %q", keyErr.Key, message)
		}
		return
	}
	if match := typeErrorKey.FindStringSubmatch(message); match != nil {
		if !keys[indexes.ReplaceAllString(match[1], "")] {
			t.Fatalf("error names %q, not a key of the config: %q", match[1], message)
		}
	}
}
