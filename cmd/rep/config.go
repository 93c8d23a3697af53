package main

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/corkboard/corkboard/internal/certs"
	"github.com/corkboard/corkboard/internal/configfile"
	"github.com/corkboard/corkboard/rep"
	"github.com/corkboard/corkboard/rep/executor"
	"github.com/corkboard/corkboard/rep/isolation"
)

// Config is the rep's JSON config file (-config FILE). Keys are
// snake_case; an unknown key is an error, so a typo does not silently fall
// back to a default. Durations are Go durations as strings ("30s").
//
//	{
//	  "cell_id": "cell-z1",
//	  "zone": "z1",
//	  "capacity": {"memory_mb": 4096, "disk_mb": 8192, "instances": 32},
//	  "placement_tags": [],
//	  "board_url": "http://127.0.0.1:8889",
//	  "listen_address": "127.0.0.1:1800",
//	  "rep_url": "http://127.0.0.1:1800",
//	  "data_dir": "/var/lib/rep",
//	  "apps_dir": "/var/lib/apps",
//	  "address": "127.0.0.1",
//	  "port_range": "61000-61099",
//	  "poll_interval": "10s",
//	  "retry_interval": "1s",
//	  "event_stream": true,
//	  "bulk_sync_interval": "30s",
//	  "occupancy_batch_interval": "250ms",
//	  "health_report_interval": "10s",
//	  "evacuation_timeout": "10m",
//	  "stop_grace_period": "5s",
//	  "stop_timeout": "10s",
//	  "instance_log_limit_mb": 10,
//	  "asset_cache_mb": 1024,
//	  "log_level": "info",
//	  "isolation": "auto",
//	  "instance_uid_range": {"first": 200000, "count": 65536},
//	  "instance_max_processes": 1024,
//	  "instance_max_open_files": 65536,
//	  "tls": {"ca_cert": "/etc/corkboard/ca.crt", "cert": "/etc/corkboard/cell-z1.crt", "key": "/etc/corkboard/cell-z1.key"}
//	}
type Config struct {
	// CellID names the cell. Required.
	CellID string `json:"cell_id"`
	// Zone is the cell's failure domain; placement spreads an LRP's
	// instances across zones.
	Zone string `json:"zone"`
	// Capacity is what the cell offers. Required, every field above 0.
	Capacity *Capacity `json:"capacity"`
	// PlacementTags are the tags the cell offers.
	PlacementTags []string `json:"placement_tags"`
	// BoardURL is where the board (bbs) answers. Required.
	BoardURL string `json:"board_url"`
	// ListenAddress is host:port of the rep's own HTTP server (logs,
	// instances, drain, the local instance endpoint). Required; port 0
	// picks a free port.
	ListenAddress string `json:"listen_address"`
	// RepURL is the rep's URL as the board and cork see it. Defaults to
	// http:// (https:// with tls) and the listen address (its host
	// replaced by address when it listens on all addresses).
	RepURL string `json:"rep_url"`
	// DataDir holds the instances' working directories and logs. Required.
	// The rep makes it 0700, the instances' directories 0700 (owned by
	// the instance's uid when isolated) and their logs 0600.
	DataDir string `json:"data_dir"`
	// AppsDir is where relative action paths resolve, for definitions
	// without assets. Defaults to the rep's working directory. Isolated
	// instances see it read-only, so it must be o+rx (the rep warns at
	// start when it is not).
	AppsDir string `json:"apps_dir"`
	// Address is the host instances answer on, as net info says.
	Address string `json:"address"`
	// PortRange is the host ports handed to instances, "first-last"
	// inclusive ("61000-61099"). An isolated instance may bind only the
	// ports of it it was given (where the kernel has Landlock's network
	// rules, Linux 6.7); keep it outside the kernel's ephemeral range
	// (net.ipv4.ip_local_port_range), or instances may not bind port 0.
	// It holds at least capacity.instances ports (the board counts
	// instance slots, not ports); an instance takes one per port of its
	// definition, so a cell of many-port instances wants more.
	PortRange string `json:"port_range"`
	// PollInterval is how often the rep lists its cell's instances while
	// it follows the board's event stream, which tells it of a change at
	// once: a safety net.
	PollInterval string `json:"poll_interval"`
	// RetryInterval is how often the rep lists its cell's instances while
	// it has no event stream, tries a call the board did not answer again,
	// and reports while it evacuates ("1s", or poll_interval when shorter).
	RetryInterval string `json:"retry_interval"`
	// EventStream, true by default, has the rep follow the board's event
	// stream; false leaves it to poll every retry_interval. A pointer, so
	// that an explicit false is told from the default.
	EventStream *bool `json:"event_stream"`
	// BulkSyncInterval is how often it reports everything it runs.
	BulkSyncInterval string `json:"bulk_sync_interval"`
	// OccupancyBatchInterval is how long it gathers what instances say of
	// themselves (occupied or ready) before it sends it all in one call.
	OccupancyBatchInterval string `json:"occupancy_batch_interval"`
	// HealthReportInterval is how often it reports its instances' health
	// checks and memory to the board; "0s" sends none.
	HealthReportInterval string `json:"health_report_interval"`
	// EvacuationTimeout bounds an evacuation.
	EvacuationTimeout string `json:"evacuation_timeout"`
	// StopGracePeriod is how long an unroutable instance keeps running
	// before SIGTERM.
	StopGracePeriod string `json:"stop_grace_period"`
	// StopTimeout is how long after SIGTERM an instance gets SIGKILL.
	StopTimeout string `json:"stop_timeout"`
	// UnroutableRetryTimeout bounds how long a stop keeps asking a board
	// that does not answer (every retry_interval) to mark its instance
	// unroutable before it stops the instance anyway; an
	// Unavailable answer starts it again.
	UnroutableRetryTimeout string `json:"unroutable_retry_timeout"`
	// InstanceLogLimitMB caps each instance's log, in MiB (at least
	// 1): past it, the log (instances/.INSTANCE_GUID.log in the data
	// dir) becomes .log.1 and a fresh one starts, so an instance's logs
	// take at most twice this much disk. A pointer, so that an explicit 0
	// is refused rather than taken for the default.
	InstanceLogLimitMB *int32 `json:"instance_log_limit_mb"`
	// AssetCacheMB bounds the cell's cache of definitions' assets (in
	// data_dir/assets, keyed by checksum), in MiB (at least 1): past
	// it, the least recently used downloads that no start uses go. A
	// pointer, so that an explicit 0 is refused rather than taken for the
	// default.
	AssetCacheMB *int32 `json:"asset_cache_mb"`
	// AllowLinkLocalAssetHosts lets asset downloads connect to link-local
	// addresses (169.254.0.0/16, fe80::/10) and the cloud metadata
	// services (100.100.100.200, fd00:ec2::254). Off by default: the rep
	// refuses such a connection whatever name or redirect led to it. The
	// board has its own setting of the same name for the URLs it takes.
	AllowLinkLocalAssetHosts bool `json:"allow_link_local_asset_hosts"`
	// FileAssetDirs are the directories file:// assets may be read from
	// (absolute paths; symbolic links resolved at start). None by
	// default, which refuses every file:// asset: the rep reads them as
	// root for whoever may desire an LRP, so name only directories that
	// hold nothing but droplets.
	FileAssetDirs []string `json:"file_asset_dirs"`
	// LogLevel is debug, info (the default), error or fatal: lager JSON
	// lines on stdout.
	LogLevel string `json:"log_level"`
	// TLS, when set, is the cell's certificate (corkboard://cell/<cell_id>)
	// and the CA: the rep's server then serves TLS and requires client
	// certificates of the CA (the board and operators may drain it; API
	// clients and operators may read its instances and logs), and its
	// client presents the certificate to the board; board_url and rep_url
	// must then be https. The local instance endpoint
	// (CORK_INSTANCE_URL) moves to a plain HTTP listener of its own on
	// 127.0.0.1 (instances have no certificates). ca_cert,
	// cert and key are PEM file paths, all three required.
	TLS *certs.Files `json:"tls"`
	// Isolation is how instances are kept apart from the rep and from
	// each other (see package rep/isolation): "auto" (the default) isolates
	// them where the rep can (Linux, root, namespaces) and otherwise runs
	// them as the rep's own user, which the rep logs at start and
	// registers; "full" isolates them or the rep exits, naming what is
	// missing; "none" never isolates them.
	Isolation string `json:"isolation"`
	// InstanceUIDRange is the uids (and gids) isolated instances run as,
	// one of its own per running instance; the default range is above the ids of people, system services and
	// rootless containers' subordinate ids.
	InstanceUIDRange *isolation.UIDRange `json:"instance_uid_range"`
	// InstanceMaxProcesses bounds the processes and threads of each
	// isolated instance: RLIMIT_NPROC of its uid, and pids.max of
	// its cgroup where a pids controller is there (v1, or v2 with pids in
	// the rep's cgroup's cgroup.subtree_control).
	InstanceMaxProcesses *uint64 `json:"instance_max_processes"`
	// InstanceMaxOpenFiles is each isolated instance process's
	// RLIMIT_NOFILE (at most the rep's own hard limit).
	InstanceMaxOpenFiles *uint64 `json:"instance_max_open_files"`

	// path is the config file's: hidden from instances, like the
	// certificate and key.
	path string
}

