package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep/isolation"
)

// attackScript is an instance that tries to reach what is not its own,
// says how each attempt went ("ATTACK <what>: yes|no"), does its own work
// (writes in its directory and /tmp), and then serves HTTP as hello.
const attackScript = `
try() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "ATTACK $name: yes"; else echo "ATTACK $name: no"; fi; }
try read-config grep -q cell_id "$CONFIG"
try read-cert grep -q CERTIFICATE "$CERT"
try read-key grep -q PRIVATE "$KEY"
try read-neighbour-dir grep -q victim-file "$VICTIM_DIR/secret.txt"
try read-neighbour-environ grep -q victim-env-secret "/proc/$VICTIM_PID/environ"
try any-environ sh -c 'cat /proc/[0-9]*/environ 2>/dev/null | tr "\0" "\n" | grep -q victim-env-secret'
try see-rep test -e "/proc/$REP_PID"
try list-rep sh -c 'cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\0" " " | grep -q "rep/rep[.]json"'
try list-data-dir sh -c 'ls "$DATA_DIR/instances" | grep -q -v -x "$INSTANCE_GUID"'
try write-apps-dir sh -c 'echo x > "$APPS_DIR/pwned"'
try write-neighbour-dir sh -c 'echo x > "$VICTIM_DIR/pwned"'
try write-etc sh -c 'echo x > "$ETC_FILE"'
try setuid-root sh -c 'test "$("$APPS_DIR/setuid-id" -u)" = 0'
echo "ATTACK uid: $(id -u)"
try own-dir sh -c 'echo mine > "$HOME/mine.txt" && grep -q mine "$HOME/mine.txt"'
try own-tmp sh -c 'echo t > /tmp/t.txt && grep -q t /tmp/t.txt'
listen() { perl -MIO::Socket::INET -e 'IO::Socket::INET->new(LocalPort => $ARGV[0], Listen => 1, ReuseAddr => 1) or exit 1' "$1"; }
try squat-cell-port listen "$SQUAT_PORT"
try own-port listen "$PORT"
exec "$APPS_DIR/hello"
`

