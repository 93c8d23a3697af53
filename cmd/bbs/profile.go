//go:build profile

package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
)

// A board built with -tags profile serves Go's profiles on
// CORKBOARD_PPROF_ADDRESS (a loopback host:port) when that is set, for
// docs/perf-writes.md's measurements: go tool pprof
// http://ADDRESS/debug/pprof/profile?seconds=10. The board of a release
// build has no such listener.
func init() {
	address := os.Getenv("CORKBOARD_PPROF_ADDRESS")
	if address == "" {
		return
	}
	// Profiles show the board's memory: never on an address another host
	// reaches.
	if host, _, err := net.SplitHostPort(address); err != nil || !net.ParseIP(host).IsLoopback() {
		fmt.Fprintln(os.Stderr, "bbs: CORKBOARD_PPROF_ADDRESS must be a loopback IP and port, not", address)
		os.Exit(2)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	go func() {
		if err := http.ListenAndServe(address, mux); err != nil {
			fmt.Fprintln(os.Stderr, "bbs: profile listener:", err)
		}
	}()
}