// Capacity is the cell's capacity.
type Capacity struct {
	// MemoryMB is the memory, in MiB, the instances placed on the cell
	// may reserve in all (their definitions' memory_mb).
	MemoryMB int32 `json:"memory_mb"`
	// DiskMB is the disk, in MiB, they may reserve in all (their
	// definitions' disk_mb).
	DiskMB int32 `json:"disk_mb"`
	// Instances is how many instances the cell runs at most.
	Instances int32 `json:"instances"`
}

const (
	defaultAddress            = "127.0.0.1"
	defaultPortRange          = "61000-61099"
	defaultInstanceLogLimitMB = executor.DefaultLogLimit >> 20
	defaultAssetCacheMB       = executor.DefaultAssetCacheBytes >> 20
)

// loadConfig reads a config file, fills in defaults and validates it.
// Errors name the key.
func loadConfig(path string) (Config, error) {
	var cfg Config
	if err := configfile.Load(path, &cfg); err != nil {
		return Config{}, err
	}
	cfg.applyDefaults()
	if err := cfg.validate(); err != nil {
		return Config{}, err
	}
	cfg.path = path
	return cfg, nil
}

func (c *Config) applyDefaults() {
	if c.Address == "" {
		c.Address = defaultAddress
	}
	if c.PortRange == "" {
		c.PortRange = defaultPortRange
	}
	if c.PollInterval == "" {
		c.PollInterval = rep.DefaultPollInterval.String()
	}
	if c.EventStream == nil {
		follow := true
		c.EventStream = &follow
	}
	if c.BulkSyncInterval == "" {
		c.BulkSyncInterval = rep.DefaultBulkSyncInterval.String()
	}
	if c.OccupancyBatchInterval == "" {
		c.OccupancyBatchInterval = rep.DefaultOccupancyBatchInterval.String()
	}
	if c.HealthReportInterval == "" {
		c.HealthReportInterval = rep.DefaultHealthReportInterval.String()
	}
	if c.EvacuationTimeout == "" {
		c.EvacuationTimeout = rep.DefaultEvacuationTimeout.String()
	}
	if c.StopGracePeriod == "" {
		c.StopGracePeriod = rep.DefaultStopGracePeriod.String()
	}
	if c.UnroutableRetryTimeout == "" {
		c.UnroutableRetryTimeout = rep.DefaultUnroutableRetryTimeout.String()
	}
	if c.StopTimeout == "" {
		c.StopTimeout = executor.DefaultStopTimeout.String()
	}
	if c.InstanceLogLimitMB == nil {
		limit := int32(defaultInstanceLogLimitMB)
		c.InstanceLogLimitMB = &limit
	}
	if c.AssetCacheMB == nil {
		limit := int32(defaultAssetCacheMB)
		c.AssetCacheMB = &limit
	}
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	// The isolation keys' defaults are the isolation package's.
	iso := isolation.Config{}.WithDefaults()
	if c.Isolation == "" {
		c.Isolation = string(iso.Mode)
	}
	if c.InstanceUIDRange == nil {
		uids := iso.UIDs
		c.InstanceUIDRange = &uids
	}
	if c.InstanceMaxProcesses == nil {
		c.InstanceMaxProcesses = &iso.MaxProcesses
	}
	if c.InstanceMaxOpenFiles == nil {
		c.InstanceMaxOpenFiles = &iso.MaxOpenFiles
	}
}

