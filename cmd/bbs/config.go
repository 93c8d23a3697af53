package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/convergence/runner"
	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/admission"
	"github.com/corkboard/corkboard/internal/certs"
	"github.com/corkboard/corkboard/internal/configfile"
	"github.com/corkboard/corkboard/internal/httpserver"
)

// Config is the board's JSON config file (-config FILE). Keys are
// snake_case; an unknown key is an error, so a typo does not silently fall
// back to a default.
//
//	{
//	  "listen_address": "0.0.0.0:8889",
//	  "database_driver": "postgres",
//	  "database_dsn": "postgres://bbs@db.internal/bbs?sslmode=require",
//	  "log_level": "info",
//	  "max_open_connections": 64,
//	  "write_lanes": 0,
//	  "database_timeout": "10s",
//	  "shutdown_timeout": "30s",
//	  "board_id": "bbs-0",
//	  "cell_presence_ttl": "30s",
//	  "convergence_interval": "30s",
//	  "convergence_lease_ttl": "15s",
//	  "convergence_full_read_interval": "10m",
//	  "convergence_trigger_spacing": "0s",
//	  "stale_unclaimed": "60s",
//	  "scale_down_stabilization": "2m",
//	  "event_retention": "1h",
//	  "event_retention_max": 1000000,
//	  "event_poll_interval": "100ms",
//	  "max_requests_in_flight": 1000,
//	  "reserved_cell_requests": 200,
//	  "max_requests_per_client": 250,
//	  "max_list_streams_per_client": 10,
//	  "max_body_readers_per_client": 100,
//	  "max_event_streams_per_client": 100,
//	  "max_connections_per_address": 1000,
//	  "max_connections": 0,
//	  "max_event_log_readers_per_client": 0,
//	  "request_body_timeout": "10s",
//	  "list_write_timeout": "1m",
//	  "tls": {"ca_cert": "/etc/corkboard/ca.crt", "cert": "/etc/corkboard/board.crt", "key": "/etc/corkboard/board.key"},
//	  "encryption_keys": {"k1": "<base64 of 32 random bytes>"},
//	  "active_key_label": "k1"
//	}
type Config struct {
	// ListenAddress is host:port for the API and /metrics. Required.
	ListenAddress string `json:"listen_address"`
	// DatabaseDriver is sqlite (the default), postgres or mysql.
	DatabaseDriver string `json:"database_driver"`
	// DatabaseDSN is the driver's DSN; for sqlite, a file path. Required for
	// postgres and mysql; for sqlite it defaults to board.db in DataDir.
	// MySQL gets multiStatements=true, parseTime=false and
	// interpolateParams=true unless the DSN sets them; multiStatements=false
	// and clientFoundRows=true are refused.
	DatabaseDSN string `json:"database_dsn"`
	// DataDir holds the SQLite database when DatabaseDSN is empty. The
	// board makes it 0700 (tightening it if it was looser), the database
	// file 0600.
	DataDir string `json:"data_dir"`
	// LogLevel is debug, info (the default), error or fatal: lager JSON
	// lines on stdout.
	LogLevel string `json:"log_level"`
	// MaxOpenConnections caps the database connection pool; 0 keeps the
	// driver's default (8 for sqlite, 64 otherwise).
	MaxOpenConnections int `json:"max_open_connections"`
	// WriteLanes is how many lanes coalesce concurrent API writes
	// (desire, update, remove, lifecycle calls) into shared transactions
	// (group commit: writes that arrive while others are being written
	// share one BEGIN, event append and COMMIT, each keeping its own result
	// and error; an LRP's writes always take the same lane); 0 keeps
	// the database's default (1 on SQLite, off on Postgres and MySQL: a
	// write waiting for a row lock holds up its lane), -1 turns coalescing
	// off.
	WriteLanes int `json:"write_lanes"`
	// DatabaseTimeout bounds each API call's wait for the database and
	// each read or write on a Postgres or MySQL connection, the dial
	// included (at least 100ms): while the database is down,
	// restarting or stalled, calls fail with Unavailable after this long
	// instead of hanging (docs/running.md, Database outages).
	DatabaseTimeout string `json:"database_timeout"`
	// ShutdownTimeout bounds how long SIGTERM waits for in-flight requests,
	// as a Go duration.
	ShutdownTimeout string `json:"shutdown_timeout"`
	// BoardID names this board as the owner of the convergence lease; it
	// must differ between boards sharing a database, and should stay the
	// same across restarts of one board, so that a restarted board takes
	// its own lease back at once instead of waiting out its TTL. Defaults
	// to the host name and the first 8 hex digits of SHA-256 over the host
	// name, the absolute data dir and the listen address: the same on every
	// start of one config (even after SIGKILL), and different for two
	// boards on one host, which cannot share a listen address. With port 0
	// the suffix is random, new on every start. Boards on different
	// machines with the same host name, data dir and listen address
	// (containers given one host name) must set it (defaultBoardID).
	BoardID string `json:"board_id"`
	// CellPresenceTTL is how long a cell's registration lasts unless its
	// rep renews it.
	CellPresenceTTL string `json:"cell_presence_ttl"`
	// ConvergenceInterval is the period of the full convergence pass.
	ConvergenceInterval string `json:"convergence_interval"`
	// ConvergenceLeaseTTL is how long the convergence lease lasts unless
	// the owner renews it (at least 1s); the owner renews it every
	// third of this, and after the owner dies another board takes over
	// within about this long.
	ConvergenceLeaseTTL string `json:"convergence_lease_ttl"`
	// ConvergenceFullReadInterval is how often the lease owner reads every
	// row again; between, a pass reads only the LRPs the event log
	// names since the last one.
	ConvergenceFullReadInterval string `json:"convergence_full_read_interval"`
	// ConvergenceTriggerSpacing is the least time from the end of one
	// triggered convergence pass (the pass an API write or a cell's report
	// asks for) to the start of the next: triggers that come meanwhile
	// wait and share that pass, and a trigger after a quiet spell runs at
	// once. Empty keeps the database's default, which depends on
	// DatabaseDriver (the default shown is SQLite's): 50ms on SQLite,
	// whose one writer the passes share with every API write (desires 15%
	// faster in bbs-load peer), 0s (no spacing) on Postgres and MySQL,
	// where it gained nothing measurable (docs/perf-writes.md).
	ConvergenceTriggerSpacing string `json:"convergence_trigger_spacing"`
	// StaleUnclaimed is how long an instance placed on a cell may wait to
	// be claimed before it is placed again.
	StaleUnclaimed string `json:"stale_unclaimed"`
	// OperationRetention is how long ended operations are kept;
	// each LRP keeps its newest 100 whatever their age. The lease owner's
	// full passes delete the rest (each for up to 2 s), so under a steady
	// write rate the table holds about what that rate writes in the
	// retention, plus those 100 an LRP: 1,000 updates a second keep some
	// 600 million operations at the default, a few hundred bytes each
	// (issue 28); a busy board wants a shorter retention.
	OperationRetention string `json:"operation_retention"`
	// ScaleDownStabilization is the autoscaler's scale-down window for
	// LRPs that set none: an autoscaled count goes down only to the
	// highest count wanted within it. An LRP's
	// autoscaling.scale_down_stabilization_ms overrides it
	// (docs/autoscaling.md).
	ScaleDownStabilization string `json:"scale_down_stabilization"`
	// MaxRolloutsInFlight is the most rollouts that move instances at once
	// across the board (0, the default: no limit); the others wait
	// QUEUED, first in first out, with their place in cork rollout
	// status, and reverts and fast rollbacks jump the queue
	// (convergence.GovernRollouts, docs/rollouts.md).
	MaxRolloutsInFlight int `json:"max_rollouts_in_flight"`
	// BlockedAlertAfter is how long a rollout may stay blocked by one
	// cause (its blocked_by's since) before the metric
	// corkboard_rollouts_blocked_too_long counts it, which the
	// CorkboardRolloutBlocked alert watches (docs/rollouts.md, "Why a
	// rollout is stuck"); 0s never counts one.
	BlockedAlertAfter string `json:"blocked_alert_after"`
	// MaxStartsPerCellPerSecond is the most instances placement gives one
	// cell within any second (0, the default: no limit); the others wait,
	// unplaced with a placement error saying so, for a pass once the cell
	// may start again. New instances, restarts, rollout replacements and
	// moves all count (convergence.StartsLeft, docs/fleet.md).
	MaxStartsPerCellPerSecond int `json:"max_starts_per_cell_per_second"`
	// MaxAssetDownloadsPerCell is how many asset downloads each rep runs
	// at once (0, the default: no limit); the board hands it to every rep
	// in its registration answers, and the rest of a cell's downloads
	// wait their turn, first in first out (models.DownloadsToBegin).
	MaxAssetDownloadsPerCell int `json:"max_asset_downloads_per_cell"`
	// QuarantineOnCrashSpike quarantines a cell once its crashes spike
	// (the rule of corkboard_cell_crash_spike, counting only crashes since
	// an operator last cleared the cell): placement puts nothing new on it
	// until an operator clears it with cork cell clear; its instances keep
	// running. Off by default: a spike is only reported
	// (convergence.QuarantineSpikes, docs/fleet.md).
	QuarantineOnCrashSpike bool `json:"quarantine_on_crash_spike"`
	// EventRetention bounds the age of the event log every board serves
	// /v1/events from: events older than this (at least 1m; by the
	// database's clock) are deleted, in batches; a client resuming from
	// before them gets events_lost.
	EventRetention string `json:"event_retention"`
	// EventRetentionMax bounds the event log's length: events beyond the
	// newest this many (at least 10,000) are deleted too. The
	// count bounds the log under any steady write rate: at the default,
	// at most 1,000,000 events of some 250 bytes each (packed payload and row; issue 28),
	// however busy the board.
	EventRetentionMax int64 `json:"event_retention_max"`
	// EventPollInterval is how often the board reads the event log for
	// what other boards wrote; on Postgres a notification wakes
	// it sooner, and its own writes always do.
	EventPollInterval string `json:"event_poll_interval"`
	// AllowLinkLocalAssetHosts lets definitions' asset URLs name
	// link-local addresses (169.254.0.0/16, fe80::/10) and the cloud
	// metadata services (100.100.100.200, fd00:ec2::254,
	// metadata.google.internal, ...; see models/asset_hosts.go). Off by
	// default: an asset URL makes a cell fetch it from inside its
	// network, where those serve instance credentials. Reps have their
	// own setting of the same name.
	AllowLinkLocalAssetHosts bool `json:"allow_link_local_asset_hosts"`
	// PrometheusURL is the base URL of the Prometheus HTTP API that
	// rollouts' prometheus checks query ("http://prometheus:9090");
	// empty, those checks have no value (docs/analysis.md).
	PrometheusURL string `json:"prometheus_url"`
	// TLS, when set, makes the API listener (and /metrics) serve TLS 1.2
	// or later and require a client certificate signed by tls.ca_cert;
	// the certificate's identity (corkboard://role/..., corkboard://cell/...)
	// says what the caller may do. ca_cert, cert and key are PEM file
	// paths, all three required. Without it the board serves plain HTTP,
	// every caller may call every route, and the board logs bbs.plain-http
	// saying so (docs/security.md).
	TLS *certs.Files `json:"tls"`
	// EncryptionKeys, label → base64 of 32 random bytes (openssl rand
	// -base64 32), turn on encryption at rest: run definitions and
	// operation parameters are stored under AES-256-GCM with the key of
	// ActiveKeyLabel, and read under any of them. At start the board
	// re-encrypts, in the background, the rows not under the active key.
	// Without it they are stored plain and the board logs
	// bbs.no-encryption-at-rest.
	EncryptionKeys map[string]string `json:"encryption_keys"`
	// ActiveKeyLabel is the label of the key new rows are written under;
	// required with EncryptionKeys.
	ActiveKeyLabel string `json:"active_key_label"`
	// MaxRequestsInFlight caps the requests the board serves at once,
	// event streams aside (0: the default); a request past it is answered
	// ResourceExhausted at once rather than queued.
	MaxRequestsInFlight int `json:"max_requests_in_flight"`
	// MaxEventSubscribers caps the event streams the board serves at once
	// (0: the default); a subscription past it gets a 503 with
	// ResourceExhausted. Every rep holds one stream: size it for the
	// cells plus the routers and other followers. A fifth of the streams
	// are kept for cells' reps.
	MaxEventSubscribers int `json:"max_event_subscribers"`
	// MaxEventLogReadersPerClient caps the event streams of one client
	// that read the event log at once: streams resumed from before the
	// board's in-memory history (the newest 10,000 events), which read,
	// decode and encode the log a page at a time. The client's others
	// wait their turn, sent heartbeats; a stream whose client takes
	// nothing for 250ms gives its turn up (0: half the board's cores, at
	// least 1).
	MaxEventLogReadersPerClient int `json:"max_event_log_readers_per_client"`
	// ReservedCellRequests of the requests in flight are kept for cells'
	// own calls (registration and heartbeat, bulk report, lifecycle,
	// occupancy, health report), which API clients can never use (0: the
	// default; below max_requests_in_flight).
	ReservedCellRequests int `json:"reserved_cell_requests"`
	// MaxRequestsPerClient caps the requests one client (its certificate
	// with TLS, its address on plain HTTP) may have in flight (0: the default).
	MaxRequestsPerClient int `json:"max_requests_per_client"`
	// MaxListStreamsPerClient caps the list calls, whole lists and pages
	// alike, one client may have in flight at once (0: the default).
	MaxListStreamsPerClient int `json:"max_list_streams_per_client"`
	// MaxBodyReadersPerClient caps the requests whose bodies one client
	// may still be sending at once (0: the default).
	MaxBodyReadersPerClient int `json:"max_body_readers_per_client"`
	// MaxEventStreamsPerClient caps the event streams one client may have
	// open at once, of the board's max_event_subscribers (0: the default).
	MaxEventStreamsPerClient int `json:"max_event_streams_per_client"`
	// MaxConnectionsPerAddress caps the connections open at once from one
	// IP address; one past it is closed as it is accepted, before any TLS
	// handshake (0: the default).
	MaxConnectionsPerAddress int `json:"max_connections_per_address"`
	// MaxConnections caps the connections the board holds open at once,
	// so that clients cannot take the file descriptors its database and
	// files need (0: the board's open-file limit less 1,024, at least
	// 1,024).
	MaxConnections int `json:"max_connections"`
	// RequestBodyTimeout bounds the arrival of a request's body (at least
	// 100ms), before the request counts as in flight.
	RequestBodyTimeout string `json:"request_body_timeout"`
	// ListWriteTimeout is how long a client may take to accept one page
	// of a streamed list before it is cut off (at least 1s).
	ListWriteTimeout string `json:"list_write_timeout"`
}

