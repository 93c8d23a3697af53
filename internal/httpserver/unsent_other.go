//go:build !linux

package httpserver

import (
	"errors"
	"net"
)

var errUnsupported = errors.New("TCP_NOTSENT_LOWAT: not supported on this system")

func boundUnsent(*net.TCPConn, int) error { return errUnsupported }

func unsentBound(*net.TCPConn) (int, error) { return 0, errUnsupported }