// validate checks every key and names the first bad one.
func (c Config) validate() error {
	if c.CellID == "" {
		return configfile.Invalid("cell_id", "required, e.g. \"cell-z1\"")
	}
	if c.Capacity == nil {
		return configfile.Invalid("capacity", "required, e.g. {\"memory_mb\": 4096, \"disk_mb\": 8192, \"instances\": 32}")
	}
	for _, f := range []struct {
		key   string
		value int32
	}{
		{"capacity.memory_mb", c.Capacity.MemoryMB},
		{"capacity.disk_mb", c.Capacity.DiskMB},
		{"capacity.instances", c.Capacity.Instances},
	} {
		if f.value <= 0 {
			return configfile.Invalid(f.key, fmt.Sprintf("must be above 0, got %d", f.value))
		}
	}
	for i, dir := range c.FileAssetDirs {
		if !filepath.IsAbs(dir) {
			return configfile.Invalid(fmt.Sprintf("file_asset_dirs[%d]", i), fmt.Sprintf("must be an absolute path, got %q", dir))
		}
	}
	for i, tag := range c.PlacementTags {
		if strings.TrimSpace(tag) == "" {
			return configfile.Invalid(fmt.Sprintf("placement_tags[%d]", i), "must not be empty")
		}
	}
	if err := validateURL("board_url", c.BoardURL); err != nil {
		return err
	}
	if err := c.TLS.Validate("tls"); err != nil {
		return err
	}
	// A board that serves TLS requires a client certificate, and a rep
	// with one must not send it, or its calls, in the clear.
	switch scheme := urlScheme(c.BoardURL); {
	case c.TLS != nil && scheme != "https":
		return configfile.Invalid("board_url", fmt.Sprintf("%q must be https:// when tls is set", c.BoardURL))
	case c.TLS == nil && scheme == "https":
		return configfile.Invalid("tls", fmt.Sprintf("required for an https board_url (%q): the board wants the cell's certificate (tls.ca_cert, tls.cert, tls.key)", c.BoardURL))
	}
	if c.ListenAddress == "" {
		return configfile.Invalid("listen_address", "required, e.g. \"127.0.0.1:1800\"")
	}
	if _, port, err := net.SplitHostPort(c.ListenAddress); err != nil {
		return configfile.Invalid("listen_address", fmt.Sprintf("%q is not host:port", c.ListenAddress))
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return configfile.Invalid("listen_address", fmt.Sprintf("port %q is not a number from 0 to 65535", port))
	}
	if c.RepURL != "" {
		if err := validateURL("rep_url", c.RepURL); err != nil {
			return err
		}
		if c.TLS != nil && urlScheme(c.RepURL) != "https" {
			return configfile.Invalid("rep_url", fmt.Sprintf("%q must be https:// as the rep serves HTTPS with tls", c.RepURL))
		}
	}
	if c.DataDir == "" {
		return configfile.Invalid("data_dir", "required: the instances' working directories go there")
	}
	if c.AppsDir != "" {
		if info, err := os.Stat(c.AppsDir); err != nil || !info.IsDir() {
			return configfile.Invalid("apps_dir", fmt.Sprintf("%q is not a directory", c.AppsDir))
		}
	}
	if net.ParseIP(c.Address) == nil && strings.ContainsAny(c.Address, " /:") {
		return configfile.Invalid("address", fmt.Sprintf("%q is not a host name or IP address", c.Address))
	}
	first, last, err := parsePortRange(c.PortRange)
	if err != nil {
		return configfile.Invalid("port_range", err.Error())
	}
	// Every instance with a port takes one of the range's: fewer ports
	// than instances would have the board place instances the rep cannot
	// start (each a crash, "port range ... exhausted"), as the board
	// counts instance slots, not ports.
	if ports := int64(last) - int64(first) + 1; ports < int64(c.Capacity.Instances) {
		return configfile.Invalid("port_range", fmt.Sprintf("%q holds %d ports, fewer than capacity.instances (%d): every instance with a port needs its own",
			c.PortRange, ports, c.Capacity.Instances))
	}
	if c.RetryInterval != "" {
		if err := configfile.CheckDurations(configfile.Duration{Key: "retry_interval", Value: c.RetryInterval}); err != nil {
			return err
		}
	}
	if !c.healthReportsDisabled() {
		if err := configfile.CheckDurations(configfile.Duration{Key: "health_report_interval", Value: c.HealthReportInterval, Least: 100 * time.Millisecond}); err != nil {
			return configfile.Invalid("health_report_interval", fmt.Sprintf("%q is neither \"0s\" (no reports) nor a duration of at least 100ms like \"10s\"", c.HealthReportInterval))
		}
	}
	if err := configfile.CheckDurations(
		configfile.Duration{Key: "poll_interval", Value: c.PollInterval},
		configfile.Duration{Key: "bulk_sync_interval", Value: c.BulkSyncInterval},
		configfile.Duration{Key: "occupancy_batch_interval", Value: c.OccupancyBatchInterval},
		configfile.Duration{Key: "evacuation_timeout", Value: c.EvacuationTimeout},
		configfile.Duration{Key: "stop_grace_period", Value: c.StopGracePeriod},
		configfile.Duration{Key: "stop_timeout", Value: c.StopTimeout},
		configfile.Duration{Key: "unroutable_retry_timeout", Value: c.UnroutableRetryTimeout},
	); err != nil {
		return err
	}
	if *c.InstanceLogLimitMB < 1 {
		return configfile.Invalid("instance_log_limit_mb", fmt.Sprintf("must be 1 or more, got %d", *c.InstanceLogLimitMB))
	}
	if *c.AssetCacheMB < 1 {
		return configfile.Invalid("asset_cache_mb", fmt.Sprintf("must be 1 or more, got %d", *c.AssetCacheMB))
	}
	if _, err := lager.LogLevelFromString(c.LogLevel); err != nil {
		return configfile.Invalid("log_level", fmt.Sprintf("%q is not one of debug, info, error, fatal", c.LogLevel))
	}
	if _, err := isolation.ParseMode(c.Isolation); err != nil {
		return configfile.Invalid("isolation", err.Error())
	}
	if c.InstanceUIDRange != nil {
		if err := c.InstanceUIDRange.Validate(); err != nil {
			return configfile.Invalid("instance_uid_range", err.Error())
		}
	}
	for _, f := range []struct {
		key   string
		value *uint64
	}{
		{"instance_max_processes", c.InstanceMaxProcesses},
		{"instance_max_open_files", c.InstanceMaxOpenFiles},
	} {
		if f.value != nil && *f.value < 1 {
			return configfile.Invalid(f.key, fmt.Sprintf("must be 1 or more, got %d", *f.value))
		}
	}
	return nil
}

