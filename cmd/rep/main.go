// Command rep is the cell agent: it registers its cell with the board,
// runs the instances the board places there as child processes, reports
// what becomes of them, and evacuates the cell on a drain.
//
//	rep -config FILE
//
// Signals: SIGTERM drains the cell (every instance gets a replacement
// elsewhere before it stops, within evacuation_timeout) and exits 0;
// SIGINT stops every instance at once and exits 0. Logs are lager JSON
// lines on stdout; the line "rep.server.listening" carries the rep's URL.
// With tls in the config the rep's API is HTTPS (client certificates
// required), its calls to the board present the cell's certificate, and
// the local instance endpoint is plain HTTP on a loopback port of its own
// ("rep.instance-server.listening" carries its URL).
// Exit codes: 0 clean exit, 1 the rep could not start or failed, 2 bad
// flags or a bad config.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"os"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"github.com/tedsuo/ifrit"
	"github.com/tedsuo/ifrit/grouper"
	"github.com/tedsuo/ifrit/sigmon"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/internal/configfile"
	"github.com/corkboard/corkboard/internal/httpserver"
	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep"
	"github.com/corkboard/corkboard/rep/executor"
)

// serverShutdownTimeout bounds how long the rep's server waits for
// requests in flight once the agent is done.
const serverShutdownTimeout = 5 * time.Second

// instanceListenAddress is where a rep with TLS serves the local instance
// endpoint: loopback, where its instances run, on a port of the system's
// choosing (instances learn it from CORK_INSTANCE_URL).
const instanceListenAddress = "127.0.0.1:0"

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	flags := flag.NewFlagSet("rep", flag.ContinueOnError)
	configPath := flags.String("config", "", "JSON config `file` (required)")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "rep: unexpected arguments %q\n", flags.Args())
		return 2
	}
	if *configPath == "" {
		fmt.Fprintln(os.Stderr, "rep: need -config FILE")
		return 2
	}
	cfg, err := loadConfig(*configPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rep:", err)
		return 2
	}

	logger := newLogger(cfg.LogLevel)
	if err := serve(logger, cfg); err != nil {
		logger.Error("exited-with-failure", err)
		fmt.Fprintln(os.Stderr, "rep:", err)
		return 1
	}
	logger.Info("exited")
	return 0
}

func newLogger(level string) lager.Logger {
	minLevel, _ := lager.LogLevelFromString(level) // validated with the config
	logger := lager.NewLogger("rep")
	logger.RegisterSink(lager.NewPrettySink(os.Stdout, minLevel))
	return logger
}

