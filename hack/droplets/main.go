// Command droplets builds the droplets of the hello app and serves them,
// for `make run` (hack/run.sh) and by hand.
//
//	droplets build -out DIR -base-url URL
//	droplets serve -dir DIR [-listen 127.0.0.1:8890]
//
// build compiles fixtures/apps/hello three times, with the versions v1, v2
// and v3 built in, and packs each as DIR/hello-<version>.tgz: a gzip'd tar
// with one executable entry, hello (internal/droplet; deterministic, so a
// rebuild gives the same bytes). Then it renders every *.json of
// fixtures/lrps into DIR/lrps/ with text/template, where the droplet specs
// (hello.json, hello-v2-definition.json, hello-v3-definition.json,
// hello-port-9090-definition.json) use two placeholders:
//
//	{{asset_url "hello-v1.tgz"}}     URL + "/" + the file name
//	{{asset_sha256 "hello-v1.tgz"}}  the file's hex SHA-256
//
// A file name that was not built fails the render; a spec without
// placeholders is copied unchanged. URL is where DIR will be served:
// http://127.0.0.1:8890 for `droplets serve`, or file:///abs/DIR when
// the cells can read DIR themselves and their reps' file_asset_dirs
// name it.
//
// serve serves DIR over plain HTTP on a loopback address until SIGINT or
// SIGTERM, logging each request (address, method, path, status, size,
// time) to stderr. Its first line says "droplets: serving DIR at URL".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/corkboard/corkboard/internal/droplet"
)

const modulePath = "github.com/corkboard/corkboard"

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds | log.LUTC)
	log.SetPrefix("droplets: ")
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = build(os.Args[2:])
	case "serve":
		err = serve(os.Args[2:])
	case "-h", "-help", "--help", "help":
		usage()
		return
	default:
		fmt.Fprintf(os.Stderr, "droplets: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err != nil {
		log.Printf("error: %v", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  droplets build -out DIR -base-url URL [-specs DIR]
  droplets serve -dir DIR [-listen 127.0.0.1:8890]
`)
}

func build(args []string) error {
	flags := flag.NewFlagSet("droplets build", flag.ExitOnError)
	out := flags.String("out", "", "directory for hello-v1.tgz .. hello-v3.tgz and lrps/ (required)")
	baseURL := flags.String("base-url", "", "URL the -out directory is served at, e.g. http://127.0.0.1:8890 (required)")
	specs := flags.String("specs", "", "directory of spec templates (default: fixtures/lrps of the module)")
	_ = flags.Parse(args)
	if *out == "" || *baseURL == "" {
		return errors.New("build needs -out and -base-url")
	}
	if flags.NArg() > 0 {
		return fmt.Errorf("build takes no arguments, got %q", flags.Args())
	}

	root, err := moduleRoot()
	if err != nil {
		return err
	}
	if *specs == "" {
		*specs = filepath.Join(root, "fixtures", "lrps")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	sums, err := droplet.BuildAll(ctx, root, *out, droplet.Versions)
	if err != nil {
		return err
	}
	for _, v := range droplet.Versions {
		name := droplet.FileName(v)
		info, err := os.Stat(filepath.Join(*out, name))
		if err != nil {
			return err
		}
		log.Printf("built %s (%s, %d bytes, sha256 %s)", filepath.Join(*out, name), v, info.Size(), sums[name])
	}
	written, err := droplet.RenderDir(*specs, filepath.Join(*out, "lrps"), *baseURL, sums)
	if err != nil {
		return err
	}
	log.Printf("rendered %d specs from %s into %s for %s: %s",
		len(written), *specs, filepath.Join(*out, "lrps"), *baseURL, strings.Join(written, ", "))
	log.Printf("done in %s", time.Since(start).Round(time.Millisecond))
	return nil
}

func serve(args []string) error {
	flags := flag.NewFlagSet("droplets serve", flag.ExitOnError)
	dir := flags.String("dir", "", "directory to serve (required)")
	listen := flags.String("listen", "127.0.0.1:8890", "loopback host:port to listen on")
	_ = flags.Parse(args)
	if *dir == "" {
		return errors.New("serve needs -dir")
	}
	if flags.NArg() > 0 {
		return fmt.Errorf("serve takes no arguments, got %q", flags.Args())
	}
	if info, err := os.Stat(*dir); err != nil {
		return err
	} else if !info.IsDir() {
		return fmt.Errorf("%s is not a directory", *dir)
	}
	if err := requireLoopback(*listen); err != nil {
		return err
	}

	files := droplet.NewServer(*dir)
	files.Logf = log.Printf
	listener, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	server := &http.Server{Handler: files, ReadHeaderTimeout: 10 * time.Second}
	log.Printf("serving %s at http://%s", *dir, listener.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- server.Serve(listener) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	log.Printf("stopping")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return server.Shutdown(shutdownCtx)
}

// requireLoopback refuses to serve beyond this machine: this is a dev
// tool with no authentication, like the board in -dev mode.
func requireLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-listen %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("-listen %q: only loopback addresses (127.0.0.1, ::1, localhost)", addr)
}

// moduleRoot finds this module's root from the working directory upward,
// so the command works from any folder of the checkout.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if mod, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && declares(string(mod), modulePath) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("not inside the %s module (no go.mod naming it above the working directory)", modulePath)
		}
		dir = parent
	}
}

// declares reports whether a go.mod names module path.
func declares(goMod, path string) bool {
	for _, line := range strings.Split(goMod, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 2 && fields[0] == "module" && strings.Trim(fields[1], `"`) == path {
			return true
		}
	}
	return false
}
