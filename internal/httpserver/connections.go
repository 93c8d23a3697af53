package httpserver

import (
	"math"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
)

// ConnectionLimits caps the connections a server holds open, in all and
// from one address. Every connection takes a file descriptor, a goroutine
// and its buffers whatever it asks: requests in flight, bodies and
// streams have caps per client in the board's handlers, but a connection
// that sent one cheap request and stays open (keep-alive, renewed within
// the idle timeout) passes them all. One client holding 20,000 such
// connections took a board to its file limit: SQLite could no longer
// open its file ("unable to open database file"), and another client's
// call waited 5 s.
//
// A connection past a cap is closed as it is accepted, before the TLS
// handshake (so the address, not the certificate, is what is counted:
// a certificate is known only after the handshake the cap is there to
// spare). The client sees its connection closed at once and may try
// again; connections already open, a cell's among them, go on.
//
// Worked example, PerAddress 2 and Total 3:
//  1. 10.0.0.1 opens a and b: both served (1 open from it, then 2).
//  2. 10.0.0.1 opens c: closed at once, Refused("connections_per_address").
//  3. 10.0.0.2 opens d: served (3 open in all).
//  4. 10.0.0.3 opens e: closed at once, Refused("connections").
//  5. a closes; 10.0.0.1 opens f: served.
type ConnectionLimits struct {
	// Total caps the connections open at once; 0 is no cap.
	Total int
	// PerAddress caps the connections open at once from one IP address;
	// 0 is no cap.
	PerAddress int

	mu     sync.Mutex
	open   int
	byAddr map[string]int

	refusedTotal, refusedPerAddress atomic.Int64
}

// OpenFileLimit is the process's open-file limit (its soft RLIMIT_NOFILE,
// which Go raises to the hard one as a program starts), 0 when it cannot
// be read: what a server's ConnectionLimits.Total leaves room under, as
// each connection takes a descriptor.
func OpenFileLimit() int {
	var files syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &files); err != nil {
		return 0
	}
	return int(min(files.Cur, math.MaxInt32))
}

// The limit names Refused reports, as the board's metrics label them.
const (
	LimitConnections           = "connections"
	LimitConnectionsPerAddress = "connections_per_address"
)

// Open is how many connections are open.
func (c *ConnectionLimits) Open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open
}

// Refused is how many connections were closed as they were accepted
// because of limit (LimitConnections or LimitConnectionsPerAddress).
func (c *ConnectionLimits) Refused(limit string) int64 {
	if limit == LimitConnectionsPerAddress {
		return c.refusedPerAddress.Load()
	}
	return c.refusedTotal.Load()
}

// admit counts a connection from addr in, or says which cap it is past.
func (c *ConnectionLimits) admit(addr string) (admitted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.PerAddress > 0 && c.byAddr[addr] >= c.PerAddress:
		c.refusedPerAddress.Add(1)
		return false
	case c.Total > 0 && c.open >= c.Total:
		c.refusedTotal.Add(1)
		return false
	}
	if c.byAddr == nil {
		c.byAddr = map[string]int{}
	}
	c.byAddr[addr]++
	c.open++
	return true
}

func (c *ConnectionLimits) release(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open--
	if c.byAddr[addr]--; c.byAddr[addr] <= 0 {
		delete(c.byAddr, addr)
	}
}

// limitedListener closes the connections its limits refuse as it accepts
// them, and counts the others until they close.
type limitedListener struct {
	net.Listener
	limits *ConnectionLimits
}

func (l limitedListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := remoteIP(conn)
		if !l.limits.admit(addr) {
			conn.Close()
			continue
		}
		return &countedConn{Conn: conn, limits: l.limits, addr: addr}, nil
	}
}

// remoteIP is the address a connection is counted under: its IP, without
// the port.
func remoteIP(conn net.Conn) string {
	if tcp, ok := conn.RemoteAddr().(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	host, _, err := net.SplitHostPort(conn.RemoteAddr().String())
	if err != nil {
		return conn.RemoteAddr().String()
	}
	return host
}

// countedConn gives its place back when it closes, once however often
// Close is called.
type countedConn struct {
	net.Conn
	limits *ConnectionLimits
	addr   string
	closed sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.closed.Do(func() { c.limits.release(c.addr) })
	return err
}
