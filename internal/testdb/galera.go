package testdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
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
)

// ErrNoGaleraBinaries is wrapped by StartGalera's error when what a Galera
// cluster needs is not installed (mariadbd and mariadb-install-db, the
// Galera provider library, rsync or mariabackup for state transfers, and
// haproxy), so a test can tell "this machine cannot run Galera" from
// "Galera is broken".
var ErrNoGaleraBinaries = errors.New("no Galera cluster binaries found")

// galeraProvider is where Debian's galera-4 package puts the provider.
var galeraProvider = []string{"/usr/lib/galera/libgalera_smm.so", "/usr/lib/libgalera_smm.so", "/usr/lib64/galera-4/libgalera_smm.so"}

// galeraNodes is the cluster's size: the smallest that keeps a quorum (two
// of three) when one node dies.
const galeraNodes = 3

// Galera is a three-node MariaDB Galera cluster on loopback with HAProxy
// in front, the way Cloud Foundry's pxc-release deploys one: every
// connection through the front goes to one node (the writer), the other
// two are backups that take over when it fails a health check. All nodes
// replicate synchronously (certification at commit), so a transaction the
// writer acknowledged is on the others before the client hears of it.
//
// The front sticks to the node it failed over to: a node that comes back
// rejoins as a replica and takes no traffic until the current writer
// fails. Sending traffic back at once would put writes on two nodes for a
// while (the connections still open on the backup, and the new ones),
// where they would meet as certification conflicts.
//
// The health check is a small HTTP check served by this process, one
// listener per node, answering 200 only when the node is Synced, in the
// Primary component and ready (wsrep_local_state_comment,
// wsrep_cluster_status, wsrep_ready), as Cloud Foundry's galera-agent and
// Percona's clustercheck do. HAProxy's own mysql-check only completes a
// handshake, which a node out of the primary component, or one still
// receiving a state transfer, answers as readily as a healthy one, and
// then refuses every query ("WSREP has not yet prepared node for
// application use").
//
// Everything runs on free loopback ports in temporary directories, the
// nodes as the mysql user when this process is root; Close stops it all
// and removes the directories. Its methods are safe for concurrent use.
type Galera struct {
	nodes []*galeraNode
	// dir holds haproxy's config and log.
	dir       string
	frontPort int
	// frontAlso are addresses the front listens on besides loopback.
	frontAlso []string
	haproxy   *child
	checks    []*http.Server
	// front reaches the writer through haproxy, with no idle connection
	// kept: each query dials anew, and so goes where haproxy sends new
	// connections now.
	front *sql.DB

	mu     sync.Mutex // serialises KillWriter, Restart and Close
	closed bool
}

var _ HACluster = (*Galera)(nil)

// galeraNode is one node: a private MariaDB with the wsrep settings.
type galeraNode struct {
	name string
	db   *PrivateMariaDB
	// The node's Galera ports: group communication, incremental state
	// transfer, and snapshot state transfer (rsync's daemon).
	gcommPort, istPort, sstPort int
	checkPort                   int
	// checkDB asks the node directly, for its health check.
	checkDB *sql.DB
}

// galeraNodeKind is what the shared code needs to know of a node.
var galeraNodeKind = serverKind{
	name:        "galera node",
	user:        mariadbKind.user,
	noUser:      mariadbKind.noUser,
	dirPattern:  "corkboard-galera-node-",
	dirOption:   mariadbKind.dirOption,
	envPrefixes: mariadbKind.envPrefixes,
}

