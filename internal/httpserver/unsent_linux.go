package httpserver

import (
	"net"

	"golang.org/x/sys/unix"
)

// boundUnsent sets TCP_NOTSENT_LOWAT on conn.
func boundUnsent(conn *net.TCPConn, bytes int) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var setErr error
	if err := raw.Control(func(fd uintptr) {
		setErr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, bytes)
	}); err != nil {
		return err
	}
	return setErr
}

// unsentBound reads TCP_NOTSENT_LOWAT off conn, for the tests.
func unsentBound(conn *net.TCPConn) (int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0, err
	}
	var value int
	var getErr error
	if err := raw.Control(func(fd uintptr) {
		value, getErr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT)
	}); err != nil {
		return 0, err
	}
	return value, getErr
}
