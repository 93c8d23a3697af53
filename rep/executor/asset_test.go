package executor_test

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
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep/executor"
	"github.com/corkboard/corkboard/rep/internal/reptest"
)

var _ = Describe("Executor assets", func() {
	var (
		cfg    executor.ExecutorConfig
		exe    *executor.Executor
		server *reptest.AssetServer
	)

	BeforeEach(func() {
		cfg = newConfig()
		// Nothing of an instance with assets comes from the apps dir.
		cfg.AppsDir = GinkgoT().TempDir()
		// file:// assets come from where the test binaries are built.
		cfg.FileAssetDirs = []string{appsDir}
		server = reptest.NewAssetServer()
	})

	JustBeforeEach(func() {
		exe = reptest.StartExecutor(cfg)
	})

	instanceDir := func(guid string) string {
		return filepath.Join(cfg.DataDir, "instances", guid)
	}

	logOf := func(guid string) string {
		GinkgoHelper()
		log, err := exe.LogTail(guid, 200)
		Expect(err).NotTo(HaveOccurred())
		return string(log)
	}

	// answers asks the hello app on the instance's port who it is.
	answers := func(st executor.InstanceStatus) map[string]any {
		GinkgoHelper()
		var body map[string]any
		Eventually(func() error {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", reptest.HostPort(st)))
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
		Expect(exe.Instances()).To(BeEmpty())
		Expect(filepath.Join(instanceDir(guid), "started")).NotTo(BeAnExistingFile())
		ended, ok := exe.Ended(guid)
		Expect(ok).To(BeTrue(), "the failed start is kept as an ended instance")
		Expect(ended.Ending).To(Equal(ending + err.Error()))
		Expect(logOf(guid)).To(ContainSubstring("could not start: " + err.Error()))
	}

	// touchStarted is an action that would show it ran.
	touchStarted := []string{"-c", "touch started; sleep 60"}

	Describe("droplets", func() {
		It("unpacks a .tgz into the instance's directory, keeping modes, and runs the app from it", func() {
			asset := server.Add("/hello-v1.tgz", tgzOf(
				archiveEntry{name: "app/", mode: 0o755},
				archiveEntry{name: "app/hello", mode: 0o755, body: helloBinary()},
				archiveEntry{name: "app/static/index.html", mode: 0o640, body: []byte("<h1>hi</h1>")},
				archiveEntry{name: "app/current", link: "hello"},
			), ".")
			def := reptest.AssetDefinition("app/hello", nil, asset)
			def.HealthCheck = reptest.HTTPCheck()
			st := reptest.RunHealthy(exe, reptest.Spec("tgz", def))
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
			Expect(exe.AssetCacheStats()).To(And(HaveField("Downloads", int64(1)), HaveField("Hits", int64(0))))
		})

		It("unpacks a .zip into its destination directory and runs the app from it", func() {
			asset := server.Add("/hello.zip", zipOf(
				archiveEntry{name: "bin/", mode: 0o755},
				archiveEntry{name: "bin/hello", mode: 0o755, body: helloBinary()},
				archiveEntry{name: "README", mode: 0o644, body: []byte("hello")},
			), "droplet")
			def := reptest.AssetDefinition("droplet/bin/hello", nil, asset)
			def.HealthCheck = reptest.HTTPCheck()
			st := reptest.RunHealthy(exe, reptest.Spec("zip", def))
			Expect(answers(st)).To(HaveKeyWithValue("instance_guid", "zip"))
			info, err := os.Stat(filepath.Join(instanceDir("zip"), "droplet", "README"))
			Expect(err).NotTo(HaveOccurred())
			Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o644)))
		})

		It("takes a file:// asset as an executable file, and finds a bare action name in the instance's directory", func() {
			path := filepath.Join(appsDir, "hello")
			asset := &models.Asset{Url: "file://" + path, Sha256: reptest.Sha256Hex(helloBinary()), Destination: "hello"}
			def := reptest.AssetDefinition("hello", nil, asset)
			def.HealthCheck = reptest.TCPCheck()
			st := reptest.RunHealthy(exe, reptest.Spec("file", def))
			Expect(answers(st)).To(HaveKeyWithValue("instance_guid", "file"))
			info, err := os.Stat(filepath.Join(instanceDir("file"), "hello"))
			Expect(err).NotTo(HaveOccurred())
			Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o755)))
			Expect(logOf("file")).To(ContainSubstring("starting " + filepath.Join(instanceDir("file"), "hello")))
		})

		It("resolves a relative action dir in the instance's directory", func() {
			asset := server.Add("/site.tgz", tgzOf(archiveEntry{name: "site/index.html", mode: 0o644, body: []byte("x")}), ".")
			def := reptest.AssetDefinition("sh", []string{"-c", "pwd; ls"}, asset)
			def.Action.Dir = "site"
			_, err := exe.Run(reptest.Spec("dir", def))
			Expect(err).NotTo(HaveOccurred())
			Eventually(exe.Events()).Should(Receive(HaveField("Kind", executor.Crashed)))
			Expect(logOf("dir")).To(ContainSubstring(filepath.Join(instanceDir("dir"), "site") + "\nindex.html\n"))
		})

		It("says so when the assets do not hold the action", func() {
			asset := server.Add("/empty.tgz", tgzOf(archiveEntry{name: "README", mode: 0o644, body: []byte("x")}), ".")
			_, err := exe.Run(reptest.Spec("no-app", reptest.AssetDefinition("./hello", nil, asset)))
			Expect(err).To(MatchError(fmt.Sprintf(`InstanceSpec.Definition.action.path "./hello": %s does not exist`, filepath.Join(instanceDir("no-app"), "hello"))))
			expectFailedStart("no-app", err, "crashed: ")
		})
	})

	Describe("failed downloads", func() {
		It("never starts an instance whose download does not match its checksum, naming the asset and both checksums", func() {
			cfg.PortMin, cfg.PortMax = reptest.FreePortRange(1)
			exe = reptest.StartExecutor(cfg)
			asset := server.Add("/hello-v2.tgz", []byte("not the droplet you are looking for"), ".")
			got := asset.Sha256
			asset.Sha256 = reptest.Sha256Hex([]byte("the droplet"))
			_, err := exe.Run(reptest.Spec("mismatch", reptest.AssetDefinition("sh", touchStarted, asset)))
			Expect(err).To(MatchError(fmt.Sprintf("asset %s/hello-v2.tgz: checksum mismatch: the definition names sha256 %s, the download has %s",
				server.URL, asset.Sha256, got)))
			expectFailedStart("mismatch", err, "crashed: ")
			Expect(logOf("mismatch")).To(ContainSubstring("downloading asset " + asset.Url))

			By("keeping nothing of it in the cache")
			Expect(exe.AssetCacheStats()).To(Equal(executor.AssetCacheStats{Downloads: 1, Failures: 1}))
			Expect(os.ReadDir(filepath.Join(cfg.DataDir, "assets"))).To(BeEmpty())

			By("freeing its port")
			Expect(exe.Run(reptest.Spec("after", reptest.AssetDefinition("sh", []string{"-c", "sleep 60"})))).NotTo(BeNil())
		})

		It("reports a URL nobody answers at", func() {
			listener, err := net.Listen("tcp", "127.0.0.1:0")
			Expect(err).NotTo(HaveOccurred())
			url := "http://" + listener.Addr().String() + "/hello.tgz"
			listener.Close()
			asset := &models.Asset{Url: url, Sha256: reptest.Sha256Hex([]byte("x")), Destination: "."}
			_, err = exe.Run(reptest.Spec("unreachable", reptest.AssetDefinition("sh", touchStarted, asset)))
			Expect(err).To(MatchError(fmt.Sprintf("asset %s: download failed: GET %s: connection refused", url, url)))
			expectFailedStart("unreachable", err, "crashed: ")
		})

		// Issue 26: reps fetched 169.254.169.254. The board refuses such
		// URLs; the rep refuses to connect to such an address whatever
		// led there, before any packet is sent.
		It("refuses to connect to a link-local or metadata address, named or redirected to", func() {
			direct := &models.Asset{Url: "http://169.254.169.254:1/latest/meta-data/", Sha256: reptest.Sha256Hex([]byte("x")), Destination: "creds"}
			_, err := exe.Run(reptest.Spec("metadata", reptest.AssetDefinition("sh", touchStarted, direct)))
			Expect(err).To(MatchError(fmt.Sprintf("asset %s: download failed: GET %s: 169.254.169.254: refusing to fetch an asset from a link-local or cloud metadata address (the rep's allow_link_local_asset_hosts allows it)", direct.Url, direct.Url)))
			expectFailedStart("metadata", err, "crashed: ")

			redirector := httptest.NewServer(http.RedirectHandler("http://[fe80::1]:1/creds", http.StatusFound))
			DeferCleanup(redirector.Close)
			redirected := &models.Asset{Url: redirector.URL + "/app", Sha256: reptest.Sha256Hex([]byte("x")), Destination: "app"}
			_, err = exe.Run(reptest.Spec("redirected", reptest.AssetDefinition("sh", touchStarted, redirected)))
			Expect(err).To(MatchError(ContainSubstring("fe80::1: refusing to fetch an asset from a link-local or cloud metadata address")))
		})

		It("reports an HTTP error", func() {
			asset := &models.Asset{Url: server.URL + "/missing.tgz", Sha256: reptest.Sha256Hex([]byte("x")), Destination: "."}
			_, err := exe.Run(reptest.Spec("404", reptest.AssetDefinition("sh", touchStarted, asset)))
			Expect(err).To(MatchError(fmt.Sprintf("asset %s/missing.tgz: HTTP 404 Not Found", server.URL)))
			expectFailedStart("404", err, "crashed: ")
		})

		It("reports a file:// asset that is not there", func() {
			path := filepath.Join(appsDir, "no-such-file")
			asset := &models.Asset{Url: "file://" + path, Sha256: reptest.Sha256Hex([]byte("x")), Destination: "f"}
			_, err := exe.Run(reptest.Spec("no-file", reptest.AssetDefinition("sh", touchStarted, asset)))
			Expect(err).To(MatchError(fmt.Sprintf("asset file://%s: download failed: lstat %s: no such file or directory", path, path)))
		})

		DescribeTable("reports an archive that is not one",
			func(path, message string) {
				asset := server.Add(path, []byte("this is no archive at all"), ".")
				_, err := exe.Run(reptest.Spec("corrupt", reptest.AssetDefinition("sh", touchStarted, asset)))
				Expect(err).To(MatchError(fmt.Sprintf("asset %s%s: %s", server.URL, path, message)))
				expectFailedStart("corrupt", err, "crashed: ")
			},
			Entry(".tgz", "/droplet.tgz", "not a valid .tgz archive: gzip: invalid header"),
			Entry(".tar.gz", "/droplet.tar.gz", "not a valid .tar.gz archive: gzip: invalid header"),
			Entry(".zip", "/droplet.zip", "not a valid .zip archive: zip: not a valid zip file"),
		)

		DescribeTable("refuses an archive with an entry that escapes its destination, writing nothing outside",
			func(message string, entries ...archiveEntry) {
				asset := server.Add("/evil.tgz", tgzOf(entries...), "app")
				_, err := exe.Run(reptest.Spec("evil", reptest.AssetDefinition("sh", touchStarted, asset)))
				Expect(err).To(MatchError(fmt.Sprintf("asset %s/evil.tgz: %s", server.URL, message)))
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

	// The rep reads file:// assets as root for whoever may desire an LRP:
	// only regular files under file_asset_dirs, and a refusal says
	// nothing of what is on the disk.
	Describe("file:// assets outside file_asset_dirs", func() {
		var elsewhere string

		BeforeEach(func() {
			elsewhere = GinkgoT().TempDir()
			Expect(os.WriteFile(filepath.Join(elsewhere, "cell.key"), []byte("secret"), 0o600)).To(Succeed())
			// A link inside a shown directory to a file outside it, and
			// a FIFO (a device would do the same).
			Expect(os.Symlink(filepath.Join(elsewhere, "cell.key"), filepath.Join(cfg.AppsDir, "key-link"))).To(Succeed())
			Expect(syscall.Mkfifo(filepath.Join(cfg.AppsDir, "fifo"), 0o644)).To(Succeed())
			cfg.FileAssetDirs = []string{appsDir, cfg.AppsDir}
		})

		refused := func(path string) error {
			GinkgoHelper()
			asset := &models.Asset{Url: "file://" + path, Sha256: reptest.Sha256Hex([]byte("secret")), Destination: "f"}
			_, err := exe.Run(reptest.Spec("refused", reptest.AssetDefinition("sh", touchStarted, asset)))
			Expect(err).To(HaveOccurred())
			Expect(filepath.Join(instanceDir("refused"), "f")).NotTo(BeAnExistingFile())
			return err
		}

		It("refuses a file outside them, the same whether it is there or not, naming the directories", func() {
			dirs, err := filepath.EvalSymlinks(appsDir)
			Expect(err).NotTo(HaveOccurred())
			shown, err := filepath.EvalSymlinks(cfg.AppsDir)
			Expect(err).NotTo(HaveOccurred())
			for _, path := range []string{filepath.Join(elsewhere, "cell.key"), filepath.Join(elsewhere, "nothing")} {
				Expect(refused(path)).To(MatchError(fmt.Sprintf(
					"asset file://%s: refusing to read %s: this rep reads file:// assets only from its file_asset_dirs (%s, %s)", path, path, dirs, shown)))
			}
			Expect(refused(filepath.Join(cfg.AppsDir, "..", filepath.Base(elsewhere), "cell.key"))).To(MatchError(ContainSubstring("refusing to read")))
		})

		It("refuses a link inside them to a file outside, and what is not a regular file", func() {
			Expect(refused(filepath.Join(cfg.AppsDir, "key-link"))).To(MatchError(ContainSubstring("only from its file_asset_dirs")))
			Expect(refused(filepath.Join(cfg.AppsDir, "fifo"))).To(MatchError(HaveSuffix("fifo: not a regular file")))
		})
	})

	Describe("file:// assets with no file_asset_dirs", func() {
		BeforeEach(func() { cfg.FileAssetDirs = nil })

		It("refuses every one", func() {
			path := filepath.Join(appsDir, "hello")
			asset := &models.Asset{Url: "file://" + path, Sha256: reptest.Sha256Hex(helloBinary()), Destination: "hello"}
			_, err := exe.Run(reptest.Spec("none", reptest.AssetDefinition("hello", nil, asset)))
			Expect(err).To(MatchError(fmt.Sprintf("asset file://%s: refusing to read %s: this rep reads file:// assets only from its file_asset_dirs (none set)", path, path)))
		})
	})

	Describe("the cell's cache", func() {
		It("downloads an asset once for starts that need it at the same time", func() {
			asset := server.Add("/hello.tgz", tgzOf(archiveEntry{name: "hello", mode: 0o755, body: helloBinary()}), ".")
			release := server.Hold()
			const starts = 8
			errs := make(chan error, starts)
			for i := range starts {
				go func() {
					defer GinkgoRecover()
					_, err := exe.Run(reptest.Spec(fmt.Sprintf("shared-%d", i), reptest.AssetDefinition("./hello", nil, asset)))
					errs <- err
				}()
			}
			// Every start waits for the one download before it answers.
			Eventually(func() int64 { return exe.AssetCacheStats().Hits }).Should(Equal(int64(starts - 1)))
			Expect(server.Count("/hello.tgz")).To(Equal(1))
			release()
			for range starts {
				var err error
				Eventually(errs).Should(Receive(&err))
				Expect(err).NotTo(HaveOccurred())
			}
			Expect(server.Count("/hello.tgz")).To(Equal(1))
			stats := exe.AssetCacheStats()
			Expect(stats.Downloads).To(Equal(int64(1)))
			Expect(stats.Hits).To(Equal(int64(starts - 1)))
			Expect(stats.Entries).To(Equal(1))
			Expect(exe.Instances()).To(HaveLen(starts))
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
			_, err := exe.Run(reptest.Spec("later", reptest.AssetDefinition("./hello", nil, asset)))
			Expect(err).NotTo(HaveOccurred())
			Expect(logOf("later")).To(MatchRegexp(`asset %s ready in [0-9.]+(µs|ms|s) \(from the cell's cache\)`, asset.Url))
			Expect(server.Count("/hello.tgz")).To(Equal(1))
			Expect(exe.AssetCacheStats().Hits).To(Equal(int64(starts)))
		})

		It("gives every start waiting for a download that fails the error, and keeps nothing", func() {
			asset := server.Add("/bad.tgz", []byte("bad"), ".")
			asset.Sha256 = reptest.Sha256Hex([]byte("good"))
			release := server.Hold()
			errs := make(chan error, 3)
			for i := range 3 {
				go func() {
					_, err := exe.Run(reptest.Spec(fmt.Sprintf("fail-%d", i), reptest.AssetDefinition("sh", touchStarted, asset)))
					errs <- err
				}()
			}
			Eventually(func() int64 { return exe.AssetCacheStats().Hits }).Should(Equal(int64(2)))
			release()
			for range 3 {
				var err error
				Eventually(errs).Should(Receive(&err))
				Expect(err).To(MatchError(ContainSubstring("checksum mismatch")))
			}
			Expect(exe.AssetCacheStats()).To(And(HaveField("Downloads", int64(1)), HaveField("Failures", int64(1)), HaveField("Entries", 0)))

			By("trying again on the next start")
			_, err := exe.Run(reptest.Spec("fail-again", reptest.AssetDefinition("sh", touchStarted, asset)))
			Expect(err).To(MatchError(ContainSubstring("checksum mismatch")))
			Expect(server.Count("/bad.tgz")).To(Equal(2))
		})

		It("has a start that waited for another URL's download of its checksum, which failed, download its own URL", func() {
			good := tgzOf(archiveEntry{name: "ok.txt", mode: 0o644, body: []byte("ok")})
			mine := server.Add("/mine.tgz", good, ".")
			// Another definition names the same checksum at a URL that
			// does not serve it.
			other := &models.Asset{Url: server.URL + "/missing.tgz", Sha256: mine.Sha256, Destination: "."}
			release := server.Hold()
			otherDone := make(chan error, 1)
			go func() {
				_, err := exe.Run(reptest.Spec("other", reptest.AssetDefinition("sh", touchStarted, other)))
				otherDone <- err
			}()
			Eventually(func() int { return server.Count("/missing.tgz") }).Should(Equal(1))
			mineDone := make(chan error, 1)
			go func() {
				_, err := exe.Run(reptest.Spec("mine", reptest.AssetDefinition("sh", touchStarted, mine)))
				mineDone <- err
			}()
			Eventually(func() int64 { return exe.AssetCacheStats().Hits }).Should(Equal(int64(1)))
			release()

			Eventually(otherDone).Should(Receive(MatchError(ContainSubstring("/missing.tgz: HTTP 404"))))
			Eventually(mineDone).Should(Receive(BeNil()))
			Expect(filepath.Join(instanceDir("mine"), "ok.txt")).To(BeAnExistingFile())
			Expect(logOf("mine")).To(ContainSubstring("the download of " + other.Url + ", which this start waited for, failed"))
			Expect(server.Count("/mine.tgz")).To(Equal(1))
		})

		Describe("with a small limit", func() {
			BeforeEach(func() {
				cfg.AssetCacheBytes = 2500
			})

			It("evicts the least recently used entry, which is downloaded again when needed", func() {
				assets := map[string]*models.Asset{}
				for _, name := range []string{"a", "b", "c"} {
					assets[name] = server.Add("/"+name, []byte(strings.Repeat(name, 1000)), name)
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
					_, err := exe.Run(reptest.Spec(fmt.Sprintf("%s-%d", name, n), reptest.AssetDefinition("sh", []string{"-c", "sleep 60"}, assets[name])))
					Expect(err).NotTo(HaveOccurred())
				}

				use("a")
				use("b")
				Expect(exe.AssetCacheStats()).To(And(HaveField("Bytes", int64(2000)), HaveField("Evictions", int64(0))))
				use("c")
				Expect(exe.AssetCacheStats()).To(And(HaveField("Bytes", int64(2000)), HaveField("Evictions", int64(1))))
				Expect(cached()).To(ConsistOf(assets["b"].Sha256, assets["c"].Sha256))

				By("a use of b makes c the least recently used")
				use("b")
				Expect(server.Count("/b")).To(Equal(1))
				use("a")
				Expect(server.Count("/a")).To(Equal(2))
				Expect(cached()).To(ConsistOf(assets["a"].Sha256, assets["b"].Sha256))
				Expect(exe.AssetCacheStats()).To(Equal(executor.AssetCacheStats{
					Downloads: 4, Hits: 1, Evictions: 2, Bytes: 2000, Entries: 2,
				}))
			})

			It("uses an asset larger than the whole cache and then does not keep it", func() {
				asset := server.Add("/big", []byte(strings.Repeat("x", 3000)), "big")
				_, err := exe.Run(reptest.Spec("big", reptest.AssetDefinition("sh", []string{"-c", "sleep 60"}, asset)))
				Expect(err).NotTo(HaveOccurred())
				Expect(filepath.Join(instanceDir("big"), "big")).To(BeARegularFile())
				Expect(os.ReadDir(filepath.Join(cfg.DataDir, "assets"))).To(BeEmpty())
				Expect(exe.AssetCacheStats()).To(Equal(executor.AssetCacheStats{Downloads: 1}))
			})
		})

		It("survives a restart on the same data dir, and checks what it finds before it trusts it", func() {
			droplet := tgzOf(archiveEntry{name: "hello", mode: 0o755, body: helloBinary()})
			asset := server.Add("/hello.tgz", droplet, ".")
			_, err := exe.Run(reptest.Spec("first", reptest.AssetDefinition("./hello", nil, asset)))
			Expect(err).NotTo(HaveOccurred())
			exe.Shutdown()
			cached := filepath.Join(cfg.DataDir, "assets", asset.Sha256)
			Expect(cached).To(BeARegularFile())
			// An unfinished download of a rep that died goes.
			unfinished := filepath.Join(cfg.DataDir, "assets", asset.Sha256+".download-123")
			Expect(os.WriteFile(unfinished, []byte("half"), 0o644)).To(Succeed())

			exe = reptest.StartExecutor(cfg)
			Expect(unfinished).NotTo(BeAnExistingFile())
			Expect(exe.AssetCacheStats()).To(HaveField("Bytes", int64(len(droplet))))
			_, err = exe.Run(reptest.Spec("second", reptest.AssetDefinition("./hello", nil, asset)))
			Expect(err).NotTo(HaveOccurred())
			Expect(server.Count("/hello.tgz")).To(Equal(1))
			Expect(logOf("second")).To(ContainSubstring("(from the cell's cache)"))
			Expect(exe.AssetCacheStats()).To(And(HaveField("Downloads", int64(0)), HaveField("Hits", int64(1))))
			exe.Shutdown()

			By("downloading again what no longer matches its checksum")
			Expect(os.WriteFile(cached, []byte("bit rot"), 0o644)).To(Succeed())
			exe = reptest.StartExecutor(cfg)
			_, err = exe.Run(reptest.Spec("third", reptest.AssetDefinition("./hello", nil, asset)))
			Expect(err).NotTo(HaveOccurred())
			Expect(server.Count("/hello.tgz")).To(Equal(2))
			Expect(logOf("third")).To(ContainSubstring("does not match its checksum any more: downloading it again"))
			Expect(os.ReadFile(cached)).To(Equal(droplet))
		})
	})

	Describe("slow downloads", func() {
		var asset *models.Asset

		BeforeEach(func() {
			asset = server.Add("/slow.tgz", make([]byte, 200_000), ".")
			server.Stall("/slow.tgz")
		})

		It("count against the start timeout, which fails the start with a reason saying so", func() {
			def := reptest.AssetDefinition("sh", touchStarted, asset)
			def.StartTimeoutMs = 2500
			_, err := exe.Run(reptest.Spec("slow", def))
			Expect(err).To(MatchError(fmt.Sprintf("asset %s: download did not finish within the start timeout of 2.5s (100.0 kB of 200.0 kB)", asset.Url)))
			Expect(err).To(MatchError(context.DeadlineExceeded))
			expectFailedStart("slow", err, "crashed: ")
			// Progress once a second while it lasts.
			Expect(logOf("slow")).To(ContainSubstring(fmt.Sprintf("downloading asset %s: 100.0 kB of 200.0 kB", asset.Url)))
			Eventually(server.Gone).Should(Receive(Equal("/slow.tgz")), "the download ended with the start")
			Eventually(func() int64 { return exe.AssetCacheStats().Failures }).Should(Equal(int64(1)))
		})

		It("stop on CancelStart", func() {
			errs := make(chan error, 1)
			go func() {
				_, err := exe.Run(reptest.Spec("cancelled", reptest.AssetDefinition("sh", touchStarted, asset)))
				errs <- err
			}()
			Eventually(func() int { return server.Count("/slow.tgz") }).Should(Equal(1))
			Consistently(errs, 200*time.Millisecond).ShouldNot(Receive())
			preparing, ok := exe.Preparing("hello", 0)
			Expect(ok).To(BeTrue(), "the index's log is that of the start still downloading")
			Expect(preparing).To(Equal("cancelled"))
			exe.CancelStart("cancelled")
			var err error
			Eventually(errs).Should(Receive(&err))
			Expect(err).To(MatchError(context.Canceled))
			Expect(err).To(MatchError(MatchRegexp(`^asset %s: download stopped \(.* of 200.0 kB\): the start was cancelled$`, asset.Url)))
			expectFailedStart("cancelled", err, "stopped: ")
			_, ok = exe.Preparing("hello", 0)
			Expect(ok).To(BeFalse())
			Eventually(server.Gone).Should(Receive(Equal("/slow.tgz")))
		})

		It("stop when the executor shuts down, which does not wait for them", func() {
			errs := make(chan error, 1)
			go func() {
				_, err := exe.Run(reptest.Spec("shut-down", reptest.AssetDefinition("sh", touchStarted, asset)))
				errs <- err
			}()
			Eventually(func() int { return server.Count("/slow.tgz") }).Should(Equal(1))
			shutDown := make(chan struct{})
			go func() {
				exe.Shutdown()
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
		asset := server.Add("/sleep", []byte("#!/bin/sh\nsleep 60\n"), "sleep.sh")
		st := func() executor.InstanceStatus {
			_, err := exe.Run(reptest.Spec("running", reptest.AssetDefinition("./sleep.sh", nil, asset)))
			Expect(err).NotTo(HaveOccurred())
			return reptest.Status(exe, "running")
		}()
		exe.CancelStart("running")
		exe.CancelStart("unknown")
		Consistently(func() bool { return processGone(st.Pid) }, 300*time.Millisecond).Should(BeFalse())
		Expect(exe.Instances()).To(HaveLen(1))
	})

	It("runs concurrent starts of different assets each with its own download", func() {
		var wg sync.WaitGroup
		for i := range 3 {
			asset := server.Add(fmt.Sprintf("/file-%d", i), []byte(fmt.Sprintf("file %d", i)), "f")
			wg.Go(func() {
				defer GinkgoRecover()
				_, err := exe.Run(reptest.Spec(fmt.Sprintf("own-%d", i), reptest.AssetDefinition("sh", []string{"-c", "sleep 60"}, asset)))
				Expect(err).NotTo(HaveOccurred())
			})
		}
		wg.Wait()
		Expect(exe.AssetCacheStats()).To(And(HaveField("Downloads", int64(3)), HaveField("Entries", 3)))
	})
})
