package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/convergence/runner"
	"github.com/corkboard/corkboard/handlers"
)

var _ = Describe("Config", func() {
	writeConfig := func(text string) string {
		path := filepath.Join(GinkgoT().TempDir(), "bbs.json")
		Expect(os.WriteFile(path, []byte(text), 0o600)).To(Succeed())
		return path
	}

	It("reads every field of a config file", func() {
		cfg, err := buildConfig(writeConfig(`{
			"listen_address": "0.0.0.0:8889",
			"database_driver": "postgres",
			"database_dsn": "postgres://bbs@db.internal/bbs",
			"log_level": "debug",
			"max_open_connections": 32,
			"shutdown_timeout": "45s",
			"board_id": "bbs-z1-0",
			"cell_presence_ttl": "20s",
			"convergence_interval": "10s",
			"convergence_lease_ttl": "6s",
			"stale_unclaimed": "2m",
			"operation_retention": "48h",
			"max_rollouts_in_flight": 10,
			"max_starts_per_cell_per_second": 5,
			"quarantine_on_crash_spike": true,
			"max_asset_downloads_per_cell": 2
		}`), false, "", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.cellPresenceTTL()).To(Equal(20 * time.Second))
		runner := cfg.runnerConfig()
		Expect(runner.Owner).To(Equal("bbs-z1-0"))
		Expect(runner.Interval).To(Equal(10 * time.Second))
		Expect(runner.LeaseTTL).To(Equal(6 * time.Second))
		Expect(runner.Planner.StaleUnclaimed).To(Equal(2 * time.Minute))
		Expect(runner.OperationRetention).To(Equal(48 * time.Hour))
		Expect(runner.Planner.MaxRolloutsInFlight).To(BeEquivalentTo(10))
		Expect(runner.Planner.MaxStartsPerCellPerSecond).To(BeEquivalentTo(5))
		Expect(runner.Planner.QuarantineOnCrashSpike).To(BeTrue())
		Expect(cfg.MaxAssetDownloadsPerCell).To(Equal(2))
		Expect(runner.Planner.CrashPolicy).To(Equal(convergence.DefaultCrashPolicy()))
		Expect(cfg.ListenAddress).To(Equal("0.0.0.0:8889"))
		Expect(cfg.DatabaseDriver).To(Equal("postgres"))
		Expect(cfg.dsn()).To(Equal("postgres://bbs@db.internal/bbs"))
		Expect(cfg.LogLevel).To(Equal("debug"))
		Expect(cfg.MaxOpenConnections).To(Equal(32))
		Expect(cfg.shutdownTimeout()).To(Equal(45 * time.Second))
	})

	It("refuses link-local asset hosts unless allow_link_local_asset_hosts is true", func() {
		cfg, err := buildConfig(writeConfig(`{"listen_address": "127.0.0.1:9000", "data_dir": "/d"}`), false, "", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.AllowLinkLocalAssetHosts).To(BeFalse())
		cfg, err = buildConfig(writeConfig(`{"listen_address": "127.0.0.1:9000", "data_dir": "/d", "allow_link_local_asset_hosts": true}`), false, "", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.AllowLinkLocalAssetHosts).To(BeTrue())
		_, err = buildConfig(writeConfig(`{"listen_address": "127.0.0.1:9000", "data_dir": "/d", "allow_link_local_asset_hosts": "yes"}`), false, "", "")
		Expect(err).To(MatchError(ContainSubstring("allow_link_local_asset_hosts")))
	})

	It("defaults to SQLite in the data dir, info logs and a 30 s drain", func() {
		cfg, err := buildConfig(writeConfig(`{"listen_address": "127.0.0.1:9000", "data_dir": "/var/lib/corkboard"}`), false, "", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.DatabaseDriver).To(Equal("sqlite"))
		Expect(cfg.dsn()).To(Equal("/var/lib/corkboard/board.db"))
		Expect(cfg.LogLevel).To(Equal("info"))
		Expect(cfg.shutdownTimeout()).To(Equal(30 * time.Second))
	})

	It("defaults to a 30 s presence TTL, a pass every 30 s, a 15 s lease, 60 s for a placement to go stale", func() {
		cfg, err := buildConfig(writeConfig(`{"listen_address": "127.0.0.1:9000", "data_dir": "/var/lib/corkboard"}`), false, "", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.cellPresenceTTL()).To(Equal(30 * time.Second))
		runner := cfg.runnerConfig()
		Expect(runner.Interval).To(Equal(30 * time.Second))
		Expect(runner.LeaseTTL).To(Equal(15 * time.Second))
		Expect(runner.Planner.StaleUnclaimed).To(Equal(60 * time.Second))
		Expect(runner.OperationRetention).To(Equal(7*24*time.Hour), "a week of operations")
	})

	DescribeTable("spaces triggered convergence passes by 50 ms on SQLite and not at all on the server databases, unless told",
		func(file string, want time.Duration) {
			cfg, err := buildConfig(writeConfig(file), false, "", "")
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.runnerConfig().TriggerSpacing).To(Equal(want))
		},
		Entry("SQLite", `{"listen_address": "127.0.0.1:9000", "data_dir": "/d"}`, 50*time.Millisecond),
		Entry("Postgres", `{"listen_address": "127.0.0.1:9000", "database_driver": "postgres", "database_dsn": "postgres://bbs@db/bbs"}`, time.Duration(0)),
		Entry("MySQL", `{"listen_address": "127.0.0.1:9000", "database_driver": "mysql", "database_dsn": "bbs@tcp(db:3306)/bbs"}`, time.Duration(0)),
		Entry("SQLite told 0s", `{"listen_address": "127.0.0.1:9000", "data_dir": "/d", "convergence_trigger_spacing": "0s"}`, time.Duration(0)),
		Entry("Postgres told 20ms", `{"listen_address": "127.0.0.1:9000", "database_driver": "postgres", "database_dsn": "postgres://bbs@db/bbs", "convergence_trigger_spacing": "20ms"}`, 20*time.Millisecond),
	)

	It("caps connections at the open-file limit less 1,024 unless told, and at 1,000 from one address", func() {
		var files syscall.Rlimit
		Expect(syscall.Getrlimit(syscall.RLIMIT_NOFILE, &files)).To(Succeed())
		Expect(files.Cur).To(BeNumerically(">", 2048), "this machine's open-file limit")
		var cfg Config
		cfg.applyDefaults()
		limits := cfg.connectionLimits()
		Expect(limits.Total).To(Equal(int(files.Cur) - 1024))
		Expect(limits.PerAddress).To(Equal(1000))

		cfg.MaxConnections, cfg.MaxConnectionsPerAddress = 5000, 20
		limits = cfg.connectionLimits()
		Expect(limits.Total).To(Equal(5000))
		Expect(limits.PerAddress).To(Equal(20))
	})

	It("takes blocked_alert_after 0s, which never counts a blocked rollout", func() {
		cfg, err := buildConfig(writeConfig(`{"listen_address": "127.0.0.1:9000", "data_dir": "/d", "blocked_alert_after": "0s"}`), false, "", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.runnerConfig().Planner.BlockedAlertAfter).To(BeZero())
	})

	Describe("the default board id", func() {
		boardID := func(text, listen, dataDir string) string {
			GinkgoHelper()
			cfg, err := buildConfig(writeConfig(text), false, listen, dataDir)
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.runnerConfig().Owner).To(Equal(cfg.BoardID))
			return cfg.BoardID
		}
		const file = `{"listen_address": "127.0.0.1:9000", "data_dir": "/var/lib/corkboard"}`

		It("is the host name and 8 hex digits, the same on every start of one config, so a restarted board owns its old lease", func() {
			host, err := os.Hostname()
			Expect(err).NotTo(HaveOccurred())
			first := boardID(file, "", "")
			Expect(first).To(MatchRegexp("^" + regexp.QuoteMeta(host) + "-[0-9a-f]{8}$"))
			Expect(boardID(file, "", "")).To(Equal(first))
		})

		It("differs between boards that one host can run at once: another listen address or data dir", func() {
			first := boardID(file, "", "")
			Expect(boardID(`{"listen_address": "127.0.0.1:9001", "data_dir": "/var/lib/corkboard"}`, "", "")).NotTo(Equal(first))
			Expect(boardID(`{"listen_address": "127.0.0.1:9000", "data_dir": "/var/lib/other"}`, "", "")).NotTo(Equal(first))
		})

		It("derives from -listen and -data-dir when they override the file", func() {
			Expect(boardID(file, "127.0.0.1:9001", "")).To(Equal(boardID(`{"listen_address": "127.0.0.1:9001", "data_dir": "/var/lib/corkboard"}`, "", "")))
			Expect(boardID(file, "", "/var/lib/other")).To(Equal(boardID(`{"listen_address": "127.0.0.1:9000", "data_dir": "/var/lib/other"}`, "", "")))
		})

		It("does not depend on the working directory a relative data dir is given from", func() {
			wd, err := os.Getwd()
			Expect(err).NotTo(HaveOccurred())
			Expect(defaultBoardID("h", "127.0.0.1:9000", "data")).To(Equal(defaultBoardID("h", "127.0.0.1:9000", filepath.Join(wd, "data"))))
		})

		It("is new on every start with port 0, which two boards on one host may both listen on", func() {
			text := `{"listen_address": "127.0.0.1:0", "data_dir": "/var/lib/corkboard"}`
			Expect(boardID(text, "", "")).NotTo(Equal(boardID(text, "", "")))
			Expect(defaultBoardID("h", "[::1]:00", "/d")).NotTo(Equal(defaultBoardID("h", "[::1]:00", "/d")))
		})

		It("fits the 128 characters of a board id with a long host name", func() {
			id := defaultBoardID(strings.Repeat("h", 300), "127.0.0.1:9000", "/d")
			Expect(id).To(HaveLen(maxBoardIDLength))
			Expect(id).To(MatchRegexp("^h+-[0-9a-f]{8}$"))
			Expect(defaultBoardID("", "127.0.0.1:9000", "/d")).To(MatchRegexp("^bbs-[0-9a-f]{8}$"))
		})

		It("gives way to board_id in the file", func() {
			Expect(boardID(`{"listen_address": "127.0.0.1:9000", "data_dir": "/d", "board_id": "bbs-0"}`, "", "")).To(Equal("bbs-0"))
		})
	})

	It("lets -listen and -data-dir override the file", func() {
		cfg, err := buildConfig(writeConfig(`{"listen_address": "127.0.0.1:9000", "data_dir": "/var/lib/corkboard"}`), false, "127.0.0.1:0", "/tmp/elsewhere")
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.ListenAddress).To(Equal("127.0.0.1:0"))
		Expect(cfg.dsn()).To(Equal("/tmp/elsewhere/board.db"))
	})

	DescribeTable("a bad config is an error naming the field",
		func(text, field string) {
			_, err := buildConfig(writeConfig(text), false, "", "")
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring(field))
		},
		Entry("no listen address", `{"data_dir": "/d"}`, "listen_address"),
		Entry("a listen address without a port", `{"listen_address": "localhost", "data_dir": "/d"}`, "listen_address"),
		Entry("a listen address with a bad port", `{"listen_address": "localhost:http-ish", "data_dir": "/d"}`, "listen_address"),
		Entry("a bogus driver", `{"listen_address": ":8889", "database_driver": "oracle", "database_dsn": "x"}`, "database_driver"),
		Entry("postgres without a DSN", `{"listen_address": ":8889", "database_driver": "postgres"}`, "database_dsn"),
		Entry("mysql without a DSN", `{"listen_address": ":8889", "database_driver": "mysql"}`, "database_dsn"),
		Entry("sqlite with neither DSN nor data dir", `{"listen_address": ":8889"}`, "data_dir"),
		Entry("a bad log level", `{"listen_address": ":8889", "data_dir": "/d", "log_level": "loud"}`, "log_level"),
		Entry("a negative pool size", `{"listen_address": ":8889", "data_dir": "/d", "max_open_connections": -1}`, "max_open_connections"),
		Entry("write lanes below -1", `{"listen_address": ":8889", "data_dir": "/d", "write_lanes": -2}`, "write_lanes"),
		Entry("a pool size of the wrong type", `{"listen_address": ":8889", "data_dir": "/d", "max_open_connections": "ten"}`, "max_open_connections"),
		Entry("a shutdown timeout that is no duration", `{"listen_address": ":8889", "data_dir": "/d", "shutdown_timeout": "soon"}`, "shutdown_timeout"),
		Entry("a negative shutdown timeout", `{"listen_address": ":8889", "data_dir": "/d", "shutdown_timeout": "-1s"}`, "shutdown_timeout"),
		Entry("a database timeout too short for a round trip", `{"listen_address": ":8889", "data_dir": "/d", "database_timeout": "1ms"}`, "database_timeout"),
		Entry("a presence TTL that is no duration", `{"listen_address": ":8889", "data_dir": "/d", "cell_presence_ttl": "half a minute"}`, "cell_presence_ttl"),
		Entry("a presence TTL under a second", `{"listen_address": ":8889", "data_dir": "/d", "cell_presence_ttl": "500ms"}`, "cell_presence_ttl"),
		Entry("a zero convergence interval", `{"listen_address": ":8889", "data_dir": "/d", "convergence_interval": "0s"}`, "convergence_interval"),
		Entry("a convergence interval of the wrong type", `{"listen_address": ":8889", "data_dir": "/d", "convergence_interval": 30}`, "convergence_interval"),
		Entry("a lease TTL under a second", `{"listen_address": ":8889", "data_dir": "/d", "convergence_lease_ttl": "100ms"}`, "convergence_lease_ttl"),
		Entry("a negative stale_unclaimed", `{"listen_address": ":8889", "data_dir": "/d", "stale_unclaimed": "-1m"}`, "stale_unclaimed"),
		Entry("an operation_retention that is no duration", `{"listen_address": ":8889", "data_dir": "/d", "operation_retention": "7d"}`, "operation_retention"),
		Entry("a board id with surrounding spaces", `{"listen_address": ":8889", "data_dir": "/d", "board_id": " bbs "}`, "board_id"),
		Entry("a board id over 128 characters", `{"listen_address": ":8889", "data_dir": "/d", "board_id": "`+strings.Repeat("b", 129)+`"}`, "board_id"),
		Entry("a misspelt key", `{"listen_adress": ":8889", "data_dir": "/d"}`, "listen_adress"),
		Entry("an encryption key that is not 32 bytes", `{"listen_address": ":8889", "data_dir": "/d", "encryption_keys": {"k1": "c2hvcnQ="}, "active_key_label": "k1"}`, `encryption_keys["k1"]`),
		Entry("an active key label that names no key", `{"listen_address": ":8889", "data_dir": "/d", "encryption_keys": {"k1": "`+strings.Repeat("A", 43)+`="}, "active_key_label": "k2"}`, "active_key_label"),
		Entry("a negative cap on requests in flight", `{"listen_address": ":8889", "data_dir": "/d", "max_requests_in_flight": -1}`, "max_requests_in_flight"),
		Entry("a negative max_rollouts_in_flight", `{"listen_address": ":8889", "data_dir": "/d", "max_rollouts_in_flight": -1}`, "max_rollouts_in_flight"),
		Entry("a max_rollouts_in_flight past a million", `{"listen_address": ":8889", "data_dir": "/d", "max_rollouts_in_flight": 1000001}`, "max_rollouts_in_flight"),
		Entry("a negative max_starts_per_cell_per_second", `{"listen_address": ":8889", "data_dir": "/d", "max_starts_per_cell_per_second": -1}`, "max_starts_per_cell_per_second"),
		Entry("a max_starts_per_cell_per_second past 100,000", `{"listen_address": ":8889", "data_dir": "/d", "max_starts_per_cell_per_second": 100001}`, "max_starts_per_cell_per_second"),
		Entry("a negative max_asset_downloads_per_cell", `{"listen_address": ":8889", "data_dir": "/d", "max_asset_downloads_per_cell": -1}`, "max_asset_downloads_per_cell"),
		Entry("a max_asset_downloads_per_cell past 10,000", `{"listen_address": ":8889", "data_dir": "/d", "max_asset_downloads_per_cell": 10001}`, "max_asset_downloads_per_cell"),
		Entry("a quarantine_on_crash_spike that is not a boolean", `{"listen_address": ":8889", "data_dir": "/d", "quarantine_on_crash_spike": "yes"}`, "quarantine_on_crash_spike"),
		Entry("a max_rollouts_in_flight that is not a number", `{"listen_address": ":8889", "data_dir": "/d", "max_rollouts_in_flight": "ten"}`, "max_rollouts_in_flight"),
		Entry("a negative cap on event subscribers", `{"listen_address": ":8889", "data_dir": "/d", "max_event_subscribers": -5}`, "max_event_subscribers"),
		Entry("a negative cap on event log readers", `{"listen_address": ":8889", "data_dir": "/d", "max_event_log_readers_per_client": -1}`, "max_event_log_readers_per_client"),
		Entry("a negative cap on connections", `{"listen_address": ":8889", "data_dir": "/d", "max_connections": -1}`, "max_connections"),
		Entry("a negative cap on connections per address", `{"listen_address": ":8889", "data_dir": "/d", "max_connections_per_address": -1}`, "max_connections_per_address"),
		Entry("a negative reservation for cells", `{"listen_address": ":8889", "data_dir": "/d", "reserved_cell_requests": -1}`, "reserved_cell_requests"),
		Entry("a reservation for cells of every request", `{"listen_address": ":8889", "data_dir": "/d", "max_requests_in_flight": 100, "reserved_cell_requests": 100}`, "reserved_cell_requests"),
		Entry("a reservation for cells over the default requests in flight", `{"listen_address": ":8889", "data_dir": "/d", "reserved_cell_requests": 1000}`, "reserved_cell_requests"),
		Entry("a negative cap on a client's requests", `{"listen_address": ":8889", "data_dir": "/d", "max_requests_per_client": -1}`, "max_requests_per_client"),
		Entry("a negative cap on a client's list streams", `{"listen_address": ":8889", "data_dir": "/d", "max_list_streams_per_client": -1}`, "max_list_streams_per_client"),
		Entry("a negative cap on a client's bodies", `{"listen_address": ":8889", "data_dir": "/d", "max_body_readers_per_client": -1}`, "max_body_readers_per_client"),
		Entry("a cap on a client's bodies of the wrong type", `{"listen_address": ":8889", "data_dir": "/d", "max_body_readers_per_client": "many"}`, "max_body_readers_per_client"),
		Entry("a negative cap on a client's event streams", `{"listen_address": ":8889", "data_dir": "/d", "max_event_streams_per_client": -1}`, "max_event_streams_per_client"),
		Entry("a body timeout that is no duration", `{"listen_address": ":8889", "data_dir": "/d", "request_body_timeout": "soon"}`, "request_body_timeout"),
		Entry("a body timeout too short", `{"listen_address": ":8889", "data_dir": "/d", "request_body_timeout": "1ms"}`, "request_body_timeout"),
		Entry("a list write timeout under a second", `{"listen_address": ":8889", "data_dir": "/d", "list_write_timeout": "10ms"}`, "list_write_timeout"),
		Entry("encryption keys without an active label", `{"listen_address": ":8889", "data_dir": "/d", "encryption_keys": {"k1": "`+strings.Repeat("A", 43)+`="}}`, "active_key_label"),
		Entry("a trigger spacing that is no duration", `{"listen_address": ":8889", "data_dir": "/d", "convergence_trigger_spacing": "soon"}`, "convergence_trigger_spacing"),
		Entry("a negative blocked_alert_after", `{"listen_address": ":8889", "data_dir": "/d", "blocked_alert_after": "-1m"}`, "blocked_alert_after"),
		Entry("a negative trigger spacing", `{"listen_address": ":8889", "data_dir": "/d", "convergence_trigger_spacing": "-5ms"}`, "convergence_trigger_spacing"),
		Entry("no JSON at all", `listen_address = ":8889"`, "invalid character"),
	)

	It("names a missing file", func() {
		_, err := buildConfig("/nonexistent/bbs.json", false, "", "")
		Expect(err).To(MatchError(ContainSubstring("/nonexistent/bbs.json")))
	})

	Describe("dev mode", func() {
		It("needs no file: SQLite under ./.data, loopback port 8889", func() {
			cfg, err := buildConfig("", true, "", "")
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.ListenAddress).To(Equal("127.0.0.1:8889"))
			Expect(cfg.DatabaseDriver).To(Equal("sqlite"))
			Expect(cfg.dsn()).To(Equal(filepath.Join(".data", "board.db")))
			Expect(cfg.cellPresenceTTL()).To(Equal(handlers.DefaultPresenceTTL))
			Expect(cfg.runnerConfig().Interval).To(Equal(runner.DefaultInterval))
			Expect(cfg.runnerConfig().LeaseTTL).To(Equal(convergence.DefaultLeaseTTL))
			Expect(cfg.runnerConfig().Planner).To(Equal(convergence.DefaultConfig()))
			Expect(cfg.BoardID).NotTo(BeEmpty())
		})

		DescribeTable("listens on loopback only",
			func(listen string, allowed bool) {
				_, err := buildConfig("", true, listen, "")
				if allowed {
					Expect(err).NotTo(HaveOccurred())
				} else {
					Expect(err).To(MatchError(ContainSubstring("listen_address")))
				}
			},
			Entry("127.0.0.1", "127.0.0.1:0", true),
			Entry("::1", "[::1]:8889", true),
			Entry("localhost", "localhost:8889", true),
			Entry("every interface", ":8889", false),
			Entry("0.0.0.0", "0.0.0.0:8889", false),
			Entry("a LAN address", "192.168.1.10:8889", false),
			Entry("a host name", "board.example:8889", false),
		)

		It("does not mix with -config", func() {
			_, err := buildConfig(writeConfig(`{"listen_address": ":8889", "data_dir": "/d"}`), true, "", "")
			Expect(err).To(MatchError(ContainSubstring("-dev")))
		})
	})

	It("needs -config or -dev", func() {
		_, err := buildConfig("", false, "", "")
		Expect(err).To(MatchError(ContainSubstring("-config")))
	})
})
