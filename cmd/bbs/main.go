// Command bbs is the board: it migrates its database, then serves the API
// (POST /v1/...), GET /metrics and GET /prometheus/targets (the instances,
// for Prometheus' service discovery) on one address, and converges whenever it
// owns the convergence lease, until SIGTERM or SIGINT, when it drains the
// requests in flight, hands the lease back and exits 0.
//
//	bbs -config FILE            run with a JSON config (see Config); with
//	                            its "tls" section the API is HTTPS and every
//	                            caller needs a client certificate
//	bbs -dev [-data-dir DIR]    no config: SQLite in DIR (./.data), plain
//	                            HTTP on 127.0.0.1:8889 only
//
// -listen ADDR overrides the listen address (port 0 picks a free port; the
// "bbs.listening" log line carries the URL) and -data-dir DIR the data dir.
// Logs are lager JSON lines on stdout; startup errors also go to stderr.
package main

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/tedsuo/ifrit"
	"github.com/tedsuo/ifrit/grouper"
	"github.com/tedsuo/ifrit/sigmon"

	"github.com/corkboard/corkboard/analysis"
	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/convergence/runner"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/events"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/dbwatch"
	"github.com/corkboard/corkboard/internal/httpserver"
	"github.com/corkboard/corkboard/migrations"
	"github.com/corkboard/corkboard/signals"
	"github.com/corkboard/corkboard/ui"
)

// startupTimeout bounds connecting to and migrating the database.
const startupTimeout = 5 * time.Minute

func main() {
	os.Exit(run(os.Args[1:]))
}

// run is main with an exit code: 0 after a clean shutdown, 1 when the
// board cannot start or stops on an error, 2 for bad flags.
func run(args []string) int {
	flags := flag.NewFlagSet("bbs", flag.ContinueOnError)
	configPath := flags.String("config", "", "JSON config `file`")
	dev := flags.Bool("dev", false, "development mode: no config, SQLite in the data dir, plain HTTP on loopback only")
	listen := flags.String("listen", "", "listen `address` (host:port), overriding the config; port 0 picks a free one")
	dataDir := flags.String("data-dir", "", "data `dir` for the SQLite database, overriding the config (dev default ./"+devDataDir+")")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "bbs: unexpected arguments %q\n", flags.Args())
		return 2
	}

	cfg, err := buildConfig(*configPath, *dev, *listen, *dataDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bbs:", err)
		return 1
	}

	logger := newLogger(cfg.LogLevel)
	if err := serve(logger, cfg, *dev); err != nil {
		logger.Error("exited-with-failure", err)
		fmt.Fprintln(os.Stderr, "bbs:", err)
		return 1
	}
	logger.Info("exited")
	return 0
}

// buildConfig reads -config, or makes the dev config, applies the flag
// overrides and validates the result.
func buildConfig(configPath string, dev bool, listen, dataDir string) (Config, error) {
	var cfg Config
	switch {
	case dev && configPath != "":
		return Config{}, errors.New("use either -dev or -config FILE, not both")
	case dev:
		cfg = devConfig(dataDir)
	case configPath != "":
		loaded, err := loadConfig(configPath)
		if err != nil {
			return Config{}, err
		}
		cfg = loaded
	default:
		return Config{}, errors.New("need -config FILE, or -dev for a local board with no config")
	}
	if listen != "" {
		cfg.ListenAddress = listen
	}
	if dataDir != "" {
		cfg.DataDir = dataDir
	}
	// After the overrides: the default id derives from the listen
	// address and the data dir the board really uses.
	if cfg.BoardID == "" {
		cfg.BoardID = defaultBoardID(hostName(), cfg.ListenAddress, cfg.DataDir)
	}
	if err := cfg.validate(); err != nil {
		return Config{}, err
	}
	if dev {
		if err := requireLoopback(cfg.ListenAddress); err != nil {
			return Config{}, err
		}
	}
	return cfg, nil
}

func newLogger(level string) lager.Logger {
	minLevel, _ := lager.LogLevelFromString(level) // validated with the config
	logger := lager.NewLogger("bbs")
	logger.RegisterSink(lager.NewPrettySink(os.Stdout, minLevel))
	return logger
}