const (
	// driverSQLite and driverPostgres are the database_driver values the
	// board treats specially (a data dir; the event listener).
	driverSQLite   = string(dialect.SQLite)
	driverPostgres = string(dialect.Postgres)

	defaultShutdownTimeout = 30 * time.Second
	defaultDatabaseTimeout = 10 * time.Second
	// minimumDatabaseTimeout leaves room for a round trip and a commit.
	minimumDatabaseTimeout = 100 * time.Millisecond

	// defaultConnectionsPerAddress is far above what one client needs
	// (its requests, bodies and streams are capped at a few hundred) and
	// far below the file limit of a board.
	defaultConnectionsPerAddress = 1000
	// reservedFiles of the open-file limit are kept from clients' connections
	// for the database pool, files and the board's own calls.
	reservedFiles = 1024

	defaultEventRetention    = time.Hour
	defaultEventRetentionMax = 1_000_000
	defaultEventPollInterval = 100 * time.Millisecond
	// minimumEventRetentionMax keeps at least as many events as a board's
	// in-memory history (events.DefaultHistory).
	minimumEventRetentionMax = 10_000
	// minimumEventPollInterval keeps an idle board's reads of the log
	// cheap: at most 100 a second.
	minimumEventPollInterval = 10 * time.Millisecond
	// minimumRequestBodyTimeout leaves a client on a slow link time for
	// a small body; minimumListWriteTimeout for a page of a list.
	minimumRequestBodyTimeout = 100 * time.Millisecond
	minimumListWriteTimeout   = time.Second
	// minimumTTL keeps presence and the lease from expiring between two
	// renewals that are each a database round trip.
	minimumTTL     = time.Second
	sqliteFileName = "board.db"

	// Dev mode: the port Diego's BBS uses, on loopback, data under ./.data.
	devListenAddress = "127.0.0.1:8889"
	devDataDir       = ".data"
)

