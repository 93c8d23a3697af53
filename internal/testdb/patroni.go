package testdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Why Patroni (with etcd) rather than pg_auto_failover: the board's driver,
// lib/pq, takes one host per DSN and has no multi-host failover, so
// something in front of the pair must send every connection to whichever
// node is primary now. Patroni answers that question over HTTP on each
// node (GET /primary is 200 on the leader only), which is exactly what
// HAProxy's httpchk polls; pg_auto_failover leaves the routing to a
// multi-host client, which the board does not have.

// ErrNoPatroniBinaries is wrapped by StartPatroni's error when patroni,
// etcd, haproxy or the PostgreSQL server binaries are not installed, so a
// test can tell "this machine cannot run the pair" from "the pair is broken".
var ErrNoPatroniBinaries = errors.New("no Patroni, etcd, HAProxy or PostgreSQL server binaries found")

// The failover timings, in Patroni's dynamic configuration. The leader
// renews its key in etcd every loop_wait, the key lives ttl seconds, and a
// leader that cannot renew it within retry_timeout demotes itself; Patroni
// wants loop_wait + 2*retry_timeout <= ttl (here 1 + 4 <= 6) so that a
// leader slowed by one etcd hiccup is not demoted while its key is still
// valid. A SIGKILLed primary's key expires ttl after its last renewal, the
// standby's watch on the key wakes it at once, and it promotes: kill to
// first write through the front measured 6.4-7.0 s (median 6.55 s over 10
// kills; docs/ha-postgres.md). The defaults (30, 10, 10) would make that
// about 30 s. No spurious failover in 60 s of three busy loops on the two
// cores of the machine these were tuned on. Patroni 3.0 (Debian 12's)
// takes these values; later versions document minimums of ttl 20 and
// retry_timeout 3 and would need these raised.
const (
	patroniTTL          = 6
	patroniLoopWait     = 1
	patroniRetryTimeout = 2
)

// patroniKind is what the shared private-server code needs to know of the
// pair: Postgres refuses to run as root, so when this process is root
// everything (etcd, Patroni, the postgres it starts, HAProxy) runs as the
// postgres system user in a directory that user owns.
var patroniKind = serverKind{
	name:       "patroni pair",
	user:       "postgres",
	noUser:     "running as root, and postgres refuses root, but there is no \"postgres\" system user to run the pair as",
	dirPattern: "corkboard-patroni-",
	dirOption:  "-D",
	// PG* would point Patroni's postgres or its client tools at another
	// server, PATRONI_* and ETCD* override the config files given here.
	envPrefixes: []string{"PG", "PATRONI_", "ETCD"},
}

// Patroni is a Postgres failover pair of its own: one etcd member, two
// Patroni-managed Postgres nodes ("pg0" and "pg1") with synchronous
// replication, and HAProxy in front, which sends every connection to the
// node whose Patroni REST API answers 200 on /primary. It implements
// HACluster; everything runs on free loopback ports under one temporary
// directory, which Close removes.
//
// Settings (see docs/ha-postgres.md for why):
//   - synchronous_mode: a commit is acknowledged only once the standby has
//     the WAL, and Patroni promotes only the standby it named synchronous,
//     so an acknowledged write survives losing the primary;
//   - synchronous_mode_strict off: with one node left, the survivor takes
//     writes alone (not durable against a second loss until the other node
//     rejoins) rather than refusing every write until it does;
//   - use_pg_rewind: a killed primary rejoins as a replica by rewinding
//     what it wrote past the point where the standby was promoted.
//
// A Patroni is not safe for concurrent use by several goroutines;
// connections to it are.
type Patroni struct {
	// privateServer's dir holds etcd's data, each node's directory and
	// HAProxy's config; its port is the front's.
	privateServer
	frontPort int
	// frontAlso are addresses the front listens on besides loopback.
	frontAlso []string
	bindir    string // Postgres's initdb, pg_ctl, postgres, pg_rewind...
	patroni   string // paths of the binaries
	etcd      string
	haproxy   string

	etcdClientPort, etcdPeerPort int
	nodes                        []*patroniNode
	etcdProc, haproxyProc        *child
}

// patroniNode is one Patroni and the Postgres it manages.
type patroniNode struct {
	name    string
	dir     string // config, log, pgpass and socket
	dataDir string // PGDATA, made by Patroni (initdb or pg_basebackup)
	pgPort  int
	apiPort int
	proc    *child // the running Patroni, nil when stopped or killed
}

