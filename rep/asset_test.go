package rep_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep"
)

var _ = Describe("Executor assets", func() {
	var (
		cfg      rep.ExecutorConfig
		executor *rep.Executor
		server   *assetServer
	)

	BeforeEach(func() {
		cfg = newConfig()
		// Nothing of an instance with assets comes from the apps dir.
		cfg.AppsDir = GinkgoT().TempDir()
		server = newAssetServer()
	})

	JustBeforeEach(func() {
		executor = startExecutor(cfg)
	})

	instanceDir := func(guid string) string {
		return filepath.Join(cfg.DataDir, "instances", guid)
	}

	logOf := func(guid string) string {
		GinkgoHelper()
		log, err := executor.LogTail(guid, 200)
		Expect(err).NotTo(HaveOccurred())
		return string(log)
	}

	// answers asks the hello app on the instance's port who it is.
	answers := func(st rep.InstanceStatus) map[string]any {
		GinkgoHelper()
		var body map[string]any
		Eventually(func() error {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", hostPort(st)))
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			return json.NewDecoder(resp.Body).Decode(&body)
		}).Should(Succeed())
		return body
	}

	// expectFailedStart checks that a start that failed left nothing
	// running, and kept its log with the reason.
	expectFailedStart := func(guid string, err error, ending string) {
		GinkgoHelper()
		Expect(executor.Instances()).To(BeEmpty())
		Expect(filepath.Join(instanceDir(guid), "started")).NotTo(BeAnExistingFile())
		ended, ok := executor.Ended(guid)
		Expect(ok).To(BeTrue(), "the failed start is kept as an ended instance")
		Expect(ended.Ending).To(Equal(ending + err.Error()))
		Expect(logOf(guid)).To(ContainSubstring("could not start: " + err.Error()))
	}

	// touchStarted is an action that would show it ran.
	touchStarted := []string{"-c", "touch started; sleep 60"}

	Describe("droplets", func() {
		It("unpacks a .tgz into the instance's directory, keeping modes, and runs the app from it", func() {
			asset := server.add("/hello-v1.tgz", tgzOf(
				archiveEntry{name: "app/", mode: 0o755},
				archiveEntry{name: "app/hello", mode: 0o755, body: helloBinary()},
				archiveEntry{name: "app/static/index.html", mode: 0o640, body: []byte("<h1>hi</h1>")},
				archiveEntry{name: "app/current", link: "hello"},
			), ".")
			def := assetDefinition("app/hello", nil, asset)
			def.HealthCheck = httpCheck()
			st := runHealthy(executor, spec("tgz", def))
			Expect(answers(st)).To(HaveKeyWithValue("instance_guid", "tgz"))

			info, err := os.Stat(filepath.Join(instanceDir("tgz"), "app", "static", "index.html"))
			Expect(err).NotTo(HaveOccurred())
			Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o640)))
			link, err := os.Readlink(filepath.Join(instanceDir("tgz"), "app", "current"))
			Expect(err).NotTo(HaveOccurred())
			Expect(link).To(Equal("hello"))

			log := logOf("tgz")
			Expect(log).To(ContainSubstring(fmt.Sprintf("downloading asset %s (sha256 %s)", asset.Url, asset.Sha256)))
			Expect(log).To(MatchRegexp(`asset %s ready in [0-9.]+(µs|ms|s) \(downloaded [0-9.]+ MB\)`, asset.Url))
			Expect(log).To(ContainSubstring("starting " + filepath.Join(instanceDir("tgz"), "app", "hello")))
			Expect(executor.AssetCacheStats()).To(And(HaveField("Downloads", int64(1)), HaveField("Hits", int64(0))))
		})

		It("unpacks a .zip into its destination directory and runs the app from it", func() {
			asset := server.add("/hello.zip", zipOf(
				archiveEntry{name: "bin/", mode: 0o755},
				archiveEntry{name: "bin/hello", mode: 0o755, body: helloBinary()},
				archiveEntry{name: "README", mode: 0o644, body: []byte("hello")},
			), "droplet")
			def := assetDefinition("droplet/bin/hello", nil, asset)
			def.HealthCheck = httpCheck()
			st := runHealthy(executor, spec("zip", def))
			Expect(answers(st)).To(HaveKeyWithValue("instance_guid", "zip"))
			info, err := os.Stat(filepath.Join(instanceDir("zip"), "droplet", "README"))
			Expect(err).NotTo(HaveOccurred())
			Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o644)))
		})

		It("takes a file:// asset as an executable file, and finds a bare action name in the instance's directory", func() {
			path := filepath.Join(appsDir, "hello")
			asset := &models.Asset{Url: "file://" + path, Sha256: sha256Hex(helloBinary()), Destination: "hello"}
			def := assetDefinition("hello", nil, asset)
			def.HealthCheck = tcpCheck()
			st := runHealthy(executor, spec("file", def))
			Expect(answers(st)).To(HaveKeyWithValue("instance_guid", "file"))
			info, err := os.Stat(filepath.Join(instanceDir("file"), "hello"))
			Expect(err).NotTo(HaveOccurred())
			Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o755)))
			Expect(logOf("file")).To(ContainSubstring("starting " + filepath.Join(instanceDir("file"), "hello")))
		})

		It("resolves a relative action dir in the instance's directory", func() {
			asset := server.add("/site.tgz", tgzOf(archiveEntry{name: "site/index.html", mode: 0o644, body: []byte("x")}), ".")
			def := assetDefinition("sh", []string{"-c", "pwd; ls"}, asset)
			def.Action.Dir = "site"
			_, err := executor.Run(spec("dir", def))
			Expect(err).NotTo(HaveOccurred())
			Eventually(executor.Events()).Should(Receive(HaveField("Kind", rep.Crashed)))
			Expect(logOf("dir")).To(ContainSubstring(filepath.Join(instanceDir("dir"), "site") + "\nindex.html\n"))
		})

		It("says so when the assets do not hold the action", func() {
			asset := server.add("/empty.tgz", tgzOf(archiveEntry{name: "README", mode: 0o644, body: []byte("x")}), ".")
			_, err := executor.Run(spec("no-app", assetDefinition("./hello", nil, asset)))
			Expect(err).To(MatchError(fmt.Sprintf(`InstanceSpec.Definition.action.path "./hello": %s does not exist`, filepath.Join(instanceDir("no-app"), "hello"))))
			expectFailedStart("no-app", err, "crashed: ")
		})
	})

	Describe("failed downloads", func() {
		It("never starts an instance whose download does not match its checksum, naming the asset and both checksums", func() {
			cfg.PortMin, cfg.PortMax = freePortRange(1)
			executor = startExecutor(cfg)
			asset := server.add("/hello-v2.tgz", []byte("not the droplet you are looking for"), ".")
			got := asset.Sha256
			asset.Sha256 = sha256Hex([]byte("the droplet"))
			_, err := executor.Run(spec("mismatch", assetDefinition("sh", touchStarted, asset)))
			Expect(err).To(MatchError(fmt.Sprintf("asset %s/hello-v2.tgz: checksum mismatch: the definition names sha256 %s, the download has %s",
				server.url, asset.Sha256, got)))
			expectFailedStart("mismatch", err, "crashed: ")
			Expect(logOf("mismatch")).To(ContainSubstring("downloading asset " + asset.Url))

			By("keeping nothing of it in the cache")
			Expect(executor.AssetCacheStats()).To(Equal(rep.AssetCacheStats{Downloads: 1, Failures: 1}))
			Expect(os.ReadDir(filepath.Join(cfg.DataDir, "assets"))).To(BeEmpty())

			By("freeing its port")
			Expect(executor.Run(spec("after", assetDefinition("sh", []string{"-c", "sleep 60"})))).NotTo(BeNil())
		})

		It("reports a URL nobody answers at", func() {
			listener, err := net.Listen("tcp", "127.0.0.1:0")
			Expect(err).NotTo(HaveOccurred())
			url := "http://" + listener.Addr().String() + "/hello.tgz"
			listener.Close()
			asset := &models.Asset{Url: url, Sha256: sha256Hex([]byte("x")), Destination: "."}
			_, err = executor.Run(spec("unreachable", assetDefinition("sh", touchStarted, asset)))
			Expect(err).To(MatchError(fmt.Sprintf("asset %s: download failed: GET %s: connection refused", url, url)))
			expectFailedStart("unreachable", err, "crashed: ")
		})

		// Issue 26: reps fetched 169.254.169.254. The board refuses such
		// URLs; the rep refuses to connect to such an address whatever
		// led there, before any packet is sent.
		It("refuses to connect to a link-local or metadata address, named or redirected to", func() {
			direct := &models.Asset{Url: "http://169.254.169.254:1/latest/meta-data/", Sha256: sha256Hex([]byte("x")), Destination: "creds"}
			_, err := executor.Run(spec("metadata", assetDefinition("sh", touchStarted, direct)))
			Expect(err).To(MatchError(fmt.Sprintf("asset %s: download failed: GET %s: 169.254.169.254: refusing to fetch an asset from a link-local or cloud metadata address (the rep's allow_link_local_asset_hosts allows it)", direct.Url, direct.Url)))
			expectFailedStart("metadata", err, "crashed: ")

			redirector := httptest.NewServer(http.RedirectHandler("http://[fe80::1]:1/creds", http.StatusFound))
			DeferCleanup(redirector.Close)
			redirected := &models.Asset{Url: redirector.URL + "/app", Sha256: sha256Hex([]byte("x")), Destination: "app"}
			_, err = executor.Run(spec("redirected", assetDefinition("sh", touchStarted, redirected)))
			Expect(err).To(MatchError(ContainSubstring("fe80::1: refusing to fetch an asset from a link-local or cloud metadata address")))
		})

		It("reports an HTTP error", func() {
			asset := &models.Asset{Url: server.url + "/missing.tgz", Sha256: sha256Hex([]byte("x")), Destination: "."}
			_, err := executor.Run(spec("404", assetDefinition("sh", touchStarted, asset)))
			Expect(err).To(MatchError(fmt.Sprintf("asset %s/missing.tgz: HTTP 404 Not Found", server.url)))
			expectFailedStart("404", err, "crashed: ")
		})

		It("reports a file:// asset that is not there", func() {
			asset := &models.Asset{Url: "file:///no/such/file", Sha256: sha256Hex([]byte("x")), Destination: "f"}
			_, err := executor.Run(spec("no-file", assetDefinition("sh", touchStarted, asset)))
			Expect(err).To(MatchError("asset file:///no/such/file: download failed: open /no/such/file: no such file or directory"))
		})

		DescribeTable("reports an archive that is not one",
			func(path, message string) {
				asset := server.add(path, []byte("this is no archive at all"), ".")
				_, err := executor.Run(spec("corrupt", assetDefinition("sh", touchStarted, asset)))
				Expect(err).To(MatchError(fmt.Sprintf("asset %s%s: %s", server.url, path, message)))
				expectFailedStart("corrupt", err, "crashed: ")
			},
			Entry(".tgz", "/droplet.tgz", "not a valid .tgz archive: gzip: invalid header"),
			Entry(".tar.gz", "/droplet.tar.gz", "not a valid .tar.gz archive: gzip: invalid header"),
			Entry(".zip", "/droplet.zip", "not a valid .zip archive: zip: not a valid zip file"),
		)

		DescribeTable("refuses an archive with an entry that escapes its destination, writing nothing outside",
			func(message string, entries ...archiveEntry) {
				asset := server.add("/evil.tgz", tgzOf(entries...), "app")
				_, err := executor.Run(spec("evil", assetDefinition("sh", touchStarted, asset)))
				Expect(err).To(MatchError(fmt.Sprintf("asset %s/evil.tgz: %s", server.url, message)))
				// The destination is app/, so its parent is the instance's
				// directory.
				Expect(filepath.Join(instanceDir("evil"), "evil")).NotTo(BeAnExistingFile())
				Expect(filepath.Join(instanceDir("evil"), "evil.txt")).NotTo(BeAnExistingFile())
				expectFailedStart("evil", err, "crashed: ")
			},
			Entry("a .. entry", `archive entry "../evil" climbs out of its destination`,
				archiveEntry{name: "../evil", mode: 0o644, body: []byte("x")}),
			Entry("an absolute entry", `archive entry "/tmp/evil" has an absolute name`,
				archiveEntry{name: "/tmp/evil", mode: 0o644, body: []byte("x")}),
			Entry("an absolute symlink", `archive entry "etc" is a symlink to "/etc", outside its destination`,
				archiveEntry{name: "etc", link: "/etc"}),
			Entry("a symlink that climbs out", `archive entry "sub/up" is a symlink to "../../..", outside its destination`,
				archiveEntry{name: "sub/up", link: "../../.."}),
			Entry("a symlink that climbs out through another", `archive entry "x" is a symlink to "here/..", outside its destination`,
				archiveEntry{name: "here", link: "."},
				archiveEntry{name: "x", link: "here/.."},
				archiveEntry{name: "x/evil.txt", mode: 0o644, body: []byte("x")}),
		)
	})

	Describe("the cell's cache", func() {
		It("downloads an asset once for starts that need it at the same time", func() {
			asset := server.add("/hello.tgz", tgzOf(archiveEntry{name: "hello", mode: 0o755, body: helloBinary()}), ".")
			release := server.hold()
			const starts = 8
			errs := make(chan error, starts)
			for i := range starts {
				go func() {
					defer GinkgoRecover()
					_, err := executor.Run(spec(fmt.Sprintf("shared-%d", i), assetDefinition("./hello", nil, asset)))
					errs <- err
				}()
			}
			// Every start waits for the one download before it answers.
			Eventually(func() int64 { return executor.AssetCacheStats().Hits }).Should(Equal(int64(starts - 1)))
			Expect(server.count("/hello.tgz")).To(Equal(1))
			release()
			for range starts {
				var err error
				Eventually(errs).Should(Receive(&err))
				Expect(err).NotTo(HaveOccurred())
			}
			Expect(server.count("/hello.tgz")).To(Equal(1))
			stats := executor.AssetCacheStats()
			Expect(stats.Downloads).To(Equal(int64(1)))
			Expect(stats.Hits).To(Equal(int64(starts - 1)))
			Expect(stats.Entries).To(Equal(1))
			Expect(executor.Instances()).To(HaveLen(starts))
			waited := 0
			for i := range starts {
				log := logOf(fmt.Sprintf("shared-%d", i))
				Expect(log).To(ContainSubstring("asset " + asset.Url + " ready in"))
				if strings.Contains(log, "another start on this cell is downloading it") {
					waited++
				}
			}
			Expect(waited).To(Equal(starts - 1))

			By("serving a later start from the cache")
			_, err := executor.Run(spec("later", assetDefinition("./hello", nil, asset)))
			Expect(err).NotTo(HaveOccurred())
			Expect(logOf("later")).To(MatchRegexp(`asset %s ready in [0-9.]+(µs|ms|s) \(from the cell's cache\)`, asset.Url))
			Expect(server.count("/hello.tgz")).To(Equal(1))
			Expect(executor.AssetCacheStats().Hits).To(Equal(int64(starts)))
		})

		It("gives every start waiting for a download that fails the error, and keeps nothing", func() {
			asset := server.add("/bad.tgz", []byte("bad"), ".")
			asset.Sha256 = sha256Hex([]byte("good"))
			release := server.hold()
			errs := make(chan error, 3)
			for i := range 3 {
				go func() {
					_, err := executor.Run(spec(fmt.Sprintf("fail-%d", i), assetDefinition("sh", touchStarted, asset)))
					errs <- err
				}()
			}
			Eventually(func() int64 { return executor.AssetCacheStats().Hits }).Should(Equal(int64(2)))
			release()
			for range 3 {
				var err error
				Eventually(errs).Should(Receive(&err))
				Expect(err).To(MatchError(ContainSubstring("checksum mismatch")))
			}
			Expect(executor.AssetCacheStats()).To(And(HaveField("Downloads", int64(1)), HaveField("Failures", int64(1)), HaveField("Entries", 0)))

			By("trying again on the next start")
			_, err := executor.Run(spec("fail-again", assetDefinition("sh", touchStarted, asset)))
			Expect(err).To(MatchError(ContainSubstring("checksum mismatch")))
			Expect(server.count("/bad.tgz")).To(Equal(2))
		})

		Describe("with a small limit", func() {
			BeforeEach(func() {
				cfg.AssetCacheBytes = 2500
			})

			It("evicts the least recently used entry, which is downloaded again when needed", func() {
				assets := map[string]*models.Asset{}
				for _, name := range []string{"a", "b", "c"} {
					assets[name] = server.add("/"+name, []byte(strings.Repeat(name, 1000)), name)
				}
				cached := func() []string {
					entries, err := os.ReadDir(filepath.Join(cfg.DataDir, "assets"))
					Expect(err).NotTo(HaveOccurred())
					var sums []string
					for _, entry := range entries {
						sums = append(sums, entry.Name())
					}
					return sums
				}
				n := 0
				use := func(name string) {
					GinkgoHelper()
					n++
					_, err := executor.Run(spec(fmt.Sprintf("%s-%d", name, n), assetDefinition("sh", []string{"-c", "sleep 60"}, assets[name])))
					Expect(err).NotTo(HaveOccurred())
				}

				use("a")
				use("b")
				Expect(executor.AssetCacheStats()).To(And(HaveField("Bytes", int64(2000)), HaveField("Evictions", int64(0))))
				use("c")
				Expect(executor.AssetCacheStats()).To(And(HaveField("Bytes", int64(2000)), HaveField("Evictions", int64(1))))
				Expect(cached()).To(ConsistOf(assets["b"].Sha256, assets["c"].Sha256))

				By("a use of b makes c the least recently used")
				use("b")
				Expect(server.count("/b")).To(Equal(1))
				use("a")
				Expect(server.count("/a")).To(Equal(2))
				Expect(cached()).To(ConsistOf(assets["a"].Sha256, assets["b"].Sha256))
				Expect(executor.AssetCacheStats()).To(Equal(rep.AssetCacheStats{
					Downloads: 4, Hits: 1, Evictions: 2, Bytes: 2000, Entries: 2,
				}))
			})

			It("uses an asset larger than the whole cache and then does not keep it", func() {
				asset := server.add("/big", []byte(strings.Repeat("x", 3000)), "big")
				_, err := executor.Run(spec("big", assetDefinition("sh", []string{"-c", "sleep 60"}, asset)))
				Expect(err).NotTo(HaveOccurred())
				Expect(filepath.Join(instanceDir("big"), "big")).To(BeARegularFile())
				Expect(os.ReadDir(filepath.Join(cfg.DataDir, "assets"))).To(BeEmpty())
				Expect(executor.AssetCacheStats()).To(Equal(rep.AssetCacheStats{Downloads: 1}))
			})
		})

		It("survives a restart on the same data dir, and checks what it finds before it trusts it", func() {
			droplet := tgzOf(archiveEntry{name: "hello", mode: 0o755, body: helloBinary()})
			asset := server.add("/hello.tgz", droplet, ".")
			_, err := executor.Run(spec("first", assetDefinition("./hello", nil, asset)))
			Expect(err).NotTo(HaveOccurred())
			executor.Shutdown()
			cached := filepath.Join(cfg.DataDir, "assets", asset.Sha256)
			Expect(cached).To(BeARegularFile())
			// An unfinished download of a rep that died goes.
			unfinished := filepath.Join(cfg.DataDir, "assets", asset.Sha256+".download-123")
			Expect(os.WriteFile(unfinished, []byte("half"), 0o644)).To(Succeed())

			executor = startExecutor(cfg)
			Expect(unfinished).NotTo(BeAnExistingFile())
			Expect(executor.AssetCacheStats()).To(HaveField("Bytes", int64(len(droplet))))
			_, err = executor.Run(spec("second", assetDefinition("./hello", nil, asset)))
			Expect(err).NotTo(HaveOccurred())
			Expect(server.count("/hello.tgz")).To(Equal(1))
			Expect(logOf("second")).To(ContainSubstring("(from the cell's cache)"))
			Expect(executor.AssetCacheStats()).To(And(HaveField("Downloads", int64(0)), HaveField("Hits", int64(1))))
			executor.Shutdown()

			By("downloading again what no longer matches its checksum")
			Expect(os.WriteFile(cached, []byte("bit rot"), 0o644)).To(Succeed())
			executor = startExecutor(cfg)
			_, err = executor.Run(spec("third", assetDefinition("./hello", nil, asset)))
			Expect(err).NotTo(HaveOccurred())
			Expect(server.count("/hello.tgz")).To(Equal(2))
			Expect(logOf("third")).To(ContainSubstring("does not match its checksum any more: downloading it again"))
			Expect(os.ReadFile(cached)).To(Equal(droplet))
		})
	})

	Describe("slow downloads", func() {
		var asset *models.Asset

		BeforeEach(func() {
			asset = server.add("/slow.tgz", make([]byte, 200_000), ".")
			server.stall("/slow.tgz")
		})

		It("count against the start timeout, which fails the start with a reason saying so", func() {
			def := assetDefinition("sh", touchStarted, asset)
			def.StartTimeoutMs = 2500
			_, err := executor.Run(spec("slow", def))
			Expect(err).To(MatchError(fmt.Sprintf("asset %s: download did not finish within the start timeout of 2.5s (100.0 kB of 200.0 kB)", asset.Url)))
			Expect(err).To(MatchError(context.DeadlineExceeded))
			expectFailedStart("slow", err, "crashed: ")
			// Progress once a second while it lasts.
			Expect(logOf("slow")).To(ContainSubstring(fmt.Sprintf("downloading asset %s: 100.0 kB of 200.0 kB", asset.Url)))
			Eventually(server.gone).Should(Receive(Equal("/slow.tgz")), "the download ended with the start")
			Eventually(func() int64 { return executor.AssetCacheStats().Failures }).Should(Equal(int64(1)))
		})

		It("stop on CancelStart", func() {
			errs := make(chan error, 1)
			go func() {
				_, err := executor.Run(spec("cancelled", assetDefinition("sh", touchStarted, asset)))
				errs <- err
			}()
			Eventually(func() int { return server.count("/slow.tgz") }).Should(Equal(1))
			Consistently(errs, 200*time.Millisecond).ShouldNot(Receive())
			preparing, ok := executor.Preparing("hello", 0)
			Expect(ok).To(BeTrue(), "the index's log is that of the start still downloading")
			Expect(preparing).To(Equal("cancelled"))
			executor.CancelStart("cancelled")
			var err error
			Eventually(errs).Should(Receive(&err))
			Expect(err).To(MatchError(context.Canceled))
			Expect(err).To(MatchError(MatchRegexp(`^asset %s: download stopped \(.* of 200.0 kB\): the start was cancelled$`, asset.Url)))
			expectFailedStart("cancelled", err, "stopped: ")
			_, ok = executor.Preparing("hello", 0)
			Expect(ok).To(BeFalse())
			Eventually(server.gone).Should(Receive(Equal("/slow.tgz")))
		})

		It("stop when the executor shuts down, which does not wait for them", func() {
			errs := make(chan error, 1)
			go func() {
				_, err := executor.Run(spec("shut-down", assetDefinition("sh", touchStarted, asset)))
				errs <- err
			}()
			Eventually(func() int { return server.count("/slow.tgz") }).Should(Equal(1))
			shutDown := make(chan struct{})
			go func() {
				executor.Shutdown()
				close(shutDown)
			}()
			Eventually(shutDown).Should(BeClosed())
			var err error
			Eventually(errs).Should(Receive(&err))
			Expect(err).To(MatchError(context.Canceled))
			Expect(err).To(MatchError(ContainSubstring("the executor is shutting down")))
		})
	})

	It("CancelStart leaves a running instance and an unknown one alone", func() {
		asset := server.add("/sleep", []byte("#!/bin/sh\nsleep 60\n"), "sleep.sh")
		st := func() rep.InstanceStatus {
			_, err := executor.Run(spec("running", assetDefinition("./sleep.sh", nil, asset)))
			Expect(err).NotTo(HaveOccurred())
			return status(executor, "running")
		}()
		executor.CancelStart("running")
		executor.CancelStart("unknown")
		Consistently(func() bool { return processGone(st.Pid) }, 300*time.Millisecond).Should(BeFalse())
		Expect(executor.Instances()).To(HaveLen(1))
	})

	It("runs concurrent starts of different assets each with its own download", func() {
		var wg sync.WaitGroup
		for i := range 3 {
			asset := server.add(fmt.Sprintf("/file-%d", i), []byte(fmt.Sprintf("file %d", i)), "f")
			wg.Go(func() {
				defer GinkgoRecover()
				_, err := executor.Run(spec(fmt.Sprintf("own-%d", i), assetDefinition("sh", []string{"-c", "sleep 60"}, asset)))
				Expect(err).NotTo(HaveOccurred())
			})
		}
		wg.Wait()
		Expect(executor.AssetCacheStats()).To(And(HaveField("Downloads", int64(3)), HaveField("Entries", 3)))
	})
})