// StartGalera starts a three-node Galera cluster (the first node
// bootstraps it, the two others join it by state transfer, one after the
// other) and HAProxy in front, and waits until a write through the front
// succeeds. The front listens on 127.0.0.1 and on each of frontAlso
// (network namespaces' host ends, internal/netns: boards on hosts of
// their own reach it there). When the Debian packages are missing, its
// error wraps ErrNoGaleraBinaries. Nothing is left running when it fails.
func StartGalera(frontAlso ...string) (*Galera, error) {
	provider, sstMethod, haproxyPath, err := findGaleraBinaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "corkboard-galera-")
	if err != nil {
		return nil, fmt.Errorf("galera: %w", err)
	}
	g := &Galera{dir: dir, frontAlso: frontAlso}
	if err := g.setUp(provider, sstMethod, haproxyPath); err != nil {
		return nil, errors.Join(err, g.Close())
	}
	return g, nil
}

func (g *Galera) setUp(provider, sstMethod, haproxyPath string) error {
	for i := range galeraNodes {
		db, err := newPrivateMariaDB(galeraNodeKind)
		if err != nil {
			return err
		}
		n := &galeraNode{name: fmt.Sprintf("galera-%d", i+1), db: db}
		g.nodes = append(g.nodes, n)
		for _, port := range []*int{&n.gcommPort, &n.istPort, &n.sstPort, &n.checkPort} {
			if *port, err = freeLoopbackPort("galera"); err != nil {
				return err
			}
		}
		n.checkDB, err = sql.Open(MySQL, db.DSN+"?timeout=1s&readTimeout=1s&writeTimeout=1s")
		if err != nil {
			return err
		}
		n.checkDB.SetMaxIdleConns(1)
		n.checkDB.SetConnMaxLifetime(10 * time.Second)
	}
	// Every node names all three: a node that starts again finds the
	// cluster through whichever of the others is up.
	var members []string
	for _, n := range g.nodes {
		members = append(members, "127.0.0.1:"+strconv.Itoa(n.gcommPort))
	}
	clusterName := "corkboard-" + randomSuffix()
	for _, n := range g.nodes {
		n.db.extraArgs = n.wsrepArgs(provider, sstMethod, clusterName, members)
		// One at a time: three bootstraps at once have crashed
		// mariadbd (SIGSEGV dropping an Aria temporary table).
		if err := n.db.installDataDir(); err != nil {
			return err
		}
	}
	for i, n := range g.nodes {
		if i == 0 {
			// Only the very first start makes a new cluster: started
			// again after a kill, the first node joins the others like
			// any node.
			n.db.extraArgs = append(n.db.extraArgs, "--wsrep-new-cluster")
		}
		err := n.db.Start()
		if i == 0 {
			n.db.extraArgs = n.db.extraArgs[:len(n.db.extraArgs)-1]
		}
		if err != nil {
			return fmt.Errorf("galera: %s: %w", n.name, err)
		}
		if err := n.waitSynced(i+1, 2*time.Minute); err != nil {
			return err
		}
	}
	if err := g.startChecks(); err != nil {
		return err
	}
	if err := g.startHAProxy(haproxyPath); err != nil {
		return err
	}
	front, err := sql.Open(MySQL, g.AdminDSN()+"?timeout=2s&readTimeout=5s&writeTimeout=5s")
	if err != nil {
		return err
	}
	front.SetMaxIdleConns(0)
	g.front = front
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := g.WaitForWriter(ctx); err != nil {
		return fmt.Errorf("galera: no write through the front: %w", err)
	}
	return nil
}

// wsrepArgs are what make a MariaDB server a node of the cluster: the
// provider, the cluster's members and name, and this node's own ports
// for group communication and the two kinds of state transfer, all on
// loopback.
func (n *galeraNode) wsrepArgs(provider, sstMethod, clusterName string, members []string) []string {
	providerOptions := []string{
		"gmcast.listen_addr=tcp://127.0.0.1:" + strconv.Itoa(n.gcommPort),
		"ist.recv_addr=127.0.0.1:" + strconv.Itoa(n.istPort),
		// The default 128 MB ring buffer file takes a while to write,
		// three times; 32 MB keeps far more than a test's writes for
		// incremental transfers.
		"gcache.size=32M",
	}
	return []string{
		"--wsrep_on=ON",
		"--wsrep_provider=" + provider,
		"--wsrep_provider_options=" + strings.Join(providerOptions, ";"),
		"--wsrep_cluster_address=gcomm://" + strings.Join(members, ","),
		"--wsrep_cluster_name=" + clusterName,
		"--wsrep_node_name=" + n.name,
		"--wsrep_node_address=127.0.0.1",
		"--wsrep_sst_method=" + sstMethod,
		"--wsrep_sst_receive_address=127.0.0.1:" + strconv.Itoa(n.sstPort),
		// What Galera requires of InnoDB and replication.
		"--binlog_format=ROW",
		"--default_storage_engine=InnoDB",
		"--innodb_autoinc_lock_mode=2",
	}
}

