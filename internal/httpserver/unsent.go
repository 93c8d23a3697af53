package httpserver

import "net"

// MaxUnsentBytes bounds the bytes of an answer the kernel holds for a
// connection beyond what is in flight to the client (TCP_NOTSENT_LOWAT,
// on Linux): a write blocks past it until the client takes some. Without
// it the kernel grows a connection's send buffer to megabytes (4 MiB by
// default; more on loopback, where segments are 64 KiB), and a hundred
// clients that read an answer slowly make the board produce hundreds of
// megabytes for them at once — a long list's pages read, encoded and
// queued in the kernel — instead of a page each when they are ready for
// it. What is in flight (the client's window) is not bounded by it, so a
// fast client over a long link is as fast as before.
const MaxUnsentBytes = 128 << 10

// unsentBoundListener sets MaxUnsentBytes on every connection it accepts.
type unsentBoundListener struct{ net.Listener }

func (l unsentBoundListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		// Best effort: a kernel without the option serves as before.
		boundUnsent(tcp, MaxUnsentBytes) //nolint:errcheck
	}
	return conn, nil
}
