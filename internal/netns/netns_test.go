package netns_test

import (
	"io"
	"net"
	"net/http"
	"os"
	"strings"
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
	serve(t, ns, "8642")
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
	answers(t, get, "the server inside on "+url)
	if err := ns.Partition(); err != nil {
		t.Fatal(err)
	}
	if err := get(); err == nil {
		t.Fatal("the server inside answered through a partition")
	}
	if err := ns.Heal(); err != nil {
		t.Fatal(err)
	}
	answers(t, get, "the server inside, after healing,")
}

// A process started by Command is on the namespace's network and in this
// process's mount namespace (it sees this host's /sys, cgroups included).
func TestCommandSharesMounts(t *testing.T) {
	ns, err := netns.Create()
	if err != nil {
		t.Fatalf("a network namespace needs root and iproute2: %v", err)
	}
	defer ns.Delete()
	inside := func(kind string) string {
		out, err := ns.Command("readlink", "/proc/self/ns/"+kind).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	here := func(kind string) string {
		link, err := os.Readlink("/proc/self/ns/" + kind)
		if err != nil {
			t.Fatal(err)
		}
		return link
	}
	if inside("mnt") != here("mnt") {
		t.Errorf("the process inside has a mount namespace of its own: %s, here %s", inside("mnt"), here("mnt"))
	}
	if inside("net") == here("net") {
		t.Errorf("the process inside is on this host's network: %s", inside("net"))
	}
}

// With forwarding on, a process in one namespace reaches a server in
// another through this host, and not while the server's namespace is
// partitioned.
func TestNamespacesReachEachOther(t *testing.T) {
	restore, err := netns.EnableForwarding()
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	server, err := netns.Create()
	if err != nil {
		t.Fatalf("a network namespace needs root and iproute2: %v", err)
	}
	defer server.Delete()
	client, err := netns.Create()
	if err != nil {
		t.Fatal(err)
	}
	defer client.Delete()
	serve(t, server, "8643")
	url := "http://" + net.JoinHostPort(server.IP, "8643") + "/"
	get := func() error {
		return client.Command("python3", "-c",
			"import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)", url).Run()
	}
	answers(t, get, "the server in one namespace, to the other, on "+url)
	if err := server.Partition(); err != nil {
		t.Fatal(err)
	}
	if err := get(); err == nil {
		t.Fatal("the server answered the other namespace through a partition")
	}
}

// answers waits up to 10 s for get to succeed, and fails the test naming
// what never answered.
func answers(t *testing.T, get func() error, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for get() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("%s never answered", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// serve runs an HTTP server inside ns on its IP and port until the test
// ends: python3's http.server, on every machine here.
func serve(t *testing.T, ns *netns.Namespace, port string) {
	t.Helper()
	server := ns.Command("python3", "-m", "http.server", "--bind", ns.IP, port)
	server.Stdout, server.Stderr = io.Discard, io.Discard
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Process.Kill(); server.Wait() })
}
