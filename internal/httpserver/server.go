// Package httpserver runs an HTTP server as an ifrit process, as the board
// and the rep both do: it says where it listens, and on a signal drains the
// requests in flight before it exits.
package httpserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"code.cloudfoundry.org/lager/v3"
)

// Server is an ifrit runner serving plain HTTP. On a signal it stops
// accepting connections and waits up to ShutdownTimeout for the requests
// in flight to finish (http.Server.Shutdown), so a SIGTERM loses no answer.
type Server struct {
	Logger lager.Logger
	// Address is listened on when Run starts, unless Listener is set.
	Address string
	// Listener, when set, is an open listener to serve on (a caller that
	// needs the chosen port before it starts the server).
	Listener net.Listener
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
}

func (s *Server) Run(signals <-chan os.Signal, ready chan<- struct{}) error {
	listener := s.Listener
	if listener == nil {
		var err error
		if listener, err = net.Listen("tcp", s.Address); err != nil {
			return fmt.Errorf("listen on %s: %w", s.Address, err)
		}
	}
	server := &http.Server{
		Handler:           s.Handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
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
		url = "http://" + listener.Addr().String()
	}
	s.Logger.Info("listening", lager.Data{"url": url})
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