// serve opens and migrates the database, then runs the board until a signal.
func serve(logger lager.Logger, cfg Config, dev bool) error {
	dsn := cfg.dsn()
	databaseData := lager.Data{"driver": cfg.DatabaseDriver}
	if err := prepareDataDir(cfg.DataDir); err != nil {
		return err
	}
	if cfg.DatabaseDriver == driverSQLite {
		// Other DSNs may carry a password; a file path does not.
		absolute, err := filepath.Abs(dsn)
		if err == nil {
			dsn = absolute
		}
		databaseData["file"] = dsn
	}
	var serverTLS *tls.Config
	if cfg.TLS != nil {
		var err error
		if serverTLS, err = cfg.TLS.ServerConfig(); err != nil {
			return fmt.Errorf("tls: %w", err)
		}
		logger.Info("tls", lager.Data{"ca_cert": cfg.TLS.CACert, "cert": cfg.TLS.Cert, "client_certificates": "required"})
	} else if !dev {
		logger.Info("plain-http", lager.Data{"warning": "no tls in the config: plain HTTP, no client certificates, every caller may call every route"})
	}
	if dev {
		logger.Info("dev-mode", lager.Data{
			"data_dir": absolutePath(cfg.DataDir),
			"warning":  "development mode: plain HTTP, no authentication, loopback only",
		})
		fmt.Fprintf(os.Stderr, "bbs: dev mode: plain HTTP on loopback only, data in %s\n", absolutePath(cfg.DataDir))
	}

	// The MySQL driver prints what it gives up on (a read that timed out
	// during an outage) to stderr in its own format; it goes to the
	// board's log instead. The call's error says the same to the caller.
	mysql.SetLogger(driverLog{logger.Session("mysql-driver")})
	conn, err := openDatabase(logger, cfg, dsn, databaseData)
	if err != nil {
		return err
	}
	defer conn.Close()

	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	keys, err := cfg.keyring()
	if err != nil {
		return err
	}
	clock, err := boardClock(logger, registry, conn, cfg.DatabaseDriver)
	if err != nil {
		return err
	}
	now := clock.Now
	// The store wakes the tailer after each of its commits that logged
	// events, so this board's own writes reach its streams at once.
	var tailer *events.Tailer
	storeOptions := []sqldb.Option{sqldb.WithEventsCommitted(func() { tailer.Wake() }), sqldb.WithClock(now)}
	switch {
	case cfg.WriteLanes > 0:
		storeOptions = append(storeOptions, sqldb.WithCoalescing(cfg.WriteLanes))
	case cfg.WriteLanes < 0:
		storeOptions = append(storeOptions, sqldb.WithCoalescing(0))
	}
	if keys != nil {
		storeOptions = append(storeOptions, sqldb.WithEncryption(keys))
		logger.Info("encryption-at-rest", lager.Data{"active_key_label": keys.ActiveLabel(), "labels": keys.Labels()})
	} else {
		logger.Info("no-encryption-at-rest", lager.Data{"warning": "no encryption_keys in the config: run definitions and operation parameters are stored in plain text"})
	}
	store := sqldb.New(conn, cfg.DatabaseDriver, storeOptions...)
	if keys != nil {
		go rotateKeys(logger.Session("rotate-keys"), store)
	}
	tailing, stopTailing := context.WithCancel(context.Background())
	defer stopTailing()
	hub, tailer, err := followEventLog(tailing, logger, cfg, dsn, store)
	if err != nil {
		return err
	}
	registerEventLogMetrics(registry, hub, tailer)
	logger.Info("board", lager.Data{"board_id": cfg.BoardID})
	// What each definition's instances did lately, from the log this
	// board follows (rollout statuses and /metrics show it).
	signalCollector := signals.NewCollector(signals.DefaultSpan, now)
	registry.MustRegister(signalCollector)
	go signalCollector.Run(tailing, hub)
	watch := dbwatch.New(logger, registry, dbwatch.Config{
		Read: func(ctx context.Context) error {
			_, err := store.FreshDomains(ctx)
			return err
		},
		Timeout: cfg.databaseTimeout(),
		Now:     now,
	})
	runnerConfig := cfg.runnerConfig()
	runnerConfig.Now = now
	// Rollouts whose updates asked for analysis are judged by this
	// board while it converges (docs/analysis.md).
	runnerConfig.Analyst = analysis.New(analysis.Config{
		Signals:        signalCollector,
		PrometheusURL:  cfg.PrometheusURL,
		AllowLinkLocal: cfg.AllowLinkLocalAssetHosts,
		Now:            now,
	})
	// Why a rollout's instance waits: the failing checks its rep
	// reports, which this board's signals keep.
	runnerConfig.CheckFailures = signalCollector.CheckFailures
	runnerConfig.PresenceGrace = func() convergence.PresenceGrace {
		return presenceGrace(watch.LastOutage(), cfg.cellPresenceTTL(), now())
	}
	converger := runner.NewRunner(logger, store, registry, runnerConfig)

	mux := http.NewServeMux()
	mux.Handle("GET /ready", handlers.Readiness(store, cfg.databaseTimeout(), func() (time.Time, bool) {
		o := watch.LastOutage()
		return o.Began, o.Ongoing
	}))
	// The dashboard, on the API's listener: with mutual TLS the browser
	// presents a certificate like any other client, and the API calls
	// the page makes are authorized as that certificate's.
	mux.Handle("GET "+ui.Prefix, ui.Handler())
	apiOptions := []handlers.Option{
		handlers.WithEvents(hub),
		handlers.WithMetrics(registry),
		handlers.WithSignals(signalCollector),
		handlers.WithPresenceTTL(cfg.cellPresenceTTL()),
		handlers.WithMaxAssetDownloadsPerCell(int32(cfg.MaxAssetDownloadsPerCell)),
		handlers.WithConvergenceTrigger(converger.Trigger),
		// Dry runs of updates plan with the runner's own configuration.
		handlers.WithRolloutPlanner(runner.NewRolloutPlanner(store, runnerConfig).Plan),
		handlers.WithLinkLocalAssetHosts(cfg.AllowLinkLocalAssetHosts),
		handlers.WithMaxRequestsInFlight(cfg.MaxRequestsInFlight),
		handlers.WithMaxEventSubscribers(cfg.MaxEventSubscribers),
		handlers.WithReservedForCells(cfg.ReservedCellRequests),
		handlers.WithMaxRequestsPerClient(cfg.MaxRequestsPerClient),
		handlers.WithMaxListStreamsPerClient(cfg.MaxListStreamsPerClient),
		handlers.WithMaxBodyReadersPerClient(cfg.MaxBodyReadersPerClient),
		handlers.WithMaxEventStreamsPerClient(cfg.MaxEventStreamsPerClient),
		handlers.WithRequestBodyTimeout(cfg.requestBodyTimeout()),
		handlers.WithListWriteTimeout(cfg.listWriteTimeout()),
		handlers.WithDatabaseTimeout(cfg.databaseTimeout()),
	}
	if serverTLS != nil {
		// The listener verifies every client certificate; this makes the
		// handlers refuse (but ping) any request that somehow arrives
		// without one, rather than take it for development mode.
		apiOptions = append(apiOptions, handlers.WithRequiredClientCertificates())
	}
	mux.Handle("/", handlers.New(logger, store, registry, apiOptions...))

	// The listen address is taken before the convergence lease is so much
	// as asked for: a second start of a running board, which has the same
	// default board id, then fails here instead of converging beside it
	// under the same lease owner.
	listener, err := net.Listen("tcp", cfg.ListenAddress)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.ListenAddress, err)
	}
	connections := cfg.connectionLimits()
	registerConnectionMetrics(registry, connections)
	server := &httpserver.Server{
		Logger:          logger.Session("api-server"),
		Listener:        listener,
		Connections:     connections,
		TLSConfig:       serverTLS,
		Handler:         mux,
		ShutdownTimeout: cfg.shutdownTimeout(),
		// Event streams last until the client goes; closing the hub ends
		// them, so that they do not hold the drain up.
		OnShutdown: hub.Close,
		// A browser that asks in plain HTTP is told where the dashboard
		// is and which certificate it needs.
		PlainHTTP: ui.PlainHTTPPage,
	}
	if dev {
		// People run dev mode by hand; tell them where to point cork.
		server.Announce = func(url string) { fmt.Fprintf(os.Stderr, "bbs: listening on %s (BBS_URL=%s)\n", url, url) }
	}
	// Stopped in reverse: the API drains first, then the runner hands the
	// convergence lease back.
	members := grouper.Members{{Name: "database-clock", Runner: clock}, {Name: "database-watch", Runner: watch}, {Name: "convergence", Runner: converger}, {Name: "api", Runner: server}}
	process := ifrit.Invoke(sigmon.New(grouper.NewOrdered(os.Interrupt, members)))
	return <-process.Wait()
}

