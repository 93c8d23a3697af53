package e2e_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/internal/netns"
	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep"
)

// Settings of the cluster the specs run: short enough that a lost cell
// is noticed in seconds and a poll or a report is never far away.
const (
	presenceTTL         = "2s"
	convergenceInterval = "200ms"
	repPollInterval     = "200ms"
	repBulkSyncInterval = "1s"
	// repHealthReportInterval brings the board the reps' health checks
	// and memory within a second (signals).
	repHealthReportInterval = "1s"
	repStopGracePeriod      = "500ms"
	// exitLimit bounds how long a process may take to exit when asked. It
	// is a deadline against hanging, not a speed requirement.
	exitLimit = 30 * time.Second
)

var (
	boardListening = regexp.MustCompile(`"message":"bbs\.api-server\.listening".*"url":"(https?://[^"]+)"`)
	repListening   = regexp.MustCompile(`"message":"rep\.server\.listening".*"url":"(https?://[^"]+)"`)
)

// board is a running bbs with its config, so it can be started again on
// the same database and address.
type board struct {
	session    *gexec.Session
	url        string
	configPath string
	// tlsConfig, for a board with tls, is what client() calls it with;
	// corkEnv is what cork gets beside BBS_URL (BBS_CA_CERT, ...).
	tlsConfig *tls.Config
	corkEnv   []string
	// host, when set, is the network namespace the board runs in: a host
	// of its own (internal/netns).
	host *netns.Namespace

	// api is the client client() returns, made for apiURL and apiTLS;
	// start drops it, so a restarted board gets a fresh one.
	apiMu  sync.Mutex
	api    *client.Client
	apiURL string
	apiTLS *tls.Config
}

// startBoard runs a board on a fresh SQLite file, on a fixed free port
// (a restarted board must be found where the reps look for it); settings
// override or add config keys.
func startBoard(settings map[string]any) *board {
	GinkgoHelper()
	return startBoardOn(nil, settings)
}

// startBoardOn is startBoard on host, listening on its address (on this
// host's loopback when host is nil).
func startBoardOn(host *netns.Namespace, settings map[string]any) *board {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	address := "127.0.0.1"
	if host != nil {
		address = host.IP
	}
	cfg := map[string]any{
		"listen_address":       address + ":" + strconv.Itoa(freePort()),
		"database_driver":      "sqlite",
		"data_dir":             dir,
		"cell_presence_ttl":    presenceTTL,
		"convergence_interval": convergenceInterval,
		"stale_unclaimed":      "10s",
	}
	maps.Copy(cfg, settings)
	raw, err := json.Marshal(cfg)
	Expect(err).NotTo(HaveOccurred())
	b := &board{configPath: filepath.Join(dir, "bbs.json"), host: host}
	Expect(os.WriteFile(b.configPath, raw, 0o600)).To(Succeed())
	b.start()
	// Whichever board process runs last; registered before the reps'
	// cleanups, so it runs after them and they exit against a live board.
	DeferCleanup(func() { stopProcess(b.session, syscall.SIGTERM) })
	return b
}

