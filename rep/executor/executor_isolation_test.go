package executor_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep/executor"
	"github.com/corkboard/corkboard/rep/internal/reptest"
	"github.com/corkboard/corkboard/rep/isolation"
)

var _ = Describe("Executor isolation", func() {
	var (
		cfg executor.ExecutorConfig
		exe *executor.Executor
	)

	BeforeEach(func() {
		if os.Geteuid() != 0 {
			Skip("isolating instances needs root; this suite runs as root on CI")
		}
		cfg = newConfig()
		// An apps dir of its own, holding the rep's "secrets" and a set
		// uid copy of id, so that what an instance may reach is known.
		cfg.AppsDir = GinkgoT().TempDir()
		Expect(os.Chmod(cfg.AppsDir, 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(cfg.AppsDir, "rep.key"), []byte("KEY-MATERIAL\n"), 0o644)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(cfg.AppsDir, "public.txt"), []byte("PUBLIC\n"), 0o644)).To(Succeed())
		copyFile("/usr/bin/id", filepath.Join(cfg.AppsDir, "setuid-id"))
		Expect(os.Chmod(filepath.Join(cfg.AppsDir, "setuid-id"), 0o4755|os.ModeSetuid)).To(Succeed())
		cfg.Isolation.HideFiles = []string{filepath.Join(cfg.AppsDir, "rep.key")}
	})

	JustBeforeEach(func() {
		exe = reptest.StartExecutor(cfg)
	})

	// runScript runs sh -c script to its end and returns its log.
	runScript := func(guid, script string, env ...string) string {
		GinkgoHelper()
		def := reptest.ShellDefinition(script)
		def.Action.Env = reptest.EnvVars(env...)
		_, err := exe.Run(reptest.Spec(guid, def))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() bool {
			_, ended := exe.Ended(guid)
			return ended
		}).Should(BeTrue())
		log, err := exe.LogTail(guid, 200)
		Expect(err).NotTo(HaveOccurred())
		return string(log)
	}

	It("bounds its /tmp and /dev/shm at its memory_mb each: memory no resident set shows", func() {
		def := reptest.ShellDefinition(`
for dir in /tmp /dev/shm; do
  if dd if=/dev/zero of=$dir/fill bs=1M count=24 2>/dev/null; then echo "$dir: wrote 24 MB"; else echo "$dir: full at $(($(stat -c %s $dir/fill) >> 20)) MB"; fi
  rm -f $dir/fill
done
dd if=/dev/zero of=/tmp/fits bs=1M count=8 2>/dev/null && echo "/tmp: 8 MB fit"`)
		def.MemoryMb = 16
		_, err := exe.Run(reptest.Spec("tmpfs", def))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() bool {
			_, ended := exe.Ended("tmpfs")
			return ended
		}).Should(BeTrue())
		log, err := exe.LogTail("tmpfs", 200)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(log)).To(ContainSubstring("/tmp: full at 16 MB"))
		Expect(string(log)).To(ContainSubstring("/dev/shm: full at 16 MB"))
		Expect(string(log)).To(ContainSubstring("/tmp: 8 MB fit"))
	})

	It("is full as root by default", func() {
		Expect(exe.Isolation()).To(Equal(isolation.Full))
	})

	It("runs an instance as a uid of its own, without privileges, seeing only its own processes and files", func() {
		// A neighbour with a secret in its env and its directory.
		neighbour := reptest.ShellDefinition("echo secret > $HOME/secret.txt; exec sleep 100")
		neighbour.Action.Env = reptest.EnvVars("SECRET", "neighbour-secret")
		_, err := exe.Run(reptest.Spec("neighbour", neighbour))
		Expect(err).NotTo(HaveOccurred())
		Expect(reptest.NextEvent(exe).Kind).To(Equal(executor.Healthy))
		neighbourDir := filepath.Join(cfg.DataDir, "instances", "neighbour")
		Eventually(filepath.Join(neighbourDir, "secret.txt")).Should(BeAnExistingFile())
		neighbourPid := reptest.Status(exe, "neighbour").Pid

		log := runScript("probe", `
echo "uid=$(id -u) gid=$(id -g) groups=$(id -G)"
grep -E '^(NoNewPrivs|CapBnd|CapEff|CapPrm):' /proc/self/status
echo "processes=$(ls /proc | grep -c '^[0-9]')"
test -e /proc/$REP_PID && echo "sees-rep" || echo "rep-hidden"
cat /proc/$NEIGHBOUR_PID/environ 2>/dev/null | tr '\0' '\n' | grep SECRET || echo "neighbour-environ-unreadable"
cat $NEIGHBOUR_DIR/secret.txt 2>/dev/null || echo "neighbour-dir-unreadable"
ls $DATA_DIR/instances 2>/dev/null | grep -q neighbour && echo "lists-data-dir" || echo "data-dir-hidden"
cat $APPS_DIR/rep.key 2>/dev/null | grep -q KEY-MATERIAL && echo "read-key" || echo "key-hidden"
cat $APPS_DIR/public.txt
echo x > $APPS_DIR/new 2>/dev/null && echo "wrote-apps-dir" || echo "apps-dir-read-only"
echo x > /usr/new 2>/dev/null && echo "wrote-usr" || echo "usr-read-only"
echo x > /new 2>/dev/null && echo "wrote-root" || echo "root-read-only"
echo "setuid=$($APPS_DIR/setuid-id -u)"
echo mine > $HOME/mine.txt && cat $HOME/mine.txt
echo temp > /tmp/t.txt && cat /tmp/t.txt
`, "REP_PID", strconv.Itoa(os.Getpid()), "NEIGHBOUR_PID", strconv.Itoa(neighbourPid),
			"NEIGHBOUR_DIR", neighbourDir, "DATA_DIR", cfg.DataDir, "APPS_DIR", cfg.AppsDir)

		uid := uidOf(log)
		Expect(uid).To(BeNumerically(">=", isolation.DefaultUIDFirst))
		Expect(uid).To(BeNumerically("<", isolation.DefaultUIDFirst+isolation.DefaultUIDCount))
		Expect(log).To(ContainSubstring("gid=%d groups=%d\n", uid, uid))
		Expect(log).To(MatchRegexp(`NoNewPrivs:\s+1`))
		Expect(log).To(MatchRegexp(`CapBnd:\s+0000000000000000`))
		Expect(log).To(MatchRegexp(`CapEff:\s+0000000000000000`))
		Expect(log).To(MatchRegexp(`CapPrm:\s+0000000000000000`))
		// The init, sh, ls and grep.
		Expect(log).To(MatchRegexp(`processes=[1-5]\n`))
		for _, want := range []string{
			"rep-hidden", "neighbour-environ-unreadable", "neighbour-dir-unreadable", "data-dir-hidden",
			"key-hidden", "PUBLIC", "apps-dir-read-only", "usr-read-only", "root-read-only",
			"setuid=" + strconv.Itoa(uid) + "\n", "mine\n", "temp\n",
		} {
			Expect(log).To(ContainSubstring(want))
		}
		Expect(log).NotTo(ContainSubstring("neighbour-secret"))

		// Its directory is its own, its log the rep's alone, beside it.
		dir := filepath.Join(cfg.DataDir, "instances", "probe")
		info, err := os.Stat(dir)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o700)))
		Expect(info.Sys().(*syscall.Stat_t).Uid).To(Equal(uint32(uid)))
		logInfo, err := os.Lstat(instanceLogFile(cfg.DataDir, "probe"))
		Expect(err).NotTo(HaveOccurred())
		Expect(logInfo.Mode().IsRegular()).To(BeTrue())
		Expect(logInfo.Mode().Perm()).To(Equal(os.FileMode(0o600)))
		Expect(logInfo.Sys().(*syscall.Stat_t).Uid).To(Equal(uint32(0)))
		dataInfo, err := os.Stat(cfg.DataDir)
		Expect(err).NotTo(HaveOccurred())
		Expect(dataInfo.Mode().Perm()).To(Equal(os.FileMode(0o700)))
	})

	Context("with a log limit of 4 KiB", func() {
		BeforeEach(func() {
			cfg.LogLimit = 4 << 10
		})

		It("keeps its log out of the instance's reach: links, FIFOs and directories it makes change nothing the rep reads or writes", func() {
			// A file only root may read or write, outside what the
			// instance sees.
			secret := filepath.Join(GinkgoT().TempDir(), "root-only")
			Expect(os.WriteFile(secret, []byte("ROOT-ONLY-CONTENT\n"), 0o600)).To(Succeed())
			// Where a log inside its directory would be, the instance
			// puts a link to the secret, a directory where the rotated
			// file would go, and a FIFO; then it writes past the limit
			// several times, so that the rep rotates.
			log := runScript("grabber", `
echo "home=[$(ls -A "$HOME" | tr '\n' ' ')]"
test -e "$(dirname "$HOME")/.grabber.log" && echo "sees-log" || echo "log-hidden"
for name in output.log .grabber.log log; do ln -s "$SECRET" "$HOME/$name"; done
mkdir "$HOME/output.log.1" "$HOME/.grabber.log.1" && touch "$HOME/output.log.1/keep" "$HOME/.grabber.log.1/keep"
mkfifo "$HOME/fifo"
i=0; while [ $i -lt 150 ]; do echo "line $i, padded to be some forty bytes"; i=$((i+1)); done
echo last-line
`, "SECRET", secret)
			Expect(log).To(ContainSubstring("home=[]"))
			Expect(log).To(ContainSubstring("log-hidden"))
			Expect(log).To(ContainSubstring("line 149, padded"))
			Expect(log).To(ContainSubstring("last-line"))
			Expect(log).NotTo(ContainSubstring("ROOT-ONLY"))
			Expect(os.ReadFile(secret)).To(Equal([]byte("ROOT-ONLY-CONTENT\n")))
			// The rep rotated its own files, beside the directory.
			rotated, err := os.Lstat(instanceLogFile(cfg.DataDir, "grabber") + ".1")
			Expect(err).NotTo(HaveOccurred())
			Expect(rotated.Mode().IsRegular()).To(BeTrue())
		})
	})

	It("gives the instance no open file but its standard three: not the init's status pipe, nor what the rep inherited", func() {
		// A file the rep's process holds open without close-on-exec, as
		// one inherited from whatever started it would be.
		secret := filepath.Join(GinkgoT().TempDir(), "inherited")
		Expect(os.WriteFile(secret, []byte("INHERITED-CONTENT\n"), 0o600)).To(Succeed())
		fd, err := syscall.Open(secret, syscall.O_RDONLY, 0)
		Expect(err).NotTo(HaveOccurred())
		const inheritedFD = 57
		Expect(syscall.Dup2(fd, inheritedFD)).To(Succeed())
		syscall.Close(fd)
		DeferCleanup(func() { syscall.Close(inheritedFD) })

		// Were the init's status pipe open, "signal 9" written to it
		// would be taken for how the instance ended.
		log := runScript("fd-prober", `
for fd in 3 4 5 6 7 8 9 57; do test -e /proc/self/fd/$fd && echo "open-fd-$fd"; done
echo "looked"
for fd in 3 4 5 6 7 8 9; do (eval "echo 'signal 9' >&$fd") 2>/dev/null; done
exit 3
`)
		Expect(log).To(ContainSubstring("looked"))
		Expect(log).NotTo(ContainSubstring("open-fd-"))
		ended, ok := exe.Ended("fd-prober")
		Expect(ok).To(BeTrue())
		Expect(ended.Ending).To(Equal("crashed: exited with code 3"))
	})

	It("gives each running instance its own uid and frees it when the instance ends", func() {
		first := uidOf(runScript("first", "id -u"))
		_, err := exe.Run(reptest.Spec("sleeper", reptest.ShellDefinition("id -u; exec sleep 100")))
		Expect(err).NotTo(HaveOccurred())
		Expect(reptest.NextEvent(exe).Kind).To(Equal(executor.Healthy))
		var sleeperLog string
		Eventually(func() string {
			log, _ := exe.LogTail("sleeper", 50)
			sleeperLog = string(log)
			return sleeperLog
		}).Should(MatchRegexp(`\n\d+\n`))
		second := uidOf(runScript("second", "id -u"))
		Expect(uidOf(sleeperLog)).NotTo(Equal(second))
		Expect(first).NotTo(Equal(0))
	})

	It("bounds an instance's processes", func() {
		log := runScript("forker", `grep -E '^Max (processes|open files)' /proc/self/limits`)
		Expect(log).To(MatchRegexp(`Max processes\s+%d\s+%d\s`, isolation.DefaultMaxProcesses, isolation.DefaultMaxProcesses))
		nofile := isolation.OpenFilesLimit(isolation.DefaultMaxOpenFiles)
		Expect(log).To(MatchRegexp(`Max open files\s+%d\s+%d\s`, nofile, nofile))
	})

	It("runs setup isolated too, and the action can use what it made", func() {
		def := reptest.ShellDefinition("cat $HOME/made-by-setup; id -u")
		def.Setup = &models.RunAction{Path: "sh", Args: []string{"-c", "id -u > $HOME/made-by-setup"}}
		_, err := exe.Run(reptest.Spec("with-setup", def))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() bool { _, ended := exe.Ended("with-setup"); return ended }).Should(BeTrue())
		log, err := exe.LogTail("with-setup", 50)
		Expect(err).NotTo(HaveOccurred())
		lines := regexpAll(`(?m)^(\d+)$`, string(log))
		Expect(lines).To(HaveLen(2), string(log))
		Expect(lines[0]).To(Equal(lines[1]))
		Expect(lines[0]).NotTo(Equal("0"))
	})

	It("ends everything an instance started with it, even what left its process group", func() {
		// Unique command lines to look for among the host's processes.
		marker := "1000." + strconv.Itoa(os.Getpid())
		script := `sleep ` + marker + `1 & setsid sleep ` + marker + `2 & echo started; exit 4`
		Expect(runScript("leaver", script)).To(ContainSubstring("crashed: exited with code 4"))
		Eventually(func() []string { return hostCommands("sleep " + marker) }).Should(BeEmpty())
	})

	It("binds only its own TCP ports, never one the rep may hand another instance, and reaches no abstract socket outside itself", func() {
		log := bindAttempts(exe, cfg)
		Expect(log).To(ContainSubstring("bind own: yes"))
		Expect(log).To(ContainSubstring("bind any (port 0, the kernel's pick): yes"))
		Expect(log).To(ContainSubstring("bind cell-range: no"))
		Expect(log).To(ContainSubstring("bind outside-range: no"))
		Expect(log).To(ContainSubstring("bind mptcp outside-range: no"), "Multipath TCP, which Landlock does not confine")
		Expect(log).To(ContainSubstring("connect abstract: no"))
	})

	It("keeps the meaning of exit codes and signals", func() {
		Expect(runScript("exits-3", "exit 3")).To(ContainSubstring("crashed: exited with code 3"))
		Expect(runScript("killed", "kill -KILL $$")).To(ContainSubstring("crashed: killed by signal 9"))
	})

	Context(`with isolation "none"`, func() {
		BeforeEach(func() {
			cfg.Isolation.Mode = isolation.None
		})

		It("runs instances as the rep's user, seeing what it sees", func() {
			Expect(exe.Isolation()).To(Equal(isolation.None))
			log := runScript("plain", `id -u; cat $APPS_DIR/rep.key; test -e /proc/$REP_PID && echo sees-rep`,
				"APPS_DIR", cfg.AppsDir, "REP_PID", strconv.Itoa(os.Getpid()))
			Expect(log).To(ContainSubstring("\n0\n"))
			Expect(log).To(ContainSubstring("KEY-MATERIAL"))
			Expect(log).To(ContainSubstring("sees-rep"))
		})

		It("lets instances bind any free port and reach any abstract socket", func() {
			log := bindAttempts(exe, cfg)
			Expect(log).To(ContainSubstring("bind own: yes"))
			Expect(log).To(ContainSubstring("bind cell-range: yes"))
			Expect(log).To(ContainSubstring("bind outside-range: yes"))
			Expect(log).To(ContainSubstring("bind mptcp outside-range: yes"), "this kernel has Multipath TCP: the isolated spec's no means something")
			Expect(log).To(ContainSubstring("connect abstract: yes"))
		})
	})
})