// Dialect is MySQL: the board talks to the cluster as to one MySQL server.
func (g *Galera) Dialect() string { return MySQL }

// AdminDSN connects as root through HAProxy: root@tcp(127.0.0.1:PORT)/
func (g *Galera) AdminDSN() string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/", g.frontPort)
}

// Nodes names the nodes, in the order they were started.
func (g *Galera) Nodes() []string {
	var names []string
	for _, n := range g.nodes {
		names = append(names, n.name)
	}
	return names
}

// NodeDSN reaches one node directly, not through the front: to read what
// it holds.
func (g *Galera) NodeDSN(node string) (string, error) {
	n, err := g.node(node)
	if err != nil {
		return "", err
	}
	return n.db.DSN, nil
}

// Writer names the node the front sends new connections to now, as that
// node names itself.
func (g *Galera) Writer() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var name string
	if err := g.front.QueryRowContext(ctx, "SELECT @@wsrep_node_name").Scan(&name); err != nil {
		return "", fmt.Errorf("galera: writer: %w", err)
	}
	return name, nil
}

// KillWriter SIGKILLs the writer's mariadbd and returns its name.
func (g *Galera) KillWriter() (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	name, err := g.Writer()
	if err != nil {
		return "", err
	}
	n, err := g.node(name)
	if err != nil {
		return "", err
	}
	if !n.db.isRunning() {
		return "", fmt.Errorf("galera: writer %s is not running", name)
	}
	err = n.db.kill()
	// Killed or not, the process is no longer ours to wait for as a
	// running server (kill has waited for its exit when it could).
	n.db.server, n.db.exited = nil, nil
	n.killLeftovers()
	if err != nil {
		return "", err
	}
	return name, nil
}

// Restart starts a stopped node again and waits until it has rejoined:
// Synced, in a cluster of three again. It receives what it missed by
// incremental transfer when the donor still holds it, else by a full
// snapshot (rsync).
func (g *Galera) Restart(node string) error { return g.restart(node, false) }

// LogPath is node's server log.
func (g *Galera) LogPath(node string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, err := g.node(node)
	if err != nil {
		return "", err
	}
	return filepath.Join(n.db.dir, "server.log"), nil
}

// RestartBySnapshot is Restart for a node that lost its Galera state, as a
// machine replaced or restored would: its grastate.dat and write-set cache
// are removed first, so it cannot ask for what it missed (IST) and rejoins
// by a whole snapshot transfer (SST, rsync from another node than the
// writer).
func (g *Galera) RestartBySnapshot(node string) error { return g.restart(node, true) }