// loadConfig reads a config file and fills in defaults. Errors name the field.
func loadConfig(path string) (Config, error) {
	var cfg Config
	if err := configfile.Load(path, &cfg); err != nil {
		return Config{}, err
	}
	cfg.applyDefaults()
	return cfg, nil
}

// devConfig needs no file: SQLite under dataDir, loopback only.
func devConfig(dataDir string) Config {
	if dataDir == "" {
		dataDir = devDataDir
	}
	cfg := Config{ListenAddress: devListenAddress, DataDir: dataDir}
	cfg.applyDefaults()
	return cfg
}

func (c *Config) applyDefaults() {
	if c.DatabaseDriver == "" {
		c.DatabaseDriver = driverSQLite
	}
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	if c.ShutdownTimeout == "" {
		c.ShutdownTimeout = defaultShutdownTimeout.String()
	}
	if c.DatabaseTimeout == "" {
		c.DatabaseTimeout = defaultDatabaseTimeout.String()
	}
	if c.CellPresenceTTL == "" {
		c.CellPresenceTTL = handlers.DefaultPresenceTTL.String()
	}
	if c.ConvergenceInterval == "" {
		c.ConvergenceInterval = runner.DefaultInterval.String()
	}
	if c.ConvergenceLeaseTTL == "" {
		c.ConvergenceLeaseTTL = convergence.DefaultLeaseTTL.String()
	}
	if c.ConvergenceFullReadInterval == "" {
		c.ConvergenceFullReadInterval = runner.DefaultFullReadInterval.String()
	}
	if c.ConvergenceTriggerSpacing == "" {
		c.ConvergenceTriggerSpacing = defaultTriggerSpacing(c.DatabaseDriver).String()
	}
	if c.OperationRetention == "" {
		c.OperationRetention = runner.DefaultOperationRetention.String()
	}
	if c.StaleUnclaimed == "" {
		c.StaleUnclaimed = convergence.DefaultConfig().StaleUnclaimed.String()
	}
	if c.BlockedAlertAfter == "" {
		c.BlockedAlertAfter = convergence.DefaultBlockedAlertAfter.String()
	}
	if c.ScaleDownStabilization == "" {
		c.ScaleDownStabilization = convergence.DefaultConfig().ScaleDownStabilization.String()
	}
	if c.EventRetention == "" {
		c.EventRetention = defaultEventRetention.String()
	}
	if c.EventRetentionMax == 0 {
		c.EventRetentionMax = defaultEventRetentionMax
	}
	if c.EventPollInterval == "" {
		c.EventPollInterval = defaultEventPollInterval.String()
	}
	if c.MaxRequestsInFlight == 0 {
		c.MaxRequestsInFlight = handlers.DefaultMaxRequestsInFlight
	}
	if c.MaxEventSubscribers == 0 {
		c.MaxEventSubscribers = handlers.DefaultMaxEventSubscribers
	}
	if c.ReservedCellRequests == 0 {
		c.ReservedCellRequests = handlers.DefaultReservedForCells
	}
	if c.MaxRequestsPerClient == 0 {
		c.MaxRequestsPerClient = admission.DefaultRequestsPerClient
	}
	if c.MaxListStreamsPerClient == 0 {
		c.MaxListStreamsPerClient = admission.DefaultListStreamsPerClient
	}
	if c.MaxBodyReadersPerClient == 0 {
		c.MaxBodyReadersPerClient = admission.DefaultBodyReadersPerClient
	}
	if c.MaxEventStreamsPerClient == 0 {
		c.MaxEventStreamsPerClient = admission.DefaultEventStreamsPerClient
	}
	if c.MaxConnectionsPerAddress == 0 {
		c.MaxConnectionsPerAddress = defaultConnectionsPerAddress
	}
	if c.RequestBodyTimeout == "" {
		c.RequestBodyTimeout = handlers.DefaultRequestBodyTimeout.String()
	}
	if c.ListWriteTimeout == "" {
		c.ListWriteTimeout = handlers.DefaultListWriteTimeout.String()
	}
}

