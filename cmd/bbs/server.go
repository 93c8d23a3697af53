package main

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

// httpServer is an ifrit runner serving plain HTTP. On a signal it stops
// accepting connections and waits up to shutdownTimeout for the requests
// in flight to finish (http.Server.Shutdown), so a SIGTERM loses no answer.
type httpServer struct {
	logger          lager.Logger
	address         string
	handler         http.Handler
	shutdownTimeout time.Duration
	// announce, when set, is told the URL once the server listens.
	announce func(url string)
	// onShutdown, when set, runs as draining begins, to end long-lived
	// responses (event streams) that would otherwise hold it up.
	onShutdown func()
}

func (s *httpServer) Run(signals <-chan os.Signal, ready chan<- struct{}) error {
	listener, err := net.Listen("tcp", s.address)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.address, err)
	}
	server := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	if s.onShutdown != nil {
		server.RegisterOnShutdown(s.onShutdown)
	}
	served := make(chan error, 1)
	go func() { served <- server.Serve(listener) }()

	// Scripts wait for this line and read the URL from it; with port 0 it
	// is the only place the chosen port shows.
	url := "http://" + listener.Addr().String()
	s.logger.Info("listening", lager.Data{"url": url})
	if s.announce != nil {
		s.announce(url)
	}
	close(ready)

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case sig := <-signals:
		s.logger.Info("draining", lager.Data{"signal": sig.String(), "timeout": s.shutdownTimeout.String()})
		ctx, cancel := context.WithTimeout(context.Background(), s.shutdownTimeout)
		defer cancel()
		if err := server.Shutdown(ctx); err != nil {
			return fmt.Errorf("drain in-flight requests: %w", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve: %w", err)
		}
		s.logger.Info("drained")
		return nil
	}
}