// registerConnectionMetrics publishes the connections the API listener
// holds open and those it closed as they came, past a cap.
func registerConnectionMetrics(registry prometheus.Registerer, connections *httpserver.ConnectionLimits) {
	registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "corkboard_http_connections_open",
		Help: "Connections the API listener holds open (at most max_connections).",
	}, func() float64 { return float64(connections.Open()) }))
	for _, limit := range []string{httpserver.LimitConnections, httpserver.LimitConnectionsPerAddress} {
		registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "corkboard_http_connections_refused_total",
			Help:        "Connections the API listener closed as it accepted them, past max_connections or max_connections_per_address.",
			ConstLabels: prometheus.Labels{"limit": limit},
		}, func() float64 { return float64(connections.Refused(limit)) }))
	}
}

// registerEventLogMetrics publishes how far this board follows the event
// log: the position its streams reached (boards sharing a database compare
// theirs) and how long ago its tailer last read the log (it reads at least
// every event poll interval while the database answers).
func registerEventLogMetrics(registry prometheus.Registerer, hub *events.Hub, tailer *events.Tailer) {
	registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "corkboard_event_log_position",
			Help: "Position of the newest event log entry this board's event streams have published.",
		}, func() float64 { return float64(hub.LastID()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "corkboard_event_log_read_age_seconds",
			Help: "Seconds since this board last read the event log successfully; it reads at least every event poll interval while the database answers.",
		}, func() float64 { return time.Since(tailer.LastRead()).Seconds() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "corkboard_event_log_readers",
			Help: "Event streams reading the event log now: resumed from before this board's in-memory history, catching up (at most max_event_log_readers_per_client).",
		}, func() float64 { reading, _ := hub.LogReaders(); return float64(reading) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "corkboard_event_log_readers_waiting",
			Help: "Event streams waiting for their turn to read the event log (max_event_log_readers_per_client).",
		}, func() float64 { _, waiting := hub.LogReaders(); return float64(waiting) }),
	)
}

