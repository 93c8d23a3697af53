package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/corkboard/corkboard/internal/configfile"
	"github.com/corkboard/corkboard/internal/configfile/configcheck"
)

// FuzzRepConfig loads arbitrary bytes as the rep's config file, as
// `rep -config FILE` does (loadConfig: load, defaults, validate). It must
// not panic; an error is printable UTF-8 and, when it is about a value,
// names a key the config has; a config it accepts gives every duration and
// setting the rep then reads without panicking.
func FuzzRepConfig(f *testing.F) {
	seeds := []string{
		`{"cell_id": "cell-z1", "zone": "z1", "capacity": {"memory_mb": 4096, "disk_mb": 8192, "instances": 32},
		  "placement_tags": ["ssd"], "board_url": "http://127.0.0.1:8889", "listen_address": "127.0.0.1:1800",
		  "rep_url": "http://127.0.0.1:1800", "data_dir": "/var/lib/rep", "address": "127.0.0.1",
		  "port_range": "61000-61099", "poll_interval": "10s", "retry_interval": "1s", "event_stream": true,
		  "bulk_sync_interval": "30s",
		  "occupancy_batch_interval": "250ms", "evacuation_timeout": "10m", "stop_grace_period": "5s",
		  "stop_timeout": "10s", "unroutable_retry_timeout": "10s", "instance_log_limit_mb": 10,
		  "asset_cache_mb": 1024, "log_level": "info"}`,
		`{"cell_id": "c", "capacity": {"memory_mb": 1, "disk_mb": 1, "instances": 1}, "board_url": "http://b",
		  "listen_address": ":0", "data_dir": "d"}`,
		`{"cell_id": "c", "capacity": {"memory_mb": 0, "disk_mb": 1, "instances": 1}}`,
		`{"cell_id": "c", "capacity": {"memory_mb": "lots"}}`,
		`{"cell_id": "c", "capacity": {"memory_mb": 1, "disk_mb": 1, "instances": 1, "gpus": 2}}`,
		`{"cell_id": "c", "capacity": {"memory_mb": 1, "disk_mb": 1, "instances": 1}, "placement_tags": ["ssd", " "]}`,
		`{"cell_id": "c", "capacity": {"memory_mb": 1, "disk_mb": 1, "instances": 1}, "board_url": "ftp://b"}`,
		`{"cell_id": "c", "capacity": {"memory_mb": 1, "disk_mb": 1, "instances": 1}, "board_url": "http://b",
		  "listen_address": ":0", "data_dir": "d", "port_range": "61099-61000"}`,
		`{"cell_id": "c", "capacity": {"memory_mb": 1, "disk_mb": 1, "instances": 1}, "board_url": "http://b",
		  "listen_address": ":0", "data_dir": "d", "instance_log_limit_mb": 0}`,
		`{"cell_id": "c", "capacity": {"memory_mb": 1, "disk_mb": 1, "instances": 1}, "board_url": "https://b",
		  "listen_address": ":0", "data_dir": "d"}`,
		`{"cell_id": "c", "capacity": {"memory_mb": 1, "disk_mb": 1, "instances": 1}, "board_url": "http://b",
		  "listen_address": ":0", "data_dir": "d", "poll_interval": "1 second"}`,
		`{"cell_id": "c", "capacity": {"memory_mb": 1, "disk_mb": 1, "instances": 1}, "board_url": "http://b",
		  "listen_address": ":0", "data_dir": "d", "retry_interval": "0s", "event_stream": "yes"}`,
		`{"cell_id": "c", "capacity": {"memory_mb": 1, "disk_mb": 1, "instances": 1}, "board_url": "http://b",
		  "listen_address": ":0", "data_dir": "d", "asset_cache_mb": 3000000000}`,
		`{"cell_id": "cell\u0000z1"}`,
		`{"placement_tags": "ssd"}`,
		`null`,
		`{`,
		"\xff",
	}
	for _, seed := range seeds {
		f.Add([]byte(seed))
	}
	keys := configcheck.Keys(reflect.TypeOf(Config{}))
	path := filepath.Join(f.TempDir(), "rep.json")

	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := loadConfig(path)
		if err != nil {
			configcheck.CheckError(t, err, keys)
			return
		}
		if err := cfg.validate(); err != nil {
			t.Fatalf("an accepted config fails validation again: %v", err)
		}
		// What main reads from an accepted config.
		if _, _, err := parsePortRange(cfg.PortRange); err != nil {
			t.Fatalf("accepted port_range %q does not parse: %v", cfg.PortRange, err)
		}
		for _, d := range []string{cfg.PollInterval, cfg.BulkSyncInterval, cfg.OccupancyBatchInterval,
			cfg.EvacuationTimeout, cfg.StopGracePeriod, cfg.StopTimeout, cfg.UnroutableRetryTimeout} {
			_ = configfile.MustDuration(d)
		}
		_ = cfg.retryInterval()
		if cfg.EventStream == nil {
			t.Fatal("an accepted config has no event_stream")
		}
		if cfg.instanceLogLimit() < 1 || cfg.assetCacheBytes() < 1 {
			t.Fatalf("accepted limits are not positive: %d, %d", cfg.instanceLogLimit(), cfg.assetCacheBytes())
		}
		_ = cfg.repURL("0.0.0.0:1800")
		_ = newLogger(cfg.LogLevel)
	})
}