var _ = Describe("isolated instances", func() {
	DescribeTable("what an instance can reach on its cell",
		func(mode string, throughLink bool, want map[string]string) {
			if mode != "none" && os.Geteuid() != 0 {
				Skip("isolating instances needs root; CI runs the e2e suite as root")
			}
			cluster := newTLSCluster()
			b := cluster.startBoard()

			// The apps dir instances see holds the rep's config, its
			// certificate, key and CA, and its data dir: each must be
			// masked, while the apps dir itself stays readable.
			apps := GinkgoT().TempDir()
			Expect(os.Chmod(apps, 0o755)).To(Succeed())
			copyExecutable(filepath.Join(appsDir, "hello"), filepath.Join(apps, "hello"), 0o755)
			copyExecutable("/usr/bin/id", filepath.Join(apps, "setuid-id"), 0o755)
			Expect(os.Chmod(filepath.Join(apps, "setuid-id"), 0o755|os.ModeSetuid)).To(Succeed())
			// The rep and the attacker may know the apps dir by a link to
			// it: the masks follow the rep's files there too.
			shownApps := apps
			if throughLink {
				shownApps = filepath.Join(GinkgoT().TempDir(), "apps-link")
				Expect(os.Symlink(apps, shownApps)).To(Succeed())
			}
			// Its directory and certificates are readable by anyone, so
			// that only the masks keep them from an instance's uid.
			repDir := filepath.Join(apps, "rep")
			Expect(os.Mkdir(repDir, 0o755)).To(Succeed())
			tlsFiles := map[string]any{}
			for key, name := range map[string]string{"ca_cert": "ca.crt", "cert": "cell-z1.crt", "key": "cell-z1.key"} {
				mode := os.FileMode(0o644)
				if key == "key" {
					mode = 0o600
				}
				copyExecutable(cluster.path(name), filepath.Join(repDir, name), mode)
				tlsFiles[key] = filepath.Join(repDir, name)
			}
			dataDir := filepath.Join(repDir, "data")
			first := freePortRange(20)
			config := map[string]any{
				"cell_id":            "cell-z1",
				"zone":               "z1",
				"capacity":           map[string]int{"memory_mb": 1024, "disk_mb": 1024, "instances": 16},
				"board_url":          b.url,
				"listen_address":     "127.0.0.1:0",
				"data_dir":           dataDir,
				"apps_dir":           shownApps,
				"port_range":         fmt.Sprintf("%d-%d", first, first+19),
				"poll_interval":      repPollInterval,
				"bulk_sync_interval": repBulkSyncInterval,
				"stop_grace_period":  repStopGracePeriod,
				"tls":                tlsFiles,
				"isolation":          mode,
			}
			raw, err := json.Marshal(config)
			Expect(err).NotTo(HaveOccurred())
			configPath := filepath.Join(repDir, "rep.json")
			Expect(os.WriteFile(configPath, raw, 0o600)).To(Succeed())
			r := launchRep(nil, "cell-z1", configPath)
			r.httpClient = cluster.httpClient("operator")

			By("registering its isolation, which cork cells shows")
			cells, err := b.client().Cells(context.Background())
			Expect(err).NotTo(HaveOccurred())
			Expect(cells).To(HaveLen(1))
			Expect(cells[0].GetIsolation()).To(Equal(mode))
			table := strings.Split(strings.TrimSpace(b.cork("cells", "-o", "table")), "\n")
			Expect(table).To(HaveLen(2))
			column := slices.Index(strings.Fields(table[0]), "ISOLATION")
			Expect(column).To(BeNumerically(">=", 0), table[0])
			Expect(strings.Fields(table[1])[column]).To(Equal(mode))

			By("running a neighbour with a secret in its env and its directory")
			desireSpec(b, "victim", `echo victim-file > "$HOME/secret.txt"; exec "$APPS_DIR/hello"`,
				"APPS_DIR", shownApps, "SECRET", "victim-env-secret")
			victim := steady(b, "victim", 1, "cell-z1")[0]
			var victimPid int
			for _, inst := range r.instances() {
				if inst.InstanceGuid == victim.GetInstanceGuid() {
					victimPid = inst.Pid
				}
			}
			Expect(victimPid).NotTo(BeZero())
			victimDir := filepath.Join(dataDir, "instances", victim.GetInstanceGuid())
			Eventually(filepath.Join(victimDir, "secret.txt")).Should(BeAnExistingFile())

			By("running an instance that tries to reach all of it")
			etcFile := "/etc/corkboard-e2e-" + strconv.Itoa(GinkgoParallelProcess()) + "-" + strconv.Itoa(os.Getpid())
			DeferCleanup(func() { _ = os.Remove(etcFile) })
			shownRepDir := filepath.Join(shownApps, "rep")
			desireSpec(b, "attacker", attackScript,
				"CONFIG", filepath.Join(shownRepDir, "rep.json"), "CERT", filepath.Join(shownRepDir, "cell-z1.crt"), "KEY", filepath.Join(shownRepDir, "cell-z1.key"),
				"VICTIM_DIR", victimDir, "VICTIM_PID", strconv.Itoa(victimPid), "REP_PID", strconv.Itoa(r.session.Command.Process.Pid),
				"DATA_DIR", filepath.Join(shownRepDir, "data"), "APPS_DIR", shownApps, "ETC_FILE", etcFile,
				// The last port of the rep's range, which it would hand
				// the next instance once the others are taken.
				"SQUAT_PORT", strconv.Itoa(first+19))
			// It serves HTTP on its port as itself: its own work goes on.
			attacker := steady(b, "attacker", 1, "cell-z1")[0]
			Expect(answers(attacker)).To(BeTrue())

			// Its log, read through the rep's log API as ever.
			got := attackResults(b.cork("logs", "attacker/0", "-n", "100"))
			uid, err := strconv.Atoi(got["uid"])
			Expect(err).NotTo(HaveOccurred(), "%v", got)
			delete(got, "uid")
			Expect(got).To(Equal(want))
			if mode == "none" {
				Expect(uid).To(Equal(os.Geteuid()))
			} else {
				Expect(uid).To(BeNumerically(">=", isolation.DefaultUIDFirst))
				Expect(uid).To(BeNumerically("<", isolation.DefaultUIDFirst+isolation.DefaultUIDCount))
			}
			Expect(answers(victim)).To(BeTrue())

			if mode == "full" {
				By("keeping its log out of its reach: a link it puts where its log was hands out nothing of the cell's")
				desireSpec(b, "log-swapper", `
mv "$HOME/output.log" "$HOME/saved.log" 2>/dev/null
for name in output.log ".$INSTANCE_GUID.log"; do ln -sf "$KEY" "$HOME/$name"; done
echo "log-swapper wrote this"
exec "$APPS_DIR/hello"`, "KEY", filepath.Join(repDir, "cell-z1.key"), "APPS_DIR", shownApps)
				steady(b, "log-swapper", 1, "cell-z1")
				log := b.cork("logs", "log-swapper/0", "-n", "100")
				Expect(log).To(ContainSubstring("log-swapper wrote this"))
				Expect(log).NotTo(ContainSubstring("PRIVATE KEY"))
			}
		},
		Entry(`with isolation "full": every attempt fails, its own work succeeds`, "full", false, fullWant()),
		Entry(`with isolation "full" and the apps dir known by a link to it: the same`, "full", true, fullWant()),
		Entry(`with isolation "none": the documented fallback, instances reach what the rep reaches`, "none", false, noneWant()),
	)
})