// serve runs the rep until a signal, or until a drain is done.
func serve(logger lager.Logger, cfg Config) error {
	var serverTLS *tls.Config
	var clientOptions []client.Option
	if cfg.TLS != nil {
		var err error
		if serverTLS, err = cfg.TLS.ServerConfig(); err != nil {
			return fmt.Errorf("tls: %w", err)
		}
		clientTLS, err := cfg.TLS.ClientConfig()
		if err != nil {
			return fmt.Errorf("tls: %w", err)
		}
		clientOptions = append(clientOptions, client.WithTLSConfig(clientTLS))
	}

	// Listening first tells the executor where the local instance
	// endpoint is, and the board where the rep is, even with port 0.
	listener, err := net.Listen("tcp", cfg.ListenAddress)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.ListenAddress, err)
	}
	defer listener.Close()
	repURL := cfg.repURL(listener.Addr().String())
	localURL := "http://" + reachable(listener.Addr().String(), "127.0.0.1")
	// With TLS the instance endpoint cannot share the rep's listener:
	// instances have no certificate to present. It gets a plain listener
	// of its own, on loopback only, where the instances run.
	var instanceListener net.Listener
	if cfg.TLS != nil {
		if instanceListener, err = net.Listen("tcp", instanceListenAddress); err != nil {
			return fmt.Errorf("listen on %s for the instance endpoint: %w", instanceListenAddress, err)
		}
		defer instanceListener.Close()
		localURL = "http://" + instanceListener.Addr().String()
	}

	instanceKey, err := rep.LoadInstanceKey(cfg.DataDir)
	if err != nil {
		return err
	}
	endpoint := rep.NewInstanceEndpoint(localURL, instanceKey)

	portMin, portMax, _ := parsePortRange(cfg.PortRange) // validated
	exe, err := executor.NewExecutor(executor.ExecutorConfig{
		CellID:          cfg.CellID,
		DataDir:         cfg.DataDir,
		AppsDir:         cfg.AppsDir,
		Address:         cfg.Address,
		PortMin:         portMin,
		PortMax:         portMax,
		InstanceURL:     endpoint.URL,
		StopTimeout:     configfile.MustDuration(cfg.StopTimeout),
		LogLimit:        cfg.instanceLogLimit(),
		AssetCacheBytes: cfg.assetCacheBytes(),
		AllowLinkLocal:  cfg.AllowLinkLocalAssetHosts,
		FileAssetDirs:   cfg.FileAssetDirs,
		Isolation:       cfg.isolationConfig(),
		Logger:          logger,
	})
	if err != nil {
		return err
	}

	cell := &models.Cell{
		CellId:        cfg.CellID,
		RepUrl:        repURL,
		Zone:          cfg.Zone,
		Capacity:      &models.CellCapacity{MemoryMb: cfg.Capacity.MemoryMB, DiskMb: cfg.Capacity.DiskMB, Instances: cfg.Capacity.Instances},
		PlacementTags: cfg.PlacementTags,
		Isolation:     string(exe.Isolation()),
	}
	agent, err := rep.NewAgent(rep.AgentConfig{
		Cell:                   cell,
		Board:                  client.New(cfg.BoardURL, clientOptions...),
		CellClient:             client.NewCellClient(cfg.BoardURL, cfg.CellID, clientOptions...),
		Executor:               exe,
		PollInterval:           configfile.MustDuration(cfg.PollInterval),
		RetryInterval:          cfg.retryInterval(),
		DisableEventStream:     !*cfg.EventStream,
		BulkSyncInterval:       configfile.MustDuration(cfg.BulkSyncInterval),
		OccupancyBatchInterval: configfile.MustDuration(cfg.OccupancyBatchInterval),
		EvacuationTimeout:      configfile.MustDuration(cfg.EvacuationTimeout),
		StopGracePeriod:        configfile.MustDuration(cfg.StopGracePeriod),
		UnroutableRetryTimeout: configfile.MustDuration(cfg.UnroutableRetryTimeout),
		HealthReportInterval:   configfile.MustDuration(cfg.HealthReportInterval),
		DisableHealthReports:   cfg.healthReportsDisabled(),
		Logger:                 logger,
	})
	if err != nil {
		return err
	}
	logger.Info("config", lager.Data{
		"cell_id": cfg.CellID, "zone": cfg.Zone, "board_url": cfg.BoardURL, "rep_url": repURL,
		"data_dir": cfg.DataDir, "apps_dir": cfg.AppsDir, "port_range": cfg.PortRange,
		"instance_log_limit_mb": *cfg.InstanceLogLimitMB, "asset_cache_mb": *cfg.AssetCacheMB,
		"tls": cfg.TLS != nil, "instance_url": localURL, "isolation": exe.Isolation(),
		"poll_interval": cfg.PollInterval, "event_stream": *cfg.EventStream,
		"allow_link_local_asset_hosts": cfg.AllowLinkLocalAssetHosts,
		"file_asset_dirs":              cfg.FileAssetDirs,
	})

	server := &httpserver.Server{
		Logger:          logger.Session("server"),
		Listener:        listener,
		Connections:     apiConnectionLimits(),
		URL:             localURL,
		Handler:         rep.NewServer(logger, agent, exe, endpoint),
		ShutdownTimeout: serverShutdownTimeout,
	}
	// Signals reach the agent first (ordered groups stop in reverse): it
	// evacuates or stops its instances while the servers still answer
	// them, then the servers stop.
	members := grouper.Members{{Name: "server", Runner: server}}
	if cfg.TLS != nil {
		server.URL = "https://" + reachable(listener.Addr().String(), "127.0.0.1")
		server.TLSConfig = serverTLS
		server.Handler = rep.NewTLSServer(logger, agent, exe)
		members = append(members, grouper.Member{Name: "instance-server", Runner: &httpserver.Server{
			Logger:          logger.Session("instance-server"),
			Listener:        instanceListener,
			Connections:     &httpserver.ConnectionLimits{Total: instanceEndpointConnections},
			Handler:         rep.NewInstanceServer(logger, agent, endpoint),
			ShutdownTimeout: serverShutdownTimeout,
		}})
	}
	members = append(members, grouper.Member{Name: "agent", Runner: agent})
	process := ifrit.Invoke(sigmon.New(grouper.NewOrdered(os.Interrupt, members)))
	err = <-process.Wait()
	// The agent stops its instances; this catches a failed start.
	exe.Shutdown()
	return err
}

// The rep's servers cap their connections (httpserver.ConnectionLimits):
// its instances share its host's network, so an instance could otherwise
// hold connections to them until the rep had no file descriptor left for
// its instances' logs, its assets or its calls to the board.
const (
	// apiConnectionsPerAddress is far more than cork logs and a board
	// need, from one address.
	apiConnectionsPerAddress = 1000
	// instanceEndpointConnections is the instance endpoint's whole cap:
	// every instance reaches it from loopback, one connection at a time.
	instanceEndpointConnections = 512
)

// apiConnectionLimits caps the rep API's connections at 1,000 from one
// address and half the rep's open-file limit in all.
func apiConnectionLimits() *httpserver.ConnectionLimits {
	total := max(httpserver.OpenFileLimit()/2, 1024)
	return &httpserver.ConnectionLimits{Total: total, PerAddress: apiConnectionsPerAddress}
}