var _ = Describe("isolation modes", func() {
	It(`refuses "full" where it cannot isolate, naming what is missing`, func() {
		if os.Geteuid() == 0 {
			Skip("as root this host can isolate; cmd/rep's suite runs the rep unprivileged for this")
		}
		dataDir := GinkgoT().TempDir()
		_, err := isolation.New(isolation.Config{Mode: isolation.Full, DataDir: dataDir})
		Expect(err).To(MatchError(ContainSubstring(`isolation "full" is not possible here: the rep runs as uid ` + strconv.Itoa(os.Geteuid()) + `, not root`)))
		iso, err := isolation.New(isolation.Config{Mode: isolation.Auto, DataDir: dataDir})
		Expect(err).NotTo(HaveOccurred())
		Expect(iso.Mode()).To(Equal(isolation.None))
		Expect(iso.Unavailable()).To(MatchError(ContainSubstring("not root")))
	})
})

// bindAttempts runs an instance given one port that tries to listen on
// it, on port 0, on a port of the cell's range it was not given (the one
// the rep would hand out next) and on a free port outside the range, and
// to connect to an abstract unix socket the spec listens on; it returns
// the instance's log, a line "bind <what>: yes|no" or "connect abstract:
// yes|no" for each.
func bindAttempts(exe *executor.Executor, cfg executor.ExecutorConfig) string {
	GinkgoHelper()
	abstract := fmt.Sprintf("corkboard-bind-spec-%d-%d", os.Getpid(), GinkgoRandomSeed())
	listener, err := net.Listen("unix", "@"+abstract)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(listener.Close)
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	outsideMin, _ := reptest.FreePortRange(1)
	for outsideMin >= cfg.PortMin && outsideMin <= cfg.PortMax {
		outsideMin, _ = reptest.FreePortRange(1)
	}
	def := reptest.ShellDefinition(`
bind() { if perl -MIO::Socket::INET -e 'IO::Socket::INET->new(LocalPort => $ARGV[0], Listen => 1, ReuseAddr => 1) or exit 1' "$1"; then echo "bind $2: yes"; else echo "bind $2: no"; fi; }
echo "given port $PORT"
bind "$PORT" own
bind 0 "any (port 0, the kernel's pick)"
bind "$CELL_PORT" cell-range
bind "$OUTSIDE_PORT" outside-range
if perl -MSocket -e 'socket(my $s, PF_INET, SOCK_STREAM, 262) or exit 1; bind($s, pack_sockaddr_in($ARGV[0], INADDR_ANY)) or exit 1' "$OUTSIDE_PORT"; then echo "bind mptcp outside-range: yes"; else echo "bind mptcp outside-range: no"; fi
if perl -MIO::Socket::UNIX -e 'IO::Socket::UNIX->new(Peer => "\0" . $ARGV[0]) or exit 1' "$ABSTRACT"; then echo "connect abstract: yes"; else echo "connect abstract: no"; fi
`)
	def.Ports = []uint32{8080}
	def.Action.Env = reptest.EnvVars(
		"CELL_PORT", strconv.FormatUint(uint64(cfg.PortMin+1), 10),
		"OUTSIDE_PORT", strconv.FormatUint(uint64(outsideMin), 10),
		"ABSTRACT", abstract)
	_, err = exe.Run(reptest.Spec("binder", def))
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() bool {
		_, ended := exe.Ended("binder")
		return ended
	}).Should(BeTrue())
	log, err := exe.LogTail("binder", 200)
	Expect(err).NotTo(HaveOccurred())
	// The rep hands out its range in order: the instance was given the
	// first port, and the one it tried is the next.
	Expect(string(log)).To(ContainSubstring("given port %d\n", cfg.PortMin))
	return string(log)
}

func uidOf(log string) int {
	GinkgoHelper()
	m := regexpAll(`(?m)^(?:uid=)?(\d+)\b`, log)
	Expect(m).NotTo(BeEmpty(), log)
	uid, err := strconv.Atoi(m[0])
	Expect(err).NotTo(HaveOccurred())
	return uid
}

func regexpAll(pattern, text string) []string {
	var out []string
	for _, m := range regexp.MustCompile(pattern).FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

func copyFile(from, to string) {
	GinkgoHelper()
	data, err := os.ReadFile(from)
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(to, data, 0o755)).To(Succeed())
}

// hostCommands lists the command lines of the host's processes that
// start with prefix (arguments joined by spaces).
func hostCommands(prefix string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, entry := range entries {
		if _, err := strconv.Atoi(entry.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", entry.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmdline := strings.TrimSpace(strings.ReplaceAll(string(data), "\x00", " "))
		if strings.HasPrefix(cmdline, prefix) {
			found = append(found, cmdline)
		}
	}
	return found
}