func (g *Galera) restart(node string, bySnapshot bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return errors.New("galera: restart after Close")
	}
	n, err := g.node(node)
	if err != nil {
		return err
	}
	if n.db.isRunning() {
		return fmt.Errorf("galera: %s is running", node)
	}
	// A state transfer cut short by the kill may have left its helpers.
	n.killLeftovers()
	// What a packaged server's start does before mariadbd (galera_recovery
	// under systemd): read the last committed position from InnoDB, so
	// that the node asks for what it missed (an incremental transfer)
	// rather than for a whole snapshot.
	base := n.db.extraArgs
	defer func() { n.db.extraArgs = base }()
	extra := slices.Clone(base)
	if bySnapshot {
		for _, state := range []string{"grastate.dat", "galera.cache"} {
			if err := os.Remove(filepath.Join(n.db.dir, state)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("galera: %s: forget its state: %w", node, err)
			}
		}
	} else if position, err := n.recoverPosition(); err == nil {
		extra = append(extra, "--wsrep_start_position="+position)
	}
	// A donor of a snapshot (rsync) is blocked for its length, and its
	// check fails meanwhile: the writer as donor would mean a second
	// failover. So the donor is another node when there is one (the
	// trailing comma lets Galera pick any if that one cannot).
	if writer, err := g.Writer(); err == nil {
		for _, other := range g.nodes {
			if other != n && other.name != writer && other.db.isRunning() {
				extra = append(extra, "--wsrep_sst_donor="+other.name+",")
				break
			}
		}
	}
	n.db.extraArgs = extra
	if err := n.db.Start(); err != nil {
		return fmt.Errorf("galera: restart %s: %w", node, err)
	}
	return n.waitSynced(galeraNodes, 2*time.Minute)
}

// recoveredPosition is how mariadbd --wsrep-recover reports the last
// committed position: "WSREP: Recovered position: UUID:SEQNO".
var recoveredPosition = regexp.MustCompile(`WSREP: Recovered position:\s*([0-9a-f-]{36}:-?[0-9]+)`)

// recoverPosition runs mariadbd --wsrep-recover on the stopped node's
// directory (InnoDB's crash recovery, then an exit) and returns the
// position it found.
func (n *galeraNode) recoverPosition() (string, error) {
	args := append(n.db.serverArgs(), "--wsrep-recover")
	out, err := n.db.command(n.db.mariadbd, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("galera: %s: mariadbd --wsrep-recover: %w\n%s", n.name, err, out)
	}
	match := recoveredPosition.FindSubmatch(out)
	if match == nil {
		return "", fmt.Errorf("galera: %s: mariadbd --wsrep-recover found no position:\n%s", n.name, out)
	}
	return string(match[1]), nil
}