// followEventLog starts the hub the board's streams read, at the end of
// the event log and following it, woken by Postgres notifications where
// there are any, and trims the log to its retention.
func followEventLog(ctx context.Context, logger lager.Logger, cfg Config, dsn string, store *sqldb.SQLDB) (*events.Hub, *events.Tailer, error) {
	var opts []events.Option
	if cfg.MaxEventLogReadersPerClient > 0 {
		opts = append(opts, events.WithLogReaders(cfg.MaxEventLogReadersPerClient))
	}
	hub, tailer, err := events.Follow(ctx, store, cfg.eventPollInterval(), logger, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("read the event log: %w", err)
	}
	if cfg.DatabaseDriver == driverPostgres {
		go sqldb.ListenForEvents(ctx, dsn, tailer.Wake, logger)
	}
	go trimEventLog(ctx, logger.Session("trim-event-log"), store, cfg.eventRetention(), uint64(cfg.EventRetentionMax))
	return hub, tailer, nil
}

// Event log trimming: every trimInterval, at most trimBatches statements
// of trimBatch rows each, so that a board works a large backlog off a
// little at a time (400,000 rows a minute) without long transactions.
const (
	trimInterval = 15 * time.Second
	trimBatch    = 10_000
	trimBatches  = 100
)

func trimEventLog(ctx context.Context, logger lager.Logger, store *sqldb.SQLDB, retention time.Duration, maxEvents uint64) {
	ticker := time.NewTicker(trimInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		deleted, err := store.TrimEventLog(ctx, retention, maxEvents, trimBatch, trimBatches)
		if err != nil {
			logger.Error("failed", err)
			continue
		}
		if deleted > 0 {
			logger.Info("trimmed", lager.Data{"deleted": deleted})
		}
	}
}