// defaultBoardID names a board after what tells it apart from every other
// board: two boards on one host cannot listen on one address, and a board
// restarted with the same config is the same board, so it gets the same id
// and takes its own convergence lease back at once (AcquireLease renews an
// owner's own lease) instead of waiting a TTL for a lease nobody renews.
// The data dir is in it too, as it holds a SQLite board's state: a board
// pointed at other state is another board. A relative one is made absolute,
// so that the working directory the board starts in does not matter.
//
// Port 0 is the exception: the port is chosen at listen time, so two
// boards with that listen address on one host would share the id and both
// converge at once. Those get a random suffix, new on every start.
//
// Boards on different machines that share a host name, a data dir and a
// listen address (containers given one host name) must set board_id.
func defaultBoardID(host, listenAddress, dataDir string) string {
	if host == "" {
		host = "bbs"
	}
	host = host[:min(len(host), maxBoardIDLength-9)]
	suffix := make([]byte, 4)
	if fixedPort(listenAddress) {
		if dataDir != "" {
			dataDir = absolutePath(dataDir)
		}
		// NUL separates the parts: no host name or path holds one.
		sum := sha256.Sum256([]byte(host + "\x00" + dataDir + "\x00" + listenAddress))
		copy(suffix, sum[:])
	} else if _, err := rand.Read(suffix); err != nil {
		panic(err)
	}
	return host + "-" + hex.EncodeToString(suffix)
}