// WaitForWriter writes through the front, on a new connection each time,
// until a write succeeds or ctx ends, and returns how long that took.
func (g *Galera) WaitForWriter(ctx context.Context) (time.Duration, error) {
	began := time.Now()
	var lastErr error
	for {
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		lastErr = g.probeWrite(attempt)
		cancel()
		if lastErr == nil {
			return time.Since(began), nil
		}
		select {
		case <-ctx.Done():
			return time.Since(began), fmt.Errorf("galera: no writer after %v: %w", time.Since(began).Round(time.Millisecond), lastErr)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// probeWrite commits one row through the front.
func (g *Galera) probeWrite(ctx context.Context) error {
	conn, err := g.front.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, stmt := range []string{
		"CREATE DATABASE IF NOT EXISTS corkboard_ha",
		"CREATE TABLE IF NOT EXISTS corkboard_ha.probe (id INT PRIMARY KEY, written DATETIME(6) NOT NULL)",
		"REPLACE INTO corkboard_ha.probe (id, written) VALUES (1, NOW(6))",
	} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

// ClusterSize is wsrep_cluster_size as node sees it.
func (g *Galera) ClusterSize(node string) (int, error) {
	n, err := g.node(node)
	if err != nil {
		return 0, err
	}
	status, err := n.status(context.Background())
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(status["wsrep_cluster_size"])
}

func (g *Galera) node(name string) (*galeraNode, error) {
	for _, n := range g.nodes {
		if n.name == name {
			return n, nil
		}
	}
	return nil, fmt.Errorf("galera: no node %q", name)
}

// Close stops haproxy, the checks and every node, and removes their
// directories. Safe to call twice.
func (g *Galera) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	var errs []error
	if g.front != nil {
		g.front.Close()
	}
	if g.haproxy != nil {
		errs = append(errs, g.haproxy.stop(10*time.Second))
	}
	for _, s := range g.checks {
		s.Close()
	}
	// The last node first: each leaves the cluster as it stops, and the
	// first, which bootstrapped it, is not special any more.
	for i := len(g.nodes) - 1; i >= 0; i-- {
		n := g.nodes[i]
		if n.checkDB != nil {
			n.checkDB.Close()
		}
		errs = append(errs, n.db.Close())
		n.killLeftovers()
	}
	if err := os.RemoveAll(g.dir); err != nil {
		errs = append(errs, fmt.Errorf("galera: remove %s: %w", g.dir, err))
	}
	return errors.Join(errs...)
}

// status reads the node's wsrep status variables.
func (n *galeraNode) status(ctx context.Context) (map[string]string, error) {
	rows, err := n.checkDB.QueryContext(ctx, "SHOW GLOBAL STATUS LIKE 'wsrep%'")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	status := map[string]string{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return nil, err
		}
		status[strings.ToLower(name)] = value
	}
	return status, rows.Err()
}

// healthy is the health check's judgement: a node that can take writes.
func (n *galeraNode) healthy(ctx context.Context) error {
	status, err := n.status(ctx)
	if err != nil {
		return err
	}
	if s := status["wsrep_local_state_comment"]; s != "Synced" {
		return fmt.Errorf("%s is %s, not Synced", n.name, s)
	}
	if s := status["wsrep_cluster_status"]; s != "Primary" {
		return fmt.Errorf("%s is in a %s component, not Primary", n.name, s)
	}
	if s := status["wsrep_ready"]; s != "ON" {
		return fmt.Errorf("%s: wsrep_ready is %s", n.name, s)
	}
	return nil
}

// waitSynced waits until the node is healthy in a cluster of at least
// size nodes.
func (n *galeraNode) waitSynced(size int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var lastErr error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		lastErr = n.healthy(ctx)
		if lastErr == nil {
			var status map[string]string
			if status, lastErr = n.status(ctx); lastErr == nil {
				if have, _ := strconv.Atoi(status["wsrep_cluster_size"]); have < size {
					lastErr = fmt.Errorf("cluster size %d, want %d", have, size)
				}
			}
		}
		cancel()
		if lastErr == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("galera: %s not synced in a cluster of %d after %v: %w\nserver.log:\n%s",
		n.name, size, limit, lastErr, tailOf(filepath.Join(n.db.dir, "server.log"), 30))
}

// killLeftovers kills what a state transfer started and a kill of its
// mariadbd left behind (the wsrep_sst_rsync script and the rsync daemon
// it runs on the node's directory): any process of the node's user whose
// command line names the node's directory, which no other process's does.
func (n *galeraNode) killLeftovers() {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	dir := filepath.Clean(n.db.dir)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if n.db.server != nil && pid == n.db.server.Pid {
			continue
		}
		args, err := processArgs(pid)
		if err != nil {
			continue
		}
		for _, arg := range args {
			if strings.Contains(arg, dir) {
				syscall.Kill(pid, syscall.SIGKILL)
				break
			}
		}
	}
}

// startChecks serves each node's health check on its own loopback port:
// 200 when the node can take writes, 503 with the reason otherwise.
func (g *Galera) startChecks() error {
	for _, n := range g.nodes {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(n.checkPort))
		if err != nil {
			return fmt.Errorf("galera: health check of %s: %w", n.name, err)
		}
		s := &http.Server{
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ctx, cancel := context.WithTimeout(r.Context(), time.Second)
				defer cancel()
				if err := n.healthy(ctx); err != nil {
					http.Error(w, err.Error(), http.StatusServiceUnavailable)
					return
				}
				fmt.Fprintf(w, "%s synced\n", n.name)
			}),
			ReadHeaderTimeout: time.Second,
		}
		g.checks = append(g.checks, s)
		go s.Serve(l)
	}
	return nil
}