// StartPatroni starts etcd, then both Patroni nodes at once (one wins the
// race to initialize the cluster and runs initdb; the other copies it with
// pg_basebackup), then HAProxy, and returns once one node is primary, the
// other its synchronous standby, and a write through the front succeeds:
// 6-12 s here. The front listens on 127.0.0.1 and on each of frontAlso
// (as StartGalera's).
func StartPatroni(frontAlso ...string) (*Patroni, error) {
	bins, err := findPatroniBinaries()
	if err != nil {
		return nil, err
	}
	server, frontPort, err := newPrivateServer(patroniKind)
	if err != nil {
		return nil, err
	}
	p := &Patroni{
		privateServer: server,
		frontPort:     frontPort,
		frontAlso:     frontAlso,
		bindir:        bins.bindir,
		patroni:       bins.patroni,
		etcd:          bins.etcd,
		haproxy:       bins.haproxy,
	}
	if err := p.setUp(p.writeConfigs, p.startAll, p.Close); err != nil {
		return nil, err
	}
	return p, nil
}

// Dialect is testdb.Postgres.
func (p *Patroni) Dialect() string { return Postgres }

// AdminDSN connects as postgres, with trust auth, to the "postgres"
// database of the current primary, through HAProxy.
func (p *Patroni) AdminDSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=5", p.frontPort)
}

// NodeDSN connects to one node directly, past HAProxy: for checking what a
// replica holds.
func (p *Patroni) NodeDSN(name string) (string, error) {
	n, err := p.node(name)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=5", n.pgPort), nil
}

// Nodes names the nodes, in a fixed order.
func (p *Patroni) Nodes() []string {
	names := make([]string, len(p.nodes))
	for i, n := range p.nodes {
		names[i] = n.name
	}
	return names
}

// LogPath is the file a node's Patroni, and the Postgres it runs, log to.
func (p *Patroni) LogPath(name string) (string, error) {
	n, err := p.node(name)
	if err != nil {
		return "", err
	}
	return n.logPath(), nil
}

// Writer names the node whose Patroni answers 200 on /primary: the holder
// of the leader key, which HAProxy routes to. It is an error when no node,
// or more than one, says so (during a failover).
func (p *Patroni) Writer() (string, error) {
	var primaries []string
	for _, n := range p.nodes {
		if n.proc != nil && p.apiStatus(n, "/primary") == http.StatusOK {
			primaries = append(primaries, n.name)
		}
	}
	if len(primaries) != 1 {
		return "", fmt.Errorf("patroni pair: %d nodes answer as primary (%v), want 1", len(primaries), primaries)
	}
	return primaries[0], nil
}

// KillWriter SIGKILLs the primary's Patroni, then its postmaster and every
// child of it: the node is gone as if its machine had died, with nothing
// left to shut down cleanly, release the leader key or restart Postgres.
// The standby takes over once the key expires (at most patroniTTL seconds).
func (p *Patroni) KillWriter() (string, error) {
	name, err := p.Writer()
	if err != nil {
		return "", err
	}
	n, _ := p.node(name)
	if err := n.proc.kill(); err != nil {
		return "", fmt.Errorf("patroni pair: kill %s's patroni: %w", name, err)
	}
	n.proc = nil
	if err := p.killPostgres(n); err != nil {
		return "", err
	}
	return name, nil
}

// Restart starts a killed (or stopped) node's Patroni again and waits until
// the primary streams to it as its synchronous standby and Patroni has
// recorded it as the one that may take over: from then on the
// pair again keeps every acknowledged write through the loss of either
// node. Patroni finds the leader key held by the other node and, after a
// kill, a data directory that diverged from it (the killed primary may have
// written WAL the standby never received): it runs crash recovery in
// single-user mode, waits for a checkpoint on the new primary, runs
// pg_rewind and starts streaming. Patroni's /replica answers 200 before
// all that, as soon as Postgres first runs in recovery on the old
// timeline, so the primary's pg_stat_replication is what Restart waits on.
func (p *Patroni) Restart(name string) error {
	n, err := p.node(name)
	if err != nil {
		return err
	}
	if p.closed {
		return errors.New("patroni pair: restart after Close")
	}
	if n.proc != nil {
		return fmt.Errorf("patroni pair: %s is running", name)
	}
	if err := p.startNode(n); err != nil {
		return err
	}
	db, err := sql.Open(Postgres, p.AdminDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	return p.waitFor(90*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var state string
		err := db.QueryRowContext(ctx, "SELECT sync_state FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming'", name).Scan(&state)
		if err != nil {
			return fmt.Errorf("%s streaming from the primary: %w", name, err)
		}
		if state != "sync" {
			return fmt.Errorf("%s streams as a %s standby, not sync", name, state)
		}
		// Postgres waits on the standby's flush one loop before Patroni
		// records it as the synchronous standby in etcd, and Patroni
		// promotes only the node that record names: were the primary
		// lost in between, the pair would have no writer until it came
		// back. The node's /sync is 200 once the record names it.
		if code := p.apiStatus(n, "/sync"); code != http.StatusOK {
			return fmt.Errorf("%s: /sync answers %d", name, code)
		}
		return nil
	})
}