// fixedPort reports whether a listen address names its port, rather than
// leaving it to the system (port 0).
func fixedPort(listenAddress string) bool {
	_, port, err := net.SplitHostPort(listenAddress)
	if err != nil {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n != 0
}

// hostName is the host part of the default board id.
func hostName() string {
	host, err := os.Hostname()
	if err != nil {
		return ""
	}
	return host
}

// validate checks every field and names the first bad one.
func (c Config) validate() error {
	if c.PrometheusURL != "" {
		if u, err := url.Parse(c.PrometheusURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return configfile.Invalid("prometheus_url", fmt.Sprintf("%q is not an http:// or https:// URL", c.PrometheusURL))
		}
	}
	if c.ListenAddress == "" {
		return configfile.Invalid("listen_address", "required, e.g. \"127.0.0.1:8889\"")
	}
	if _, port, err := net.SplitHostPort(c.ListenAddress); err != nil {
		return configfile.Invalid("listen_address", fmt.Sprintf("%q is not host:port", c.ListenAddress))
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return configfile.Invalid("listen_address", fmt.Sprintf("port %q is not a number from 0 to 65535", port))
	}
	if !dialect.Known(c.DatabaseDriver) {
		names := make([]string, 0, 3)
		for _, d := range dialect.All() {
			names = append(names, string(d))
		}
		return configfile.Invalid("database_driver", fmt.Sprintf("%q is not one of %s", c.DatabaseDriver, strings.Join(names, ", ")))
	}
	if c.DatabaseDriver == driverSQLite {
		if c.DatabaseDSN == "" && c.DataDir == "" {
			return configfile.Invalid("data_dir", "required when database_driver is sqlite and database_dsn is empty")
		}
	} else if c.DatabaseDSN == "" {
		return configfile.Invalid("database_dsn", "required when database_driver is "+c.DatabaseDriver)
	}
	if _, err := lager.LogLevelFromString(c.LogLevel); err != nil {
		return configfile.Invalid("log_level", fmt.Sprintf("%q is not one of debug, info, error, fatal", c.LogLevel))
	}
	if c.MaxOpenConnections < 0 {
		return configfile.Invalid("max_open_connections", "must be 0 (driver default) or more")
	}
	if c.WriteLanes < -1 {
		return configfile.Invalid("write_lanes", "must be -1 (off), 0 (database default) or more")
	}
	if err := configfile.CheckDurations(
		configfile.Duration{Key: "shutdown_timeout", Value: c.ShutdownTimeout},
		configfile.Duration{Key: "database_timeout", Value: c.DatabaseTimeout, Least: minimumDatabaseTimeout},
		configfile.Duration{Key: "cell_presence_ttl", Value: c.CellPresenceTTL, Least: minimumTTL},
		configfile.Duration{Key: "convergence_interval", Value: c.ConvergenceInterval},
		configfile.Duration{Key: "convergence_lease_ttl", Value: c.ConvergenceLeaseTTL, Least: minimumTTL},
		configfile.Duration{Key: "convergence_full_read_interval", Value: c.ConvergenceFullReadInterval},
		configfile.Duration{Key: "convergence_trigger_spacing", Value: c.ConvergenceTriggerSpacing, Zero: true},
		configfile.Duration{Key: "stale_unclaimed", Value: c.StaleUnclaimed},
		configfile.Duration{Key: "operation_retention", Value: c.OperationRetention},
		configfile.Duration{Key: "scale_down_stabilization", Value: c.ScaleDownStabilization},
		configfile.Duration{Key: "blocked_alert_after", Value: c.BlockedAlertAfter, Zero: true},
		configfile.Duration{Key: "event_retention", Value: c.EventRetention, Least: time.Minute},
		configfile.Duration{Key: "event_poll_interval", Value: c.EventPollInterval, Least: minimumEventPollInterval},
		configfile.Duration{Key: "request_body_timeout", Value: c.RequestBodyTimeout, Least: minimumRequestBodyTimeout},
		configfile.Duration{Key: "list_write_timeout", Value: c.ListWriteTimeout, Least: minimumListWriteTimeout},
	); err != nil {
		return err
	}
	if err := c.TLS.Validate("tls"); err != nil {
		return err
	}
	if _, err := c.keyring(); err != nil {
		return err
	}
	if c.MaxRequestsInFlight < 0 {
		return configfile.Invalid("max_requests_in_flight", "must be 0 (the default, 1000) or more")
	}
	if c.ReservedCellRequests < 0 || c.ReservedCellRequests >= c.MaxRequestsInFlight {
		return configfile.Invalid("reserved_cell_requests", fmt.Sprintf("must be 0 (the default, %d) to max_requests_in_flight-1 (%d), got %d", handlers.DefaultReservedForCells, c.MaxRequestsInFlight-1, c.ReservedCellRequests))
	}
	for _, cap := range []struct {
		key   string
		value int
		def   int
	}{
		{"max_requests_per_client", c.MaxRequestsPerClient, admission.DefaultRequestsPerClient},
		{"max_list_streams_per_client", c.MaxListStreamsPerClient, admission.DefaultListStreamsPerClient},
		{"max_body_readers_per_client", c.MaxBodyReadersPerClient, admission.DefaultBodyReadersPerClient},
		{"max_event_streams_per_client", c.MaxEventStreamsPerClient, admission.DefaultEventStreamsPerClient},
		{"max_connections_per_address", c.MaxConnectionsPerAddress, defaultConnectionsPerAddress},
	} {
		if cap.value < 0 {
			return configfile.Invalid(cap.key, fmt.Sprintf("must be 0 (the default, %d) or more", cap.def))
		}
	}
	if c.EventRetentionMax < minimumEventRetentionMax {
		return configfile.Invalid("event_retention_max", fmt.Sprintf("must be at least %d (the default is %d)", minimumEventRetentionMax, defaultEventRetentionMax))
	}
	if c.MaxRolloutsInFlight < 0 || c.MaxRolloutsInFlight > maxRolloutsInFlight {
		return configfile.Invalid("max_rollouts_in_flight", fmt.Sprintf("must be 0 (no limit, the default) to %d, got %d", maxRolloutsInFlight, c.MaxRolloutsInFlight))
	}
	if c.MaxStartsPerCellPerSecond < 0 || c.MaxStartsPerCellPerSecond > maxStartsPerCellPerSecond {
		return configfile.Invalid("max_starts_per_cell_per_second", fmt.Sprintf("must be 0 (no limit, the default) to %d, got %d", maxStartsPerCellPerSecond, c.MaxStartsPerCellPerSecond))
	}
	if c.MaxAssetDownloadsPerCell < 0 || c.MaxAssetDownloadsPerCell > maxAssetDownloadsPerCell {
		return configfile.Invalid("max_asset_downloads_per_cell", fmt.Sprintf("must be 0 (no limit, the default) to %d, got %d", maxAssetDownloadsPerCell, c.MaxAssetDownloadsPerCell))
	}
	if c.MaxEventSubscribers < 0 {
		return configfile.Invalid("max_event_subscribers", "must be 0 (the default, 1000) or more")
	}
	if c.MaxConnections < 0 {
		return configfile.Invalid("max_connections", "must be 0 (the default, the open-file limit less 1,024) or more")
	}
	if c.MaxEventLogReadersPerClient < 0 {
		return configfile.Invalid("max_event_log_readers_per_client", "must be 0 (the default, half the board's cores) or more")
	}
	if len(c.BoardID) > maxBoardIDLength || strings.TrimSpace(c.BoardID) != c.BoardID || c.BoardID == "" {
		return configfile.Invalid("board_id", fmt.Sprintf("%q must be 1 to %d characters without surrounding spaces", c.BoardID, maxBoardIDLength))
	}
	return nil
}

// keyring is the encryption keys, nil when none are configured.
func (c Config) keyring() (*sqldb.Keyring, error) {
	keys, err := sqldb.ParseEncryptionKeys(c.EncryptionKeys, c.ActiveKeyLabel)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return keys, nil
}

// maxBoardIDLength keeps a board id readable in logs and the leases table.
const maxBoardIDLength = 128

// The duration accessors parse values validate has checked.

func (c Config) shutdownTimeout() time.Duration { return configfile.MustDuration(c.ShutdownTimeout) }

func (c Config) cellPresenceTTL() time.Duration { return configfile.MustDuration(c.CellPresenceTTL) }

func (c Config) databaseTimeout() time.Duration { return configfile.MustDuration(c.DatabaseTimeout) }

func (c Config) requestBodyTimeout() time.Duration {
	return configfile.MustDuration(c.RequestBodyTimeout)
}

func (c Config) listWriteTimeout() time.Duration { return configfile.MustDuration(c.ListWriteTimeout) }

func (c Config) eventRetention() time.Duration { return configfile.MustDuration(c.EventRetention) }

// connectionLimits is the caps of max_connections_per_address and
// max_connections, the latter from the open-file limit when 0.
func (c Config) connectionLimits() *httpserver.ConnectionLimits {
	total := c.MaxConnections
	if total == 0 {
		total = max(httpserver.OpenFileLimit()-reservedFiles, reservedFiles)
	}
	return &httpserver.ConnectionLimits{Total: total, PerAddress: c.MaxConnectionsPerAddress}
}

func (c Config) eventPollInterval() time.Duration {
	return configfile.MustDuration(c.EventPollInterval)
}

// maxRolloutsInFlight bounds max_rollouts_in_flight: it is a count of
// LRPs, stored as an int32 by the planner; more than a million rollouts
// at once is no limit at all.
const maxRolloutsInFlight = 1_000_000

// maxStartsPerCellPerSecond bounds max_starts_per_cell_per_second: a cell
// slot count per second, stored as an int32 by the planner; more than
// 100,000 is no limit at all.
const maxStartsPerCellPerSecond = 100_000

// maxAssetDownloadsPerCell bounds max_asset_downloads_per_cell: more than
// 10,000 downloads at once on one cell is no limit at all.
const maxAssetDownloadsPerCell = 10_000

// runnerConfig is the convergence runner's configuration.
func (c Config) runnerConfig() runner.RunnerConfig {
	planner := convergence.DefaultConfig()
	planner.StaleUnclaimed = configfile.MustDuration(c.StaleUnclaimed)
	// An EVACUATING row outlives its running replacement by at most two
	// presence TTLs: its rep, told to stop it on a bulk report, removes it.
	planner.EvacuationGrace = 2 * c.cellPresenceTTL()
	planner.ScaleDownStabilization = configfile.MustDuration(c.ScaleDownStabilization)
	planner.MaxRolloutsInFlight = int32(c.MaxRolloutsInFlight)
	planner.BlockedAlertAfter = configfile.MustDuration(c.BlockedAlertAfter)
	planner.MaxStartsPerCellPerSecond = int32(c.MaxStartsPerCellPerSecond)
	planner.QuarantineOnCrashSpike = c.QuarantineOnCrashSpike
	return runner.RunnerConfig{
		Owner:              c.BoardID,
		Interval:           configfile.MustDuration(c.ConvergenceInterval),
		LeaseTTL:           configfile.MustDuration(c.ConvergenceLeaseTTL),
		Planner:            planner,
		OperationRetention: configfile.MustDuration(c.OperationRetention),
		FullReadInterval:   configfile.MustDuration(c.ConvergenceFullReadInterval),
		TriggerSpacing:     configfile.MustDuration(c.ConvergenceTriggerSpacing),
	}
}

// defaultTriggerSpacing is convergence_trigger_spacing's default on a
// database (ConvergenceTriggerSpacing): where one writer is shared by the
// passes and the API writes (sqldb.OneWriter), fewer, larger passes leave
// the API more of it.
func defaultTriggerSpacing(driver string) time.Duration {
	if sqldb.OneWriter(driver) {
		return 50 * time.Millisecond
	}
	return 0
}

// dsn is what sqldb.Open gets: the configured DSN, or the SQLite file in
// the data dir.
func (c Config) dsn() string {
	if c.DatabaseDSN == "" && c.DatabaseDriver == driverSQLite {
		return filepath.Join(c.DataDir, sqliteFileName)
	}
	return c.DatabaseDSN
}

// requireLoopback keeps dev mode, which has no TLS and no authentication,
// off the network.
func requireLoopback(listenAddress string) error {
	host, _, err := net.SplitHostPort(listenAddress)
	if err != nil {
		return configfile.Invalid("listen_address", fmt.Sprintf("%q is not host:port", listenAddress))
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return configfile.Invalid("listen_address", fmt.Sprintf("dev mode listens on loopback only (127.0.0.1, ::1 or localhost), not %q", host))
}