// haproxyConfig sends every connection to the first node while it passes
// its check, else to the first backup that does, and sticks there: one
// entry in a stick table (keyed on a constant, the same for every
// connection on every address the front listens on) names the server new
// connections go to, and is
// rewritten only when that server is down. The checks run every 500 ms;
// two failures take a node out, two successes put it back. A node taken
// out has its connections cut at once (the clients reconnect to the new
// writer rather than wait on a dead or non-primary node), and a failed
// connection attempt is sent to another server.
func (g *Galera) haproxyConfig() string {
	var b strings.Builder
	fmt.Fprintf(&b, `global
	maxconn 2000

defaults
	mode tcp
	timeout connect 2s
	# Idle pooled connections are the board's to close, not the proxy's.
	timeout client 1h
	timeout server 1h
	timeout check 1s
	retries 2
	option redispatch

listen galera
%s	option tcpka
	option httpchk GET /
	http-check expect status 200
	stick-table type integer size 1
	stick on int(1)
	default-server inter 500ms fall 2 rise 2 on-marked-down shutdown-sessions
`, frontBinds(g.frontPort, g.frontAlso, "\t"))
	for i, n := range g.nodes {
		backup := ""
		if i > 0 {
			backup = " backup"
		}
		fmt.Fprintf(&b, "\tserver %s 127.0.0.1:%d check port %d%s\n", n.name, n.db.Port, n.checkPort, backup)
	}
	return b.String()
}

// startHAProxy runs haproxy in the foreground as this process's child and
// waits until its front accepts connections.
func (g *Galera) startHAProxy(path string) error {
	port, err := freeLoopbackPort("galera")
	if err != nil {
		return err
	}
	g.frontPort = port
	configPath := filepath.Join(g.dir, "haproxy.cfg")
	if err := os.WriteFile(configPath, []byte(g.haproxyConfig()), 0o600); err != nil {
		return fmt.Errorf("galera: %w", err)
	}
	logPath := filepath.Join(g.dir, "haproxy.log")
	// -db: foreground, no daemon; -W is not needed without reloads.
	cmd := exec.Command(path, "-db", "-f", configPath)
	cmd.Dir = g.dir
	haproxy, err := startChild(cmd, logPath)
	if err != nil {
		return fmt.Errorf("galera: %w", err)
	}
	g.haproxy = haproxy
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if !haproxy.running() {
			return fmt.Errorf("galera: haproxy exited while starting:\n%s", tailOf(logPath, 20))
		}
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("galera: haproxy not listening on %d after 10 s:\n%s", port, tailOf(logPath, 20))
}

// findGaleraBinaries finds the provider library, the state transfer
// method's tools (rsync, else mariabackup) and haproxy; mariadbd and
// mariadb-install-db are found when the nodes are made.
func findGaleraBinaries() (provider, sstMethod, haproxy string, err error) {
	missing := func(what string) error {
		return fmt.Errorf("galera: %w: need %s (install galera-4, rsync and haproxy, e.g. apt-get install galera-4 rsync haproxy)", ErrNoGaleraBinaries, what)
	}
	if _, _, err := findMariaDBBinaries(); err != nil {
		return "", "", "", missing("mariadbd and mariadb-install-db")
	}
	for _, path := range galeraProvider {
		if _, err := os.Stat(path); err == nil {
			provider = path
			break
		}
	}
	if provider == "" {
		return "", "", "", missing("the Galera provider, libgalera_smm.so")
	}
	switch {
	case findBinary("rsync", "/usr/bin") != "" && findBinary("wsrep_sst_rsync", "/usr/bin") != "":
		sstMethod = "rsync"
	case findBinary("mariabackup", "/usr/bin") != "" && findBinary("wsrep_sst_mariabackup", "/usr/bin") != "":
		sstMethod = "mariabackup"
	default:
		return "", "", "", missing("rsync (or mariabackup) for state transfers")
	}
	if haproxy = findBinary("haproxy", "/usr/sbin"); haproxy == "" {
		return "", "", "", missing("haproxy")
	}
	return provider, sstMethod, haproxy, nil
}
