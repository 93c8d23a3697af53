package main

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/corkboard/corkboard/internal/configfile"
)

// FuzzBoardConfig loads arbitrary bytes as the board's config file, as
// `bbs -config FILE` does (buildConfig: load, defaults, validate). It must
// not panic; an error is printable UTF-8 and, when it is about a value,
// names a key the config has; a config it accepts gives every duration and
// setting the board then reads without panicking.
func FuzzBoardConfig(f *testing.F) {
	seeds := []string{
		`{"listen_address": "0.0.0.0:8889", "database_driver": "postgres", "database_dsn": "postgres://bbs@db/bbs",
		  "log_level": "debug", "max_open_connections": 32, "shutdown_timeout": "45s", "board_id": "bbs-0",
		  "cell_presence_ttl": "20s", "convergence_interval": "10s", "convergence_lease_ttl": "6s",
		  "stale_unclaimed": "2m", "operation_retention": "48h", "scale_down_stabilization": "2m"}`,
		`{"listen_address": "127.0.0.1:0", "data_dir": "/var/lib/bbs"}`,
		`{"listen_address": "127.0.0.1:8889", "data_dir": "/var/lib/bbs", "listen_adress": "typo"}`,
		`{"listen_address": 8889}`,
		`{"listen_address": "127.0.0.1:8889", "data_dir": "d", "cell_presence_ttl": "10ms"}`,
		`{"listen_address": "127.0.0.1:8889", "data_dir": "d", "shutdown_timeout": "-1s"}`,
		`{"listen_address": "127.0.0.1:8889", "data_dir": "d", "board_id": " bbs "}`,
		`{"listen_address": "127.0.0.1:8889", "data_dir": "d", "database_driver": "oracle"}`,
		`{"listen_address": "127.0.0.1:8889", "data_dir": "d", "max_open_connections": 1e100}`,
		`{"listen_address": "127.0.0.1:8889", "data_dir": "d", "tls": {"ca_cert": "/nonexistent/ca.crt"}}`,
		`{"listen_address": "127.0.0.1:99999", "data_dir": "d"}`,
		`{"listen_address": "127.0.0.1:8889", "data_dir": "d", "log_level": "loud\u0000"}`,
		`null`,
		`[]`,
		`{"listen_address": "127.0.0.1:8889",`,
		"\xff",
	}
	for _, seed := range seeds {
		f.Add([]byte(seed))
	}
	keys := configKeys(reflect.TypeOf(Config{}), "")
	path := filepath.Join(f.TempDir(), "bbs.json")

	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := buildConfig(path, false, "", "")
		if err != nil {
			checkConfigError(t, err, keys)
			return
		}
		if err := cfg.validate(); err != nil {
			t.Fatalf("an accepted config fails validation again: %v", err)
		}
		// What main reads from an accepted config.
		_ = cfg.shutdownTimeout()
		_ = cfg.cellPresenceTTL()
		_ = cfg.runnerConfig()
		_ = cfg.dsn()
		_ = newLogger(cfg.LogLevel)
	})
}

// configKeys lists the keys a config struct has, nested ones as
// "parent.key".
func configKeys(typ reflect.Type, prefix string) map[string]bool {
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
			for key := range configKeys(inner, prefix+name+".") {
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

// checkConfigError holds a refused config to a printable UTF-8 message
// that names, when it is about one key's value, a key the config has.
func checkConfigError(t *testing.T, err error, keys map[string]bool) {
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