// fullWant is what an isolated instance reaches: nothing of the cell's,
// its own directory and /tmp.
func fullWant() map[string]string {
	return map[string]string{
		"read-config": "no", "read-cert": "no", "read-key": "no",
		"read-neighbour-dir": "no", "read-neighbour-environ": "no", "any-environ": "no",
		"see-rep": "no", "list-rep": "no", "list-data-dir": "no",
		"write-apps-dir": "no", "write-neighbour-dir": "no", "write-etc": "no", "setuid-root": "no",
		"squat-cell-port": "no",
		"own-dir":         "yes", "own-tmp": "yes", "own-port": "yes",
	}
}

// noneWant is what an instance reaches without isolation: everything the
// rep's user does (as root, /etc and root itself too).
func noneWant() map[string]string {
	want := map[string]string{
		"read-config": "yes", "read-cert": "yes", "read-key": "yes",
		"read-neighbour-dir": "yes", "read-neighbour-environ": "yes", "any-environ": "yes",
		"see-rep": "yes", "list-rep": "yes", "list-data-dir": "yes",
		"write-apps-dir": "yes", "write-neighbour-dir": "yes", "write-etc": "no", "setuid-root": "yes",
		"squat-cell-port": "yes",
		"own-dir":         "yes", "own-tmp": "yes", "own-port": "yes",
	}
	if os.Geteuid() == 0 {
		want["write-etc"] = "yes"
	}
	return want
}

// desireSpec desires one instance of guid running sh -c script, checked
// over HTTP on 8080, with env (name, value, ...).
func desireSpec(b *board, guid, script string, env ...string) {
	GinkgoHelper()
	vars := []*models.EnvironmentVariable{}
	for i := 0; i+1 < len(env); i += 2 {
		vars = append(vars, &models.EnvironmentVariable{Name: env[i], Value: env[i+1]})
	}
	lrp := &models.DesiredLRP{
		ProcessGuid: guid, Domain: "cork", Instances: 1,
		Definition: &models.LRPDefinition{
			Action:         &models.RunAction{Path: "sh", Args: []string{"-c", script}, Env: vars},
			Ports:          []uint32{8080},
			HealthCheck:    &models.HealthCheck{Type: models.HealthCheck_HTTP, Port: 8080, Path: "/health"},
			StartTimeoutMs: 30000,
			MemoryMb:       64,
			DiskMb:         64,
		},
	}
	_, err := b.client().DesireLRP(context.Background(), lrp)
	Expect(err).NotTo(HaveOccurred())
}

var attackLine = regexp.MustCompile(`(?m)^ATTACK ([a-z-]+): (\S+)$`)

// attackResults reads the attack script's verdicts from its log.
func attackResults(log string) map[string]string {
	got := map[string]string{}
	for _, m := range attackLine.FindAllStringSubmatch(log, -1) {
		got[m[1]] = m[2]
	}
	return got
}

func copyExecutable(from, to string, mode os.FileMode) {
	GinkgoHelper()
	data, err := os.ReadFile(from)
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(to, data, mode)).To(Succeed())
}
