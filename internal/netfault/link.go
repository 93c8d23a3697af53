// Package netfault puts a link a test can cut between a process and a
// server it reaches over TCP: a board and its database, say.
//
// A cut link behaves as a network partition does, not as a refused
// connection: nothing is closed, bytes sent either way are held (as a
// sender's TCP keeps them for retransmission), and new connections are
// accepted but get nowhere. Healed, the held bytes arrive, late — the
// case fencing exists for: a write sent before a partition that reaches
// the database after another process took over.
package netfault

import (
	"net"
	"sync"
)

// Link relays TCP connections from Addr to an upstream address.
type Link struct {
	// Addr is where the link listens (a free port).
	Addr     string
	upstream string
	ln       net.Listener

	mu     sync.Mutex
	cut    bool
	healed chan struct{} // closed when the link is healed; nil while whole
	conns  []net.Conn
	closed bool
}

// NewLink listens on a free loopback port and relays to upstream.
func NewLink(upstream string) (*Link, error) { return NewLinkOn("127.0.0.1", upstream) }

// NewLinkOn listens on a free port of host and relays to upstream: a
// process in a network namespace (internal/netns) reaches a server on
// this host's loopback through a link on the namespace's host address.
func NewLinkOn(host, upstream string) (*Link, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, err
	}
	l := &Link{Addr: ln.Addr().String(), upstream: upstream, ln: ln}
	go l.accept()
	return l, nil
}

// Cut holds every byte from now on, both ways, until Heal.
func (l *Link) Cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.cut {
		l.cut, l.healed = true, make(chan struct{})
	}
}

// Heal lets the held bytes and everything after them through.
func (l *Link) Heal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cut {
		l.cut = false
		close(l.healed)
	}
}

// Close stops listening and closes every relayed connection.
func (l *Link) Close() error {
	l.mu.Lock()
	l.closed = true
	conns := l.conns
	l.conns = nil
	if l.cut {
		l.cut = false
		close(l.healed)
	}
	l.mu.Unlock()
	err := l.ln.Close()
	for _, c := range conns {
		c.Close()
	}
	return err
}

// wait blocks while the link is cut.
func (l *Link) wait() {
	l.mu.Lock()
	healed := l.healed
	cut := l.cut
	l.mu.Unlock()
	if cut {
		<-healed
	}
}

func (l *Link) track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		c.Close()
		return false
	}
	l.conns = append(l.conns, c)
	return true
}

func (l *Link) accept() {
	for {
		down, err := l.ln.Accept()
		if err != nil {
			return
		}
		if !l.track(down) {
			return
		}
		go func() {
			l.wait() // a connection made during a cut gets nowhere until healed
			up, err := net.Dial("tcp", l.upstream)
			if err != nil {
				down.Close()
				return
			}
			if !l.track(up) {
				down.Close()
				return
			}
			go l.pipe(up, down)
			l.pipe(down, up)
		}()
	}
}

// pipe copies from src to dst, holding each chunk while the link is cut.
func (l *Link) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			l.wait()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