// isolationConfig is the executor's isolation: the mode, the uid range
// and limits, and the rep's own files for instances not to see.
func (c Config) isolationConfig() isolation.Config {
	mode, _ := isolation.ParseMode(c.Isolation) // validated
	cfg := isolation.Config{Mode: mode}
	if c.InstanceUIDRange != nil {
		cfg.UIDs = *c.InstanceUIDRange
	}
	if c.InstanceMaxProcesses != nil {
		cfg.MaxProcesses = *c.InstanceMaxProcesses
	}
	if c.InstanceMaxOpenFiles != nil {
		cfg.MaxOpenFiles = *c.InstanceMaxOpenFiles
	}
	if c.path != "" {
		cfg.HideFiles = append(cfg.HideFiles, c.path)
	}
	if c.TLS != nil {
		cfg.HideFiles = append(cfg.HideFiles, c.TLS.CACert, c.TLS.Cert, c.TLS.Key)
	}
	return cfg
}

func validateURL(key, value string) error {
	if value == "" {
		return configfile.Invalid(key, "required, e.g. \"http://127.0.0.1:8889\"")
	}
	u, err := url.Parse(value)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return configfile.Invalid(key, fmt.Sprintf("%q is not an http(s) URL", value))
	}
	return nil
}

// urlScheme is the scheme of a URL validateURL accepted.
func urlScheme(value string) string {
	u, err := url.Parse(value)
	if err != nil {
		return ""
	}
	return u.Scheme
}

