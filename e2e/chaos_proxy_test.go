package e2e_test

import (
	"errors"
	"io"
	"net"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// partitionProxy is a TCP proxy between a rep and the board (the rep's
// board_url names the proxy) that can play a network partition.
//
// While cut, it behaves as a network that drops every packet: connections
// already open stay open but carry nothing further (what either side sends
// is read and thrown away), and new connections are accepted and then get
// no byte back. A caller therefore sees its calls hang until its own
// timeout, as it would behind a real partition, rather than get a quick
// "connection refused". Healing closes every connection that lived
// through the cut (nothing sent meanwhile is ever delivered; the peers
// must open new ones, as TCP peers whose connection timed out would) and
// passes new connections on again.
type partitionProxy struct {
	url      string
	listener net.Listener
	target   string

	mu  sync.Mutex
	cut bool
	// open holds every connection pair in flight; stalled, those that
	// lived through a cut, which heal closes.
	open map[*proxyPair]bool
	// Counters for the report: connections accepted, and those the cut
	// swallowed.
	accepted, swallowed int
	closed              bool
}

// proxyPair is one client connection and, unless it arrived during a
// cut, its connection to the board.
type proxyPair struct {
	client, board net.Conn
	stalled       bool
}

// startPartitionProxy listens on a free loopback port and forwards every
// connection to the board b listens on.
func startPartitionProxy(b *board) *partitionProxy {
	GinkgoHelper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	Expect(b.url).To(HavePrefix("http://"), "the proxy forwards plain HTTP only")
	target := strings.TrimPrefix(b.url, "http://")
	p := &partitionProxy{
		url:      "http://" + listener.Addr().String(),
		listener: listener,
		target:   target,
		open:     map[*proxyPair]bool{},
	}
	go p.accept()
	DeferCleanup(p.close)
	return p
}

func (p *partitionProxy) accept() {
	for {
		conn, err := p.listener.Accept()
		if err != nil {
			return // closed
		}
		go p.serve(conn)
	}
}

// serve forwards one connection, or swallows it while the proxy is cut.
func (p *partitionProxy) serve(client net.Conn) {
	pair := &proxyPair{client: client}
	p.mu.Lock()
	p.accepted++
	cut, closed := p.cut, p.closed
	if cut {
		p.swallowed++
		pair.stalled = true
	}
	if !closed {
		p.open[pair] = true
	}
	p.mu.Unlock()
	if closed {
		client.Close()
		return
	}
	defer p.forget(pair)
	if cut {
		// A partition: the connection exists, nothing ever answers.
		_, _ = io.Copy(io.Discard, client)
		client.Close()
		return
	}
	boardConn, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	pair.board = boardConn
	p.mu.Unlock()
	var both sync.WaitGroup
	both.Add(2)
	go func() { defer both.Done(); p.copy(pair, boardConn, client) }()
	go func() { defer both.Done(); p.copy(pair, client, boardConn) }()
	both.Wait()
	client.Close()
	boardConn.Close()
}

// copy moves bytes from src to dst until either end closes; what it reads
// while the pair is stalled it drops.
func (p *partitionProxy) copy(pair *proxyPair, dst, src net.Conn) {
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			stalled := pair.stalled
			p.mu.Unlock()
			if !stalled {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
		}
		if err != nil {
			break
		}
	}
	// One direction ended: end the other too, as a proxy in the middle of
	// a connection does.
	src.Close()
	dst.Close()
}

func (p *partitionProxy) forget(pair *proxyPair) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.open, pair)
}

// cutOff starts the partition: from now on nothing passes either way.
func (p *partitionProxy) cutOff() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for pair := range p.open {
		pair.stalled = true
	}
}

// heal ends the partition: the connections that lived through it are
// closed, and new ones pass again.
func (p *partitionProxy) heal() {
	p.mu.Lock()
	p.cut = false
	var stalled []net.Conn
	for pair := range p.open {
		if pair.stalled {
			stalled = append(stalled, pair.conns()...)
		}
	}
	p.mu.Unlock()
	for _, conn := range stalled {
		conn.Close()
	}
}

// counts reports the connections accepted so far and how many of them the
// cut swallowed.
func (p *partitionProxy) counts() (accepted, swallowed int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted, p.swallowed
}

func (p *partitionProxy) close() {
	p.mu.Lock()
	p.closed = true
	var conns []net.Conn
	for pair := range p.open {
		conns = append(conns, pair.conns()...)
	}
	p.mu.Unlock()
	if err := p.listener.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		GinkgoWriter.Printf("closing the partition proxy: %v\n", err)
	}
	for _, conn := range conns {
		conn.Close()
	}
}

// conns lists the pair's connections; p.mu is held.
func (pair *proxyPair) conns() []net.Conn {
	if pair.board == nil {
		return []net.Conn{pair.client}
	}
	return []net.Conn{pair.client, pair.board}
}
