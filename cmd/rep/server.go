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

// serverShutdownTimeout bounds how long the rep's server waits for
// requests in flight once the agent is done.
const serverShutdownTimeout = 5 * time.Second

// httpServer is an ifrit runner serving the rep's API on a listener that
// is already open.
type httpServer struct {
	logger   lager.Logger
	listener net.Listener
	url      string
	handler  http.Handler
}

func (s *httpServer) Run(signals <-chan os.Signal, ready chan<- struct{}) error {
	server := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- server.Serve(s.listener) }()
	// Scripts and tests wait for this line and read the URL from it.
	s.logger.Info("listening", lager.Data{"url": s.url})
	close(ready)

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-signals:
		ctx, cancel := context.WithTimeout(context.Background(), serverShutdownTimeout)
		defer cancel()
		if err := server.Shutdown(ctx); err != nil {
			return fmt.Errorf("drain in-flight requests: %w", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve: %w", err)
		}
		return nil
	}
}