// scheme is what the rep's server speaks.
func (c Config) scheme() string {
	if c.TLS != nil {
		return "https"
	}
	return "http"
}

// parsePortRange reads "first-last".
func parsePortRange(value string) (uint32, uint32, error) {
	first, last, ok := strings.Cut(value, "-")
	if !ok {
		return 0, 0, fmt.Errorf("%q is not first-last, e.g. %q", value, defaultPortRange)
	}
	lo, errLo := strconv.ParseUint(strings.TrimSpace(first), 10, 16)
	hi, errHi := strconv.ParseUint(strings.TrimSpace(last), 10, 16)
	if errLo != nil || errHi != nil || lo < 1 || hi < lo {
		return 0, 0, fmt.Errorf("%q is not first-last with 1 <= first <= last <= 65535", value)
	}
	return uint32(lo), uint32(hi), nil
}

// retryInterval is the agent's RetryInterval: 0, for the agent's default,
// when retry_interval is not set.
func (c Config) retryInterval() time.Duration {
	if c.RetryInterval == "" {
		return 0
	}
	return configfile.MustDuration(c.RetryInterval)
}

// instanceLogLimit is the executor's LogLimit, in bytes.
func (c Config) instanceLogLimit() int64 {
	return int64(*c.InstanceLogLimitMB) << 20
}

// assetCacheBytes is the executor's AssetCacheBytes.
func (c Config) assetCacheBytes() int64 {
	return int64(*c.AssetCacheMB) << 20
}

// repURL is the advertised URL: rep_url, or http:// (https:// with tls)
// and the address the server listens on (listenAddr, the real one, for
// port 0), with an unspecified host replaced by address.
func (c Config) repURL(listenAddr string) string {
	if c.RepURL != "" {
		return strings.TrimRight(c.RepURL, "/")
	}
	return c.scheme() + "://" + reachable(listenAddr, c.Address)
}

// reachable replaces an unspecified host (0.0.0.0, ::, empty) in hostPort
// with host.
func reachable(hostPort, host string) string {
	h, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return hostPort
	}
	if ip := net.ParseIP(h); h == "" || (ip != nil && ip.IsUnspecified()) {
		h = host
	}
	return net.JoinHostPort(h, port)
}

// healthReportsDisabled says whether health_report_interval is zero: the
// rep sends no health reports.
func (c *Config) healthReportsDisabled() bool {
	d, err := time.ParseDuration(c.HealthReportInterval)
	return err == nil && d == 0
}
