package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/corkboard/corkboard/internal/configfile/configcheck"
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
		  "stale_unclaimed": "2m", "operation_retention": "48h", "scale_down_stabilization": "2m", "max_rollouts_in_flight": 10}`,
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
	keys := configcheck.Keys(reflect.TypeOf(Config{}))
	path := filepath.Join(f.TempDir(), "bbs.json")

	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := buildConfig(path, false, "", "")
		if err != nil {
			configcheck.CheckError(t, err, keys)
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