// WaitForWriter retries a write through the front, each attempt on a new
// connection and bounded to 2 s, until one commits, and returns how long
// that took.
func (p *Patroni) WaitForWriter(ctx context.Context) (time.Duration, error) {
	began := time.Now()
	db, err := sql.Open(Postgres, p.AdminDSN())
	if err != nil {
		return 0, err
	}
	defer db.Close()
	// No connection is reused: one opened to the old primary would
	// fail, and the question is whether a new one reaches a writer.
	db.SetMaxIdleConns(0)
	var lastErr error
	for {
		attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
		lastErr = probeWrite(attempt, db)
		cancel()
		if lastErr == nil {
			return time.Since(began), nil
		}
		select {
		case <-ctx.Done():
			return time.Since(began), fmt.Errorf("patroni pair: no write through the front after %v: %w (last: %v)", time.Since(began).Round(time.Millisecond), ctx.Err(), lastErr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// probeWrite commits one row into a table of the postgres database: it
// fails on a standby (read-only) and, while the pair has no primary, on
// HAProxy closing the connection.
func probeWrite(ctx context.Context, db *sql.DB) error {
	_, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS corkboard_writer_probe (at timestamptz NOT NULL);
INSERT INTO corkboard_writer_probe (at) VALUES (now())`)
	return err
}

// Close stops HAProxy, both Patronis (each stops its Postgres with a fast
// shutdown), kills whatever of them is still there, stops etcd and removes
// the directory. Safe to call twice.
func (p *Patroni) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	var errs []error
	if p.haproxyProc != nil {
		errs = append(errs, p.haproxyProc.stop(10*time.Second))
	}
	// Both at once: stopping one then the other would have the second
	// take over as primary for nothing, and take twice as long.
	var wg sync.WaitGroup
	nodeErrs := make([]error, len(p.nodes))
	for i, n := range p.nodes {
		if n.proc == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			nodeErrs[i] = n.proc.stop(30 * time.Second)
		}()
	}
	wg.Wait()
	errs = append(errs, nodeErrs...)
	for _, n := range p.nodes {
		n.proc = nil
		// A postmaster outlives a Patroni killed by stop (or one whose
		// stop left it): Patroni starts it detached.
		errs = append(errs, p.killPostgres(n))
	}
	if p.etcdProc != nil {
		errs = append(errs, p.etcdProc.stop(10*time.Second))
	}
	if err := os.RemoveAll(p.dir); err != nil {
		errs = append(errs, fmt.Errorf("patroni pair: remove %s: %w", p.dir, err))
	}
	return errors.Join(errs...)
}

func (p *Patroni) node(name string) (*patroniNode, error) {
	for _, n := range p.nodes {
		if n.name == name {
			return n, nil
		}
	}
	return nil, fmt.Errorf("patroni pair: no node %q", name)
}

func (n *patroniNode) configPath() string { return filepath.Join(n.dir, "patroni.json") }
func (n *patroniNode) logPath() string    { return filepath.Join(n.dir, "patroni.log") }

// writeConfigs picks the ports and writes etcd's, each Patroni's and
// HAProxy's configuration into the directory.
func (p *Patroni) writeConfigs() error {
	// Six more ports, all held open until all are picked so that no two
	// are the same.
	ports, err := freeLoopbackPorts(p.kind.name, 6)
	if err != nil {
		return err
	}
	p.etcdClientPort, p.etcdPeerPort = ports[0], ports[1]
	for i := range 2 {
		n := &patroniNode{
			name:    fmt.Sprintf("pg%d", i),
			dir:     filepath.Join(p.dir, fmt.Sprintf("pg%d", i)),
			pgPort:  ports[2+2*i],
			apiPort: ports[3+2*i],
		}
		n.dataDir = filepath.Join(n.dir, "data")
		p.nodes = append(p.nodes, n)
		if err := p.mkdir(n.dir); err != nil {
			return err
		}
		config, err := json.MarshalIndent(p.patroniConfig(n), "", "  ")
		if err != nil {
			return err
		}
		// JSON is YAML, which is what Patroni reads.
		if err := p.writeFile(n.configPath(), config); err != nil {
			return err
		}
	}
	return p.writeFile(filepath.Join(p.dir, "haproxy.cfg"), []byte(p.haproxyConfig()))
}

// patroniConfig is one node's Patroni configuration. The bootstrap.dcs part
// is written to etcd by the node that initializes the cluster, and is the
// whole cluster's from then on.
func (p *Patroni) patroniConfig(n *patroniNode) map[string]any {
	// Trust for the test user on loopback, replication included: the pair
	// is private to this process's machine and thrown away afterwards.
	hba := []string{
		"local all all trust",
		"host all all 127.0.0.1/32 trust",
		"host replication all 127.0.0.1/32 trust",
	}
	user := map[string]any{"username": "postgres"}
	return map[string]any{
		"scope":     "corkboard",
		"namespace": "/corkboard/",
		"name":      n.name,
		"log":       map[string]any{"level": "INFO"},
		"restapi": map[string]any{
			"listen":          fmt.Sprintf("127.0.0.1:%d", n.apiPort),
			"connect_address": fmt.Sprintf("127.0.0.1:%d", n.apiPort),
		},
		"etcd3": map[string]any{"hosts": []string{fmt.Sprintf("127.0.0.1:%d", p.etcdClientPort)}},
		"bootstrap": map[string]any{
			"dcs": map[string]any{
				"ttl":                     patroniTTL,
				"loop_wait":               patroniLoopWait,
				"retry_timeout":           patroniRetryTimeout,
				"maximum_lag_on_failover": 1 << 20,
				"synchronous_mode":        true,
				"synchronous_mode_strict": false,
				"postgresql": map[string]any{
					"use_pg_rewind": true,
					"use_slots":     true,
					"parameters": map[string]any{
						"max_connections":       100,
						"wal_level":             "replica",
						"hot_standby":           "on",
						"wal_log_hints":         "on",
						"max_wal_senders":       5,
						"max_replication_slots": 5,
						"wal_keep_size":         "128MB",
					},
				},
			},
			// UTF8 and C.UTF-8, as PrivatePostgres: CreateOn makes ICU
			// databases from template0.
			"initdb": []any{
				map[string]string{"encoding": "UTF8"},
				map[string]string{"locale": "C.UTF-8"},
				"no-sync",
			},
		},
		"postgresql": map[string]any{
			"listen":          fmt.Sprintf("127.0.0.1:%d", n.pgPort),
			"connect_address": fmt.Sprintf("127.0.0.1:%d", n.pgPort),
			"data_dir":        n.dataDir,
			"bin_dir":         p.bindir,
			"pgpass":          filepath.Join(n.dir, "pgpass"),
			"authentication": map[string]any{
				"superuser":   user,
				"replication": user,
				"rewind":      user,
			},
			"pg_hba": hba,
			"parameters": map[string]any{
				// The socket beside the node, never in
				// /var/run/postgresql with the shared server's.
				"unix_socket_directories": n.dir,
				// The data is thrown away, and a SIGKILLed process
				// (not a crashed machine) loses nothing the kernel
				// has: fsync buys nothing here. The standby still
				// acknowledges a commit only once it has the WAL.
				"fsync":          "off",
				"shared_buffers": "16MB",
			},
		},
	}
}

// haproxyConfig sends the front's connections to the node whose Patroni
// answers 200 on /primary, checked every 500 ms; a node failing two checks
// in a row is out, and the connections it still had are closed, so clients
// reconnect to the new primary rather than wait on a dead one. The check
// is an OPTIONS request, which Patroni answers with the status alone: to a
// GET it sends a JSON body that HAProxy does not read, and logs a
// traceback for every check whose connection HAProxy reset meanwhile.
func (p *Patroni) haproxyConfig() string {
	var b strings.Builder
	fmt.Fprintf(&b, `global
    maxconn 500

defaults
    mode tcp
    timeout connect 2s
    timeout client 30m
    timeout server 30m
    timeout check 1s

listen postgres
%s    option httpchk OPTIONS /primary
    http-check expect status 200
    default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions
`, frontBinds(p.frontPort, p.frontAlso, "    "))
	for _, n := range p.nodes {
		fmt.Fprintf(&b, "    server %s 127.0.0.1:%d check port %d\n", n.name, n.pgPort, n.apiPort)
	}
	return b.String()
}

// startAll starts etcd, both nodes and HAProxy, and waits until the pair
// has a primary with a synchronous standby and takes a write through the
// front.
func (p *Patroni) startAll() error {
	if err := p.startEtcd(); err != nil {
		return err
	}
	for _, n := range p.nodes {
		if err := p.startNode(n); err != nil {
			return err
		}
	}
	logFile := filepath.Join(p.dir, "haproxy.log")
	proc, err := p.spawn(logFile, p.haproxy, "-db", "-f", filepath.Join(p.dir, "haproxy.cfg"))
	if err != nil {
		return err
	}
	p.haproxyProc = proc
	err = p.waitFor(120*time.Second, func() error {
		if _, err := p.Writer(); err != nil {
			return err
		}
		for _, n := range p.nodes {
			if code := p.apiStatus(n, "/primary"); code != http.StatusOK {
				if code := p.apiStatus(n, "/sync"); code != http.StatusOK {
					return fmt.Errorf("%s is not a synchronous standby yet (/sync: %d)", n.name, code)
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.WaitForWriter(ctx); err != nil {
		return fmt.Errorf("%w\nhaproxy.log:\n%s", err, tailOf(logFile, 10))
	}
	return nil
}

// startEtcd starts one etcd member on loopback and waits until it is
// healthy.
func (p *Patroni) startEtcd() error {
	client := fmt.Sprintf("http://127.0.0.1:%d", p.etcdClientPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", p.etcdPeerPort)
	logFile := filepath.Join(p.dir, "etcd.log")
	proc, err := p.spawn(logFile, p.etcd,
		"--name", "etcd0",
		"--data-dir", filepath.Join(p.dir, "etcd"),
		"--listen-client-urls", client,
		"--advertise-client-urls", client,
		"--listen-peer-urls", peer,
		"--initial-advertise-peer-urls", peer,
		"--initial-cluster", "etcd0="+peer,
		"--initial-cluster-state", "new",
		"--initial-cluster-token", filepath.Base(p.dir),
	)
	if err != nil {
		return err
	}
	p.etcdProc = proc
	err = p.waitFor(30*time.Second, func() error {
		if !proc.running() {
			return errors.New("etcd exited")
		}
		resp, err := httpClient.Get(client + "/health")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var health struct{ Health string }
		if err := json.NewDecoder(resp.Body).Decode(&health); err != nil {
			return err
		}
		if health.Health != "true" {
			return fmt.Errorf("etcd health %q", health.Health)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w\netcd.log:\n%s", err, tailOf(logFile, 10))
	}
	return nil
}

// startNode starts a node's Patroni, which starts (or first creates) its
// Postgres.
func (p *Patroni) startNode(n *patroniNode) error {
	proc, err := p.spawn(n.logPath(), p.patroni, n.configPath())
	if err != nil {
		return err
	}
	n.proc = proc
	return nil
}

// killPostgres SIGKILLs the postmaster running on the node's data
// directory, if there is one, and every child of it. The postmaster is
// stopped first, so that it cannot fork a child the kill would miss, and
// the pid in postmaster.pid is only signalled once its command line shows
// it runs on this data directory: a stale pid file must never lead to
// someone else's process (the shared server's above all).
func (p *Patroni) killPostgres(n *patroniNode) error {
	pm, ok := p.postmasterPid(n)
	if !ok {
		return nil
	}
	if err := syscall.Kill(pm, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("patroni pair: SIGSTOP postmaster %d of %s: %w", pm, n.name, err)
	}
	if err := p.waitStopped(pm); err != nil {
		return err
	}
	children, err := childrenOf(pm)
	if err != nil {
		return fmt.Errorf("patroni pair: %w", err)
	}
	for _, pid := range append([]int{pm}, children...) {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
			return fmt.Errorf("patroni pair: SIGKILL %d of %s: %w", pid, n.name, err)
		}
	}
	// Wait until the postmaster is gone, so that a Restart cannot find
	// its pid file naming a live process. Not our child: it is gone from
	// /proc once init has reaped it, or no longer runs on the directory.
	deadline := time.Now().Add(10 * time.Second)
	for {
		args, err := processArgs(pm)
		if err != nil || !hasDirOption(args, "-D", n.dataDir) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("patroni pair: postmaster %d of %s still there 10 s after SIGKILL", pm, n.name)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// postmasterPid is the pid in the node's postmaster.pid, when that process
// is a postgres running on the node's data directory.
func (p *Patroni) postmasterPid(n *patroniNode) (int, bool) {
	data, err := os.ReadFile(filepath.Join(n.dataDir, "postmaster.pid"))
	if err != nil {
		return 0, false
	}
	first, _, _ := strings.Cut(string(data), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return 0, false
	}
	args, err := processArgs(pid)
	if err != nil || !hasDirOption(args, "-D", n.dataDir) {
		return 0, false
	}
	return pid, true
}

// httpClient asks the Patroni REST APIs and etcd; a node that hangs must
// not hang the caller.
var httpClient = &http.Client{Timeout: 2 * time.Second}

// apiStatus is the status code of GET path on the node's Patroni REST API,
// 0 when it does not answer.
func (p *Patroni) apiStatus(n *patroniNode, path string) int {
	resp, err := httpClient.Get(fmt.Sprintf("http://127.0.0.1:%d%s", n.apiPort, path))
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitFor polls check every 100 ms until it returns nil, failing with its
// last error and the tail of each node's log after limit.
func (p *Patroni) waitFor(limit time.Duration, check func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			fmt.Fprintf(&b, "patroni pair: not ready after %v: %v", limit, err)
			for _, n := range p.nodes {
				fmt.Fprintf(&b, "\n%s:\n%s", n.logPath(), tailOf(n.logPath(), 15))
			}
			return errors.New(b.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mkdir makes a directory the binaries' user owns.
func (p *Patroni) mkdir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("patroni pair: %w", err)
	}
	return p.chown(dir)
}

// writeFile writes a file the binaries' user owns.
func (p *Patroni) writeFile(path string, data []byte) error {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("patroni pair: %w", err)
	}
	return p.chown(path)
}

func (p *Patroni) chown(path string) error {
	if p.runAs == nil {
		return nil
	}
	if err := os.Chown(path, int(p.runAs.Uid), int(p.runAs.Gid)); err != nil {
		return fmt.Errorf("patroni pair: chown %s: %w", path, err)
	}
	return nil
}

// spawn starts a binary (see privateServer.command) with its output
// appended to logPath, owned by the user the pair runs as (startChild).
// A postmaster Patroni started is detached from Patroni and would outlive
// a test binary that died; Close handles it in every other case.
func (p *Patroni) spawn(logPath, path string, args ...string) (*child, error) {
	if err := touch(logPath); err != nil {
		return nil, fmt.Errorf("patroni pair: %w", err)
	}
	if err := p.chown(logPath); err != nil {
		return nil, err
	}
	c, err := startChild(p.command(path, args...), logPath)
	if err != nil {
		return nil, fmt.Errorf("patroni pair: %w", err)
	}
	return c, nil
}

// freeLoopbackPorts is n different free ports on 127.0.0.1: each listener
// stays open until all are picked, so the kernel cannot hand out one twice.
func freeLoopbackPorts(name string, n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("%s: find a free port: %w", name, err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// patroniBinaries are the paths StartPatroni needs.
type patroniBinaries struct {
	bindir                 string
	patroni, etcd, haproxy string
}

// findPatroniBinaries finds patroni, etcd and haproxy on PATH or where
// Debian puts them (haproxy in /usr/sbin, off a user's PATH), and the
// Postgres server binaries as PrivatePostgres does.
func findPatroniBinaries() (patroniBinaries, error) {
	b := patroniBinaries{
		patroni: findBinary("patroni", "/usr/bin"),
		etcd:    findBinary("etcd", "/usr/bin"),
		haproxy: findBinary("haproxy", "/usr/sbin"),
	}
	var missing []string
	for name, path := range map[string]string{"patroni": b.patroni, "etcd": b.etcd, "haproxy": b.haproxy} {
		if path == "" {
			missing = append(missing, name)
		}
	}
	bindir, err := findPostgresBindir()
	if err != nil {
		missing = append(missing, "postgres")
	}
	for _, tool := range []string{"pg_rewind", "pg_basebackup"} {
		if err == nil && !isExecutable(filepath.Join(bindir, tool)) {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return b, fmt.Errorf("patroni pair: %w: missing %s (install patroni, etcd-server, haproxy and postgresql, e.g. apt-get install patroni etcd-server haproxy postgresql)", ErrNoPatroniBinaries, strings.Join(missing, ", "))
	}
	b.bindir = bindir
	return b, nil
}

// Patroni is an HACluster.
var _ HACluster = (*Patroni)(nil)
