package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
)

var _ = Describe("rep -config", func() {
	// validConfig is a config that starts; entries change one key.
	validConfig := func() map[string]any {
		return map[string]any{
			"cell_id":        "cell-z1",
			"zone":           "z1",
			"capacity":       map[string]any{"memory_mb": 1024, "disk_mb": 1024, "instances": 8},
			"board_url":      "http://127.0.0.1:1",
			"listen_address": "127.0.0.1:0",
			"data_dir":       GinkgoT().TempDir(),
		}
	}

	// start runs the rep with cfg written to a file (raw when it is a
	// string) and returns the session.
	start := func(cfg any) *gexec.Session {
		GinkgoHelper()
		raw, ok := cfg.(string)
		if !ok {
			encoded, err := json.Marshal(cfg)
			Expect(err).NotTo(HaveOccurred())
			raw = string(encoded)
		}
		path := filepath.Join(GinkgoT().TempDir(), "rep.json")
		Expect(os.WriteFile(path, []byte(raw), 0o600)).To(Succeed())
		session, err := gexec.Start(exec.Command(repPath, "-config", path), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { session.Kill().Wait(time.Minute) })
		return session
	}

	DescribeTable("refuses a bad config with exit 2 and one error naming the key",
		func(change func(map[string]any), want string) {
			cfg := validConfig()
			change(cfg)
			session := start(cfg)
			Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(2))
			Expect(string(session.Err.Contents())).To(Equal("rep: config: " + want + "\n"))
		},
		Entry("no cell_id", func(c map[string]any) { delete(c, "cell_id") }, `cell_id: required, e.g. "cell-z1"`),
		Entry("a relative file_asset_dirs entry", func(c map[string]any) { c["file_asset_dirs"] = []any{"/srv/droplets", "droplets"} }, `file_asset_dirs[1]: must be an absolute path, got "droplets"`),
		Entry("no capacity", func(c map[string]any) { delete(c, "capacity") },
			`capacity: required, e.g. {"memory_mb": 4096, "disk_mb": 8192, "instances": 32}`),
		Entry("zero instances", func(c map[string]any) { c["capacity"] = map[string]any{"memory_mb": 1, "disk_mb": 1} },
			"capacity.instances: must be above 0, got 0"),
		Entry("no board_url", func(c map[string]any) { delete(c, "board_url") }, `board_url: required, e.g. "http://127.0.0.1:8889"`),
		Entry("a board_url that is no URL", func(c map[string]any) { c["board_url"] = "127.0.0.1:8889" },
			`board_url: "127.0.0.1:8889" is not an http(s) URL`),
		Entry("no listen_address", func(c map[string]any) { delete(c, "listen_address") },
			`listen_address: required, e.g. "127.0.0.1:1800"`),
		Entry("no data_dir", func(c map[string]any) { delete(c, "data_dir") },
			"data_dir: required: the instances' working directories go there"),
		Entry("a missing apps_dir", func(c map[string]any) { c["apps_dir"] = "/no/such/dir" },
			`apps_dir: "/no/such/dir" is not a directory`),
		Entry("a reversed port_range", func(c map[string]any) { c["port_range"] = "61099-61000" },
			`port_range: "61099-61000" is not first-last with 1 <= first <= last <= 65535`),
		Entry("a port_range with fewer ports than instances", func(c map[string]any) {
			c["port_range"] = "61000-61002"
			c["capacity"] = map[string]any{"memory_mb": 1024, "disk_mb": 1024, "instances": 16}
		}, `port_range: "61000-61002" holds 3 ports, fewer than capacity.instances (16): every instance with a port needs its own`),
		Entry("a bad duration", func(c map[string]any) { c["stop_grace_period"] = "soon" },
			`stop_grace_period: "soon" is not a positive duration like "30s"`),
		Entry("a bad unroutable_retry_timeout", func(c map[string]any) { c["unroutable_retry_timeout"] = "-1s" },
			`unroutable_retry_timeout: "-1s" is not a positive duration like "30s"`),
		Entry("a zero retry_interval", func(c map[string]any) { c["retry_interval"] = "0s" },
			`retry_interval: "0s" is not a positive duration like "30s"`),
		Entry("a zero occupancy_batch_interval", func(c map[string]any) { c["occupancy_batch_interval"] = "0s" },
			`occupancy_batch_interval: "0s" is not a positive duration like "30s"`),
		Entry("a health_report_interval below 100ms", func(c map[string]any) { c["health_report_interval"] = "10ms" },
			`health_report_interval: "10ms" is neither "0s" (no reports) nor a duration of at least 100ms like "10s"`),
		Entry("a negative health_report_interval", func(c map[string]any) { c["health_report_interval"] = "-1s" },
			`health_report_interval: "-1s" is neither "0s" (no reports) nor a duration of at least 100ms like "10s"`),
		Entry("a bad log_level", func(c map[string]any) { c["log_level"] = "loud" },
			`log_level: "loud" is not one of debug, info, error, fatal`),
		Entry("a zero instance_log_limit_mb", func(c map[string]any) { c["instance_log_limit_mb"] = 0 },
			"instance_log_limit_mb: must be 1 or more, got 0"),
		Entry("a negative instance_log_limit_mb", func(c map[string]any) { c["instance_log_limit_mb"] = -5 },
			"instance_log_limit_mb: must be 1 or more, got -5"),
		Entry("a zero asset_cache_mb", func(c map[string]any) { c["asset_cache_mb"] = 0 },
			"asset_cache_mb: must be 1 or more, got 0"),
		Entry("a negative asset_cache_mb", func(c map[string]any) { c["asset_cache_mb"] = -1 },
			"asset_cache_mb: must be 1 or more, got -1"),
		Entry("a placement tag that is empty", func(c map[string]any) { c["placement_tags"] = []string{"ssd", " "} },
			"placement_tags[1]: must not be empty"),
		Entry("an unknown isolation", func(c map[string]any) { c["isolation"] = "some" },
			`isolation: must be "auto", "full" or "none", got "some"`),
		Entry("an instance_uid_range holding root", func(c map[string]any) {
			c["instance_uid_range"] = map[string]any{"first": 0, "count": 100}
		}, "instance_uid_range: first must be at least 1000 (ids below are root and system users), got 0"),
		Entry("an empty instance_uid_range", func(c map[string]any) {
			c["instance_uid_range"] = map[string]any{"first": 200000, "count": 0}
		}, "instance_uid_range: count must be at least 1"),
		Entry("a zero instance_max_processes", func(c map[string]any) { c["instance_max_processes"] = 0 },
			"instance_max_processes: must be 1 or more, got 0"),
		Entry("a zero instance_max_open_files", func(c map[string]any) { c["instance_max_open_files"] = 0 },
			"instance_max_open_files: must be 1 or more, got 0"),
	)

	It("refuses an unknown key and a value of the wrong type, naming the key", func() {
		cfg := validConfig()
		cfg["poll_intervall"] = "1s"
		session := start(cfg)
		Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(2))
		Expect(string(session.Err.Contents())).To(ContainSubstring(`unknown field "poll_intervall"`))

		cfg = validConfig()
		cfg["capacity"] = map[string]any{"memory_mb": "lots", "disk_mb": 1, "instances": 1}
		session = start(cfg)
		Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(2))
		Expect(string(session.Err.Contents())).To(ContainSubstring("capacity.memory_mb: want a int32, got a JSON string"))

		cfg = validConfig()
		cfg["instance_log_limit_mb"] = "10MB"
		session = start(cfg)
		Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(2))
		Expect(string(session.Err.Contents())).To(ContainSubstring("instance_log_limit_mb: want a int32, got a JSON string"))

		cfg = validConfig()
		cfg["asset_cache_mb"] = "1GB"
		session = start(cfg)
		Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(2))
		Expect(string(session.Err.Contents())).To(ContainSubstring("asset_cache_mb: want a int32, got a JSON string"))
	})

	It("wants -config", func() {
		session, err := gexec.Start(exec.Command(repPath), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(2))
		Expect(string(session.Err.Contents())).To(Equal("rep: need -config FILE\n"))
	})

	It("starts with a good config, waits for an absent board, and exits 0 on SIGINT", func() {
		session := start(validConfig())
		Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`"asset_cache_mb":1024[,}]`))
		Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`"instance_log_limit_mb":10[,}]`))
		Expect(string(session.Out.Contents())).To(ContainSubstring(`"event_stream":true`))
		Expect(string(session.Out.Contents())).To(ContainSubstring(`"poll_interval":"10s"`))
		Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`rep\.server\.listening`))
		Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`rep\.agent\.heartbeat-failed`))
		session.Interrupt()
		Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(0))
	})

	It("takes asset_cache_mb, and keeps the cache in data_dir/assets", func() {
		cfg := validConfig()
		cfg["asset_cache_mb"] = 64
		session := start(cfg)
		Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`"asset_cache_mb":64[,}]`))
		Expect(filepath.Join(cfg["data_dir"].(string), "assets")).To(BeADirectory())
		Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`rep\.server\.listening`))
		session.Interrupt()
		Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(0))
	})

	It("refuses link-local asset hosts by default, takes allow_link_local_asset_hosts, and says which", func() {
		session := start(validConfig())
		Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`"allow_link_local_asset_hosts":false`))
		// Interrupted once it listens: before, SIGINT is not yet its own.
		Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`rep\.server\.listening`))
		session.Interrupt()
		Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(0))

		cfg := validConfig()
		cfg["allow_link_local_asset_hosts"] = true
		session = start(cfg)
		Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`"allow_link_local_asset_hosts":true`))
		Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`rep\.server\.listening`))
		session.Interrupt()
		Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(0))

		cfg["allow_link_local_asset_hosts"] = "yes"
		session = start(cfg)
		Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(2))
		Expect(string(session.Err.Contents())).To(ContainSubstring("allow_link_local_asset_hosts"))
	})

	It("takes event_stream false: the rep then only polls, and opens no stream", func() {
		cfg := validConfig()
		cfg["event_stream"] = false
		cfg["retry_interval"] = "50ms"
		session := start(cfg)
		Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`"event_stream":false`))
		Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`rep\.agent\.heartbeat-failed`))
		session.Interrupt()
		Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(0))
		Expect(string(session.Out.Contents())).NotTo(ContainSubstring("event-stream"))

		By("a rep that follows the stream tries to open it, and says so")
		session = start(validConfig())
		Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`rep\.agent\.event-stream-refused`))
		session.Interrupt()
		Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(0))
	})

	It("takes instance_log_limit_mb", func() {
		cfg := validConfig()
		cfg["instance_log_limit_mb"] = 1
		session := start(cfg)
		Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`"instance_log_limit_mb":1[,}]`))
		// Listening says the rep handles signals; before, SIGINT kills it.
		Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`rep\.server\.listening`))
		session.Interrupt()
		Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(0))
	})

	Describe("isolation", func() {
		// unprivileged runs the rep as a user that is not root: as nobody
		// when the suite runs as root (CI), as itself otherwise. The rep,
		// its config and its data dir are where that user can reach them.
		unprivileged := func(cfg map[string]any) *gexec.Session {
			GinkgoHelper()
			// Right under the temp dir: a test's TempDir is under a
			// directory only its owner may enter.
			dir, err := os.MkdirTemp("", "rep-unprivileged-")
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(os.RemoveAll, dir)
			Expect(os.Chmod(dir, 0o755)).To(Succeed())
			bin := filepath.Join(dir, "rep")
			data, err := os.ReadFile(repPath)
			Expect(err).NotTo(HaveOccurred())
			Expect(os.WriteFile(bin, data, 0o755)).To(Succeed())
			dataDir := filepath.Join(dir, "data")
			Expect(os.Mkdir(dataDir, 0o755)).To(Succeed())
			cfg["data_dir"] = dataDir
			raw, err := json.Marshal(cfg)
			Expect(err).NotTo(HaveOccurred())
			path := filepath.Join(dir, "rep.json")
			Expect(os.WriteFile(path, raw, 0o644)).To(Succeed())
			cmd := exec.Command(bin, "-config", path)
			cmd.Dir = dir
			if os.Geteuid() == 0 {
				Expect(os.Chown(dataDir, nobody, nobody)).To(Succeed())
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
			}
			session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() { session.Kill().Wait(time.Minute) })
			return session
		}

		It(`refuses to start with "full" where it cannot isolate, naming what is missing`, func() {
			cfg := validConfig()
			cfg["isolation"] = "full"
			session := unprivileged(cfg)
			Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(1))
			uid := os.Geteuid()
			if uid == 0 {
				uid = nobody
			}
			Expect(string(session.Err.Contents())).To(Equal(fmt.Sprintf(
				"rep: isolation \"full\" is not possible here: the rep runs as uid %d, not root: instances need a uid of their own, namespaces and mounts\n", uid)))
		})

		It(`falls back with "auto" where it cannot isolate, and says so at start`, func() {
			session := unprivileged(validConfig())
			Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`rep\.executor\.instances-not-isolated.*"reason":"the rep runs as uid \d+, not root`))
			Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`"isolation":"none"`))
			Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`rep\.server\.listening`))
			session.Interrupt()
			Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(0))
		})

		It(`isolates with "auto" as root`, func() {
			if os.Geteuid() != 0 {
				Skip("isolating instances needs root; CI runs this suite as root")
			}
			session := start(validConfig())
			Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`rep\.executor\.instances-isolated`))
			Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`"isolation":"full"`))
			Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`rep\.server\.listening`))
			session.Interrupt()
			Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(0))
		})
	})
})

// nobody is the uid and gid an unprivileged rep runs as.
const nobody = 65534
