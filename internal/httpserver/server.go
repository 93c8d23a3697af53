// Package httpserver runs an HTTP server as an ifrit process, as the board
// and the rep both do: it says where it listens, serves TLS when given a
// config, bounds how long a client may take over each part of a request,
// and on a signal drains the requests in flight before it exits.
package httpserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"code.cloudfoundry.org/lager/v3"
)

// The limits every server has unless its Server says otherwise. They bound
// what a slow or stalled client can hold: a connection, a goroutine and
// its buffers.
const (
	// DefaultReadHeaderTimeout bounds the request line and headers (and
	// the TLS handshake, which net/http bounds by the shortest timeout).
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds the whole request, body included, from its
	// first byte: a client trickling a body is cut off here. net/http
	// lifts the deadline once the body has been read (it then reads in
	// the background only to notice a client that goes away), so it does
	// not end a long answer such as an event stream; a spec holds it to
	// that.
	DefaultReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds the answer, from the end of the headers
	// to its last byte, so a client that stops reading is let go. Event
	// streams outlive it: their handler moves the deadline forward at
	// every write (handlers/events.go sets each flush's deadline), so
	// only a stalled subscriber is cut.
	DefaultWriteTimeout = 2 * time.Minute
	// DefaultIdleTimeout is how long a kept-alive connection may wait for
	// its next request.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxHeaderBytes bounds the request line and headers to 16 KiB
	// on the wire: net/http reads 4 KiB past MaxHeaderBytes before it
	// answers 431, so the value here is 12 KiB. Request bodies have their
	// own limit in the handlers. The API's callers send a few hundred
	// bytes of headers (no cookies: certificates say who calls); every
	// connection still sending its headers may hold this much, and 5,000
	// of them at 64 KiB took a board to 640 MB.
	DefaultMaxHeaderBytes = 16<<10 - 4096
)

// Server is an ifrit runner serving HTTP, or HTTPS when TLSConfig is set.
// On a signal it stops accepting connections and waits up to
// ShutdownTimeout for the requests in flight to finish
// (http.Server.Shutdown), so a SIGTERM loses no answer.
type Server struct {
	Logger lager.Logger
	// Address is listened on when Run starts, unless Listener is set.
	Address string
	// Listener, when set, is an open listener to serve on (a caller that
	// needs the chosen port before it starts the server).
	Listener net.Listener
	// TLSConfig, when set, makes the server serve TLS with it (see
	// internal/certs.ServerConfig, which requires client certificates).
	TLSConfig *tls.Config
	// PlainHTTP, when set with TLSConfig, is the body (HTML) of the 400
	// that answers a plain HTTP request on the TLS listener, given the
	// request's Host (plain.go); unset, net/http's one line answers.
	PlainHTTP func(host string) []byte
	// URL, when set, is the URL logged and announced instead of the
	// listener's own address.
	URL             string
	Handler         http.Handler
	ShutdownTimeout time.Duration
	// Announce, when set, is told the URL once the server listens.
	Announce func(url string)
	// OnShutdown, when set, runs as draining begins, to end long-lived
	// responses (event streams) that would otherwise hold it up.
	OnShutdown func()

	// Connections, when set, caps the connections open at once, in all
	// and from one address (connections.go).
	Connections *ConnectionLimits

	// The limits; 0 takes the Default above.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
}

func (s *Server) Run(signals <-chan os.Signal, ready chan<- struct{}) error {
	listener := s.Listener
	if listener == nil {
		var err error
		if listener, err = net.Listen("tcp", s.Address); err != nil {
			return fmt.Errorf("listen on %s: %w", s.Address, err)
		}
	}
	listener = unsentBoundListener{listener}
	if s.Connections != nil {
		listener = limitedListener{Listener: listener, limits: s.Connections}
	}
	scheme := "http"
	if s.TLSConfig != nil {
		// The handshake happens in the server's connection goroutine,
		// under its timeouts, not in Accept.
		if s.PlainHTTP != nil {
			listener = plainHTTPListener{Listener: listener, page: s.PlainHTTP}
		}
		listener = tls.NewListener(listener, s.TLSConfig)
		scheme = "https"
	}
	server := &http.Server{
		Handler:           s.Handler,
		ReadHeaderTimeout: orDefault(s.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		ReadTimeout:       orDefault(s.ReadTimeout, DefaultReadTimeout),
		WriteTimeout:      orDefault(s.WriteTimeout, DefaultWriteTimeout),
		IdleTimeout:       orDefault(s.IdleTimeout, DefaultIdleTimeout),
		MaxHeaderBytes:    s.MaxHeaderBytes,
		// Failed handshakes and the like go to the component's log, not
		// to stderr.
		ErrorLog: log.New(&errorLogWriter{logger: s.Logger}, "", 0),
	}
	if server.MaxHeaderBytes <= 0 {
		server.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if s.OnShutdown != nil {
		server.RegisterOnShutdown(s.OnShutdown)
	}
	served := make(chan error, 1)
	go func() { served <- server.Serve(listener) }()

	// Scripts wait for this line and read the URL from it; with port 0 it
	// is the only place the chosen port shows.
	url := s.URL
	if url == "" {
		url = scheme + "://" + listener.Addr().String()
	}
	s.Logger.Info("listening", lager.Data{"url": url, "tls": s.TLSConfig != nil})
	if s.Announce != nil {
		s.Announce(url)
	}
	close(ready)

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case sig := <-signals:
		s.Logger.Info("draining", lager.Data{"signal": sig.String(), "timeout": s.ShutdownTimeout.String()})
		ctx, cancel := context.WithTimeout(context.Background(), s.ShutdownTimeout)
		defer cancel()
		if err := server.Shutdown(ctx); err != nil {
			return fmt.Errorf("drain in-flight requests: %w", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve: %w", err)
		}
		s.Logger.Info("drained")
		return nil
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// errorLogWriter puts net/http's own error lines (failed TLS handshakes,
// panics in handlers) into the component's log.
type errorLogWriter struct{ logger lager.Logger }

func (w *errorLogWriter) Write(p []byte) (int, error) {
	w.logger.Info("http-server-error", lager.Data{"error": strings.TrimSpace(string(p))})
	return len(p), nil
}