// driverLog is a database driver's logger writing to the board's log.
type driverLog struct{ logger lager.Logger }

func (l driverLog) Print(v ...any) {
	l.logger.Info("said", lager.Data{"message": strings.TrimSpace(fmt.Sprint(v...))})
}

// presenceGrace is what convergence may assume of cells after the last
// database outage (see convergence.PresenceGrace): while one is under way,
// every cell that expired during it stays present; after it, until a
// presence TTL has passed.
func presenceGrace(o dbwatch.Outage, ttl time.Duration, now time.Time) convergence.PresenceGrace {
	switch {
	case o.Ongoing:
		return convergence.PresenceGrace{OutageBegan: o.Began, Until: now.Add(ttl)}
	case !o.Ended.IsZero():
		return convergence.PresenceGrace{OutageBegan: o.Began, Until: o.Ended.Add(ttl)}
	}
	return convergence.PresenceGrace{}
}

// openDatabase connects and migrates. A database migrated by a newer
// corkboard is refused: this binary would misread what it does not know.
func openDatabase(logger lager.Logger, cfg Config, dsn string, data lager.Data) (*sql.DB, error) {
	ctx, cancel := context.WithTimeout(context.Background(), startupTimeout)
	defer cancel()

	logger.Info("opening-database", data)
	migrating, err := sqldb.Open(ctx, cfg.DatabaseDriver, dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", cfg.DatabaseDriver, err)
	}
	logger.Info("migrating-database", data)
	err = migrations.Up(ctx, migrating, cfg.DatabaseDriver)
	migrating.Close()
	if err != nil {
		if errors.Is(err, migrations.ErrDatabaseNewer) {
			return nil, fmt.Errorf("refusing to start: the database was migrated by a newer corkboard than this bbs; upgrade bbs (%w)", err)
		}
		return nil, fmt.Errorf("migrate %s database: %w", cfg.DatabaseDriver, err)
	}

	// Serving connections bound every read and write by the database
	// timeout; the migrations' pool had none, since building an index on a
	// large table may keep the server silent for longer.
	conn, err := sqldb.Open(ctx, cfg.DatabaseDriver, dsn, sqldb.WithIOTimeout(cfg.databaseTimeout()))
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", cfg.DatabaseDriver, err)
	}
	if cfg.MaxOpenConnections > 0 {
		conn.SetMaxOpenConns(cfg.MaxOpenConnections)
		conn.SetMaxIdleConns(cfg.MaxOpenConnections)
	}
	return conn, nil
}

func absolutePath(path string) string {
	if absolute, err := filepath.Abs(path); err == nil {
		return absolute
	}
	return path
}

// rotateKeys re-encrypts, in bounded batches while the board serves, the
// rows not under the active key (plain ones from before encryption, or
// under a key being rotated out), pass after pass until one finds nothing
// (rows written meanwhile are under the active key already). A failure
// is logged and left to the next start or to bbs-migrate rotate-keys.
func rotateKeys(logger lager.Logger, store *sqldb.SQLDB) {
	for pass := 1; pass <= rotationPasses; pass++ {
		progress, err := store.RotateKeys(context.Background(), sqldb.RotateOptions{})
		if err != nil {
			logger.Error("failed", err, lager.Data{"pass": pass})
			return
		}
		reencrypted := progress.RunInfos.Reencrypted + progress.Operations.Reencrypted
		logger.Info("pass", lager.Data{"pass": pass, "run_infos": progress.RunInfos, "operations": progress.Operations})
		if reencrypted == 0 && progress.RunInfos.Skipped+progress.Operations.Skipped == 0 {
			return
		}
	}
}

// rotationPasses bounds the start's re-encryption: a row changed under a
// pass is picked up by the next.
const rotationPasses = 5