// start runs the board process and waits until it listens.
func (b *board) start() {
	GinkgoHelper()
	session, err := gexec.Start(onHost(b.host, bbsPath, "-config", b.configPath), GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	b.session = session
	Eventually(session.Out).Should(gbytes.Say(`bbs\.api-server\.listening`))
	match := boardListening.FindSubmatch(session.Out.Contents())
	Expect(match).NotTo(BeNil())
	b.url = string(match[1])
	b.apiMu.Lock()
	b.api = nil
	b.apiMu.Unlock()
}

// client is the board's API client, one for the board's life, as a real
// caller keeps one: a new client per call would leave a kept-alive
// connection behind each time, and a spec polling every 100 ms reached
// the board's max_connections_per_address (1,000, counted for every
// process on this host's loopback, reps included) within seconds, after
// which every new connection is closed as it is accepted.
func (b *board) client() *client.Client {
	b.apiMu.Lock()
	defer b.apiMu.Unlock()
	if b.api == nil || b.apiURL != b.url || b.apiTLS != b.tlsConfig {
		b.api = client.New(b.url, client.WithTLSConfig(b.tlsConfig))
		b.apiURL, b.apiTLS = b.url, b.tlsConfig
	}
	return b.api
}

// metric is the value of one series on the board's /metrics, -1 when the
// board does not answer or has no such series.
func (b *board) metric(series string) float64 {
	GinkgoHelper()
	httpClient := &http.Client{Timeout: 2 * time.Second}
	if b.tlsConfig != nil {
		httpClient.Transport = &http.Transport{TLSClientConfig: b.tlsConfig}
	}
	resp, err := httpClient.Get(b.url + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return -1
	}
	match := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindSubmatch(raw)
	if match == nil {
		return -1
	}
	value, err := strconv.ParseFloat(string(match[1]), 64)
	Expect(err).NotTo(HaveOccurred())
	return value
}

// cork runs the cork binary against the board and returns its stdout; it
// must succeed.
func (b *board) cork(args ...string) string {
	GinkgoHelper()
	stdout, stderr, code := b.corkResult(args...)
	Expect(code).To(Equal(0), "cork %v: %s", args, stderr)
	return stdout
}

func (b *board) corkResult(args ...string) (string, string, int) {
	GinkgoHelper()
	cmd := exec.Command(corkPath, args...)
	cmd.Env = append(append(os.Environ(), "BBS_URL="+b.url), b.corkEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return stdout.String(), stderr.String(), exitErr.ExitCode()
	}
	Expect(err).NotTo(HaveOccurred())
	return stdout.String(), stderr.String(), 0
}

// lrps lists guid's rows.
func (b *board) lrps(guid string) []*models.ActualLRP {
	GinkgoHelper()
	rows, err := b.client().ActualLRPs(context.Background(), client.ActualLRPFilter{ProcessGuid: guid})
	Expect(err).NotTo(HaveOccurred())
	slices.SortFunc(rows, func(a, b *models.ActualLRP) int {
		if a.GetIndex() != b.GetIndex() {
			return int(a.GetIndex() - b.GetIndex())
		}
		return int(a.GetPresence() - b.GetPresence())
	})
	return rows
}

// onHost is the command name with args, run in host's network namespace
// when host is set.
func onHost(host *netns.Namespace, name string, args ...string) *exec.Cmd {
	if host == nil {
		return exec.Command(name, args...)
	}
	return host.Command(name, args...)
}

// runningRep is a running rep of one cell.
type runningRep struct {
	cellID     string
	host       *netns.Namespace // as board's
	configPath string
	session    *gexec.Session
	url        string
	// httpClient, for a rep with tls, is how instances() asks it.
	httpClient *http.Client
}

// startRep runs a rep for cellID in zone against the board, with its own
// data dir and a port range of its own; settings override or add config
// keys.
func startRep(b *board, cellID, zone string, settings ...map[string]any) *runningRep {
	GinkgoHelper()
	return startRepOn(nil, b, cellID, zone, settings...)
}

// startRepOn is startRep on host: the rep listens on its address, and
// its instances answer on it.
func startRepOn(host *netns.Namespace, b *board, cellID, zone string, settings ...map[string]any) *runningRep {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	cfg := map[string]any{
		"cell_id":                cellID,
		"zone":                   zone,
		"capacity":               map[string]int{"memory_mb": 1024, "disk_mb": 1024, "instances": 16},
		"board_url":              b.url,
		"listen_address":         "127.0.0.1:0",
		"data_dir":               filepath.Join(dir, "data"),
		"apps_dir":               appsDir,
		"poll_interval":          repPollInterval,
		"bulk_sync_interval":     repBulkSyncInterval,
		"health_report_interval": repHealthReportInterval,
		"stop_grace_period":      repStopGracePeriod,
		"stop_timeout":           "5s",
		"evacuation_timeout":     "60s",
	}
	if host != nil {
		cfg["listen_address"] = host.IP + ":0"
		cfg["address"] = host.IP
	}
	for _, set := range settings {
		maps.Copy(cfg, set)
	}
	if _, given := cfg["port_range"]; !given {
		// 20 ports, or one for each instance slot where there are more
		// (the rep refuses fewer ports than slots).
		n := 20
		if capacity, ok := cfg["capacity"].(map[string]int); ok {
			n = max(n, capacity["instances"])
		}
		first := freePortRange(n)
		cfg["port_range"] = fmt.Sprintf("%d-%d", first, first+n-1)
	}
	raw, err := json.Marshal(cfg)
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(dir, "rep.json")
	Expect(os.WriteFile(path, raw, 0o600)).To(Succeed())
	return launchRep(host, cellID, path)
}

// restart runs a new rep process with the same config (the old one must
// have exited).
func (r *runningRep) restart() *runningRep {
	GinkgoHelper()
	Expect(r.session.ExitCode()).NotTo(Equal(-1), "the rep still runs")
	return launchRep(r.host, r.cellID, r.configPath)
}

func launchRep(host *netns.Namespace, cellID, configPath string) *runningRep {
	GinkgoHelper()
	session, err := gexec.Start(onHost(host, repPath, "-config", configPath), GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	// SIGINT: the rep stops its instances and exits.
	DeferCleanup(func() { stopProcess(session, syscall.SIGINT) })
	Eventually(session.Out).Should(gbytes.Say(`rep\.server\.listening`))
	match := repListening.FindSubmatch(session.Out.Contents())
	Expect(match).NotTo(BeNil())
	r := &runningRep{cellID: cellID, host: host, configPath: configPath, session: session, url: string(match[1])}
	Eventually(session.Out).Should(gbytes.Say(`rep\.agent\.registered`))
	return r
}

// instances is the rep's GET /v1/instances: what it runs, with pids.
func (r *runningRep) instances() []rep.InstanceInfo {
	GinkgoHelper()
	httpClient := http.DefaultClient
	if r.httpClient != nil {
		httpClient = r.httpClient
	}
	resp, err := httpClient.Get(r.url + "/v1/instances")
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	var list []rep.InstanceInfo
	Expect(json.NewDecoder(resp.Body).Decode(&list)).To(Succeed())
	return list
}

func (r *runningRep) pids() []int {
	GinkgoHelper()
	var pids []int
	for _, inst := range r.instances() {
		pids = append(pids, inst.Pid)
	}
	return pids
}

// stopProcess asks a process to exit with sig and kills it if it has
// not within exitLimit; a process that exited already is left alone.
func stopProcess(session *gexec.Session, sig os.Signal) {
	if session.ExitCode() != -1 {
		return
	}
	session.Signal(sig)
	select {
	case <-session.Exited:
	case <-time.After(exitLimit):
		session.Kill().Wait(exitLimit)
	}
}

// helloAnswer is what the hello app answers on GET /.
type helloAnswer struct {
	ProcessGuid  string `json:"process_guid"`
	Index        int32  `json:"index"`
	InstanceGuid string `json:"instance_guid"`
	DefinitionID string `json:"definition_id"`
	CellID       string `json:"cell_id"`
}

var httpClient = &http.Client{Timeout: 2 * time.Second}

// ask GETs / of the instance a row describes, at its net info address and
// host port.
func ask(lrp *models.ActualLRP) (helloAnswer, error) {
	info := lrp.GetNetInfo()
	if info.GetAddress() == "" || len(info.GetPorts()) == 0 {
		return helloAnswer{}, fmt.Errorf("%s/%d has no net info", lrp.GetProcessGuid(), lrp.GetIndex())
	}
	address := net.JoinHostPort(info.GetAddress(), strconv.Itoa(int(info.GetPorts()[0].GetHostPort())))
	resp, err := httpClient.Get("http://" + address + "/")
	if err != nil {
		return helloAnswer{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return helloAnswer{}, fmt.Errorf("GET http://%s/: %s", address, resp.Status)
	}
	var answer helloAnswer
	err = json.NewDecoder(resp.Body).Decode(&answer)
	return answer, err
}

// answers reports whether the instance of the row answers as itself.
func answers(lrp *models.ActualLRP) bool {
	got, err := ask(lrp)
	return err == nil && got.ProcessGuid == lrp.GetProcessGuid() && got.Index == lrp.GetIndex() &&
		got.InstanceGuid == lrp.GetInstanceGuid() && got.DefinitionID == lrp.GetDefinitionId() &&
		got.CellID == lrp.GetCellId()
}

// steady waits until guid has exactly n rows, ORDINARY and RUNNING on one
// of cells, each answering as itself, and returns them.
func steady(b *board, guid string, n int, cells ...string) []*models.ActualLRP {
	GinkgoHelper()
	var rows []*models.ActualLRP
	Eventually(func() error {
		rows = b.lrps(guid)
		return checkSteady(rows, n, cells)
	}).Should(Succeed())
	return rows
}

func checkSteady(rows []*models.ActualLRP, n int, cells []string) error {
	if len(rows) != n {
		return fmt.Errorf("want %d rows, have %s", n, describe(rows))
	}
	for _, row := range rows {
		if row.GetPresence() != models.ActualLRP_ORDINARY || row.GetState() != models.ActualLRP_RUNNING ||
			!slices.Contains(cells, row.GetCellId()) || !row.GetRoutable() {
			return fmt.Errorf("want every row ORDINARY, RUNNING and routable on %v, have %s", cells, describe(rows))
		}
		if !answers(row) {
			return fmt.Errorf("%s/%d on %s does not answer as itself", row.GetProcessGuid(), row.GetIndex(), row.GetCellId())
		}
	}
	return nil
}

func describe(rows []*models.ActualLRP) string {
	var parts []string
	for _, row := range rows {
		parts = append(parts, fmt.Sprintf("%d %s %s on %q (crashes %d)", row.GetIndex(), row.GetPresence(), row.GetState(), row.GetCellId(), row.GetCrashCount()))
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// alive reports whether pid is a live process: a zombie (dead, not yet
// reaped by whoever inherited it) is not.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		// No /proc (not Linux): the signal check is all there is.
		return !errors.Is(err, os.ErrNotExist)
	}
	// The state follows the command name, which is in parentheses.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

func anyAlive(pids []int) []int {
	var living []int
	for _, pid := range pids {
		if alive(pid) {
			living = append(living, pid)
		}
	}
	return living
}

func freePort() int {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// freePortRange finds n consecutive ports nobody listens on now, below
// Linux's usual ephemeral range (32768-60999), so that no outgoing
// connection takes one of them meanwhile, and overlapping no range it
// handed out before in this run: a rep binds its range's ports only as its
// instances start, so a range free now may be another rep's, handed out a
// moment ago, and two reps sharing ports take each other's (a staged
// rollout's rep once found 15 of its 20 in use by the other rep's
// instances).
func freePortRange(n int) int {
	GinkgoHelper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 1000 {
		first := 20000 + rand.IntN(12000-n)
		free := !slices.ContainsFunc(handedOut.ranges, func(r [2]int) bool { return first < r[1] && r[0] < first+n })
		for port := first; port < first+n && free; port++ {
			l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
			if err != nil {
				free = false
				continue
			}
			l.Close()
		}
		if free {
			handedOut.ranges = append(handedOut.ranges, [2]int{first, first + n})
			return first
		}
	}
	Fail("no free port range")
	return 0
}

// handedOut is the port ranges freePortRange gave, [first, end).
var handedOut struct {
	sync.Mutex
	ranges [][2]int
}
