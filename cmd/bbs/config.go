package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"code.cloudfoundry.org/lager/v3"
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
//	  "shutdown_timeout": "30s"
//	}
type Config struct {
	// ListenAddress is host:port for the API and /metrics. Required.
	ListenAddress string `json:"listen_address"`
	// DatabaseDriver is sqlite (the default), postgres or mysql.
	DatabaseDriver string `json:"database_driver"`
	// DatabaseDSN is the driver's DSN; for sqlite, a file path. Required for
	// postgres and mysql; for sqlite it defaults to board.db in DataDir.
	DatabaseDSN string `json:"database_dsn"`
	// DataDir holds the SQLite database when DatabaseDSN is empty.
	DataDir string `json:"data_dir"`
	// LogLevel is debug, info (the default), error or fatal.
	LogLevel string `json:"log_level"`
	// MaxOpenConnections caps the database connection pool; 0 keeps the
	// driver's default (8 for sqlite, 64 otherwise).
	MaxOpenConnections int `json:"max_open_connections"`
	// ShutdownTimeout bounds how long SIGTERM waits for in-flight requests,
	// as a Go duration ("30s", the default).
	ShutdownTimeout string `json:"shutdown_timeout"`
}

const (
	driverSQLite   = "sqlite"
	driverPostgres = "postgres"
	driverMySQL    = "mysql"

	defaultShutdownTimeout = 30 * time.Second
	sqliteFileName         = "board.db"

	// Dev mode: the port Diego's BBS uses, on loopback, data under ./.data.
	devListenAddress = "127.0.0.1:8889"
	devDataDir       = ".data"
)

// loadConfig reads a config file and fills in defaults. Errors name the field.
func loadConfig(path string) (Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	var cfg Config
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&cfg); err != nil {
		return Config{}, fmt.Errorf("config %s: %s", path, describeJSONError(err))
	}
	cfg.applyDefaults()
	return cfg, nil
}

// describeJSONError names the offending key where encoding/json knows it.
func describeJSONError(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return fmt.Sprintf("%s: want a %s, got a JSON %s", typeErr.Field, typeErr.Type, typeErr.Value)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
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
}

// validate checks every field and names the first bad one.
func (c Config) validate() error {
	if c.ListenAddress == "" {
		return fieldError("listen_address", "required, e.g. \"127.0.0.1:8889\"")
	}
	if _, port, err := net.SplitHostPort(c.ListenAddress); err != nil {
		return fieldError("listen_address", fmt.Sprintf("%q is not host:port", c.ListenAddress))
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fieldError("listen_address", fmt.Sprintf("port %q is not a number from 0 to 65535", port))
	}
	switch c.DatabaseDriver {
	case driverSQLite:
		if c.DatabaseDSN == "" && c.DataDir == "" {
			return fieldError("data_dir", "required when database_driver is sqlite and database_dsn is empty")
		}
	case driverPostgres, driverMySQL:
		if c.DatabaseDSN == "" {
			return fieldError("database_dsn", "required when database_driver is "+c.DatabaseDriver)
		}
	default:
		return fieldError("database_driver", fmt.Sprintf("%q is not one of sqlite, postgres, mysql", c.DatabaseDriver))
	}
	if _, err := lager.LogLevelFromString(c.LogLevel); err != nil {
		return fieldError("log_level", fmt.Sprintf("%q is not one of debug, info, error, fatal", c.LogLevel))
	}
	if c.MaxOpenConnections < 0 {
		return fieldError("max_open_connections", "must be 0 (driver default) or more")
	}
	if timeout, err := time.ParseDuration(c.ShutdownTimeout); err != nil || timeout <= 0 {
		return fieldError("shutdown_timeout", fmt.Sprintf("%q is not a positive duration like \"30s\"", c.ShutdownTimeout))
	}
	return nil
}

// shutdownTimeout is ShutdownTimeout parsed; validate has checked it.
func (c Config) shutdownTimeout() time.Duration {
	timeout, _ := time.ParseDuration(c.ShutdownTimeout)
	return timeout
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
		return fieldError("listen_address", fmt.Sprintf("%q is not host:port", listenAddress))
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fieldError("listen_address", fmt.Sprintf("dev mode listens on loopback only (127.0.0.1, ::1 or localhost), not %q", host))
}

func fieldError(field, reason string) error {
	return fmt.Errorf("config: %s: %s", field, reason)
}
