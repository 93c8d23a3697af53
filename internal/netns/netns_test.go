package netns_test

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/corkboard/corkboard/internal/netns"
)

// A server inside a namespace answers on its IP from the host, and stops
// answering while the namespace is partitioned.
func TestPartition(t *testing.T) {
	ns, err := netns.Create()
	if err != nil {
		t.Fatalf("a network namespace needs root and iproute2: %v", err)
	}
	defer ns.Delete()
	// An HTTP server inside: python3's http.server, on every machine here.
	server := ns.Command("python3", "-m", "http.server", "--bind", ns.IP, "8642")
	server.Stdout, server.Stderr = io.Discard, io.Discard
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { server.Process.Kill(); server.Wait() }()
	client := &http.Client{Timeout: 500 * time.Millisecond}
	url := "http://" + net.JoinHostPort(ns.IP, "8642") + "/"
	get := func() error {
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for get() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the server inside never answered on %s", url)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := ns.Partition(); err != nil {
		t.Fatal(err)
	}
	if err := get(); err == nil {
		t.Fatal("the server inside answered through a partition")
	}
	if err := ns.Heal(); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for get() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the server inside did not answer after healing")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
