package netns

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// Processes that make namespaces at the same time never get the same /30:
// a /30 whose claim file exists is skipped, whoever made it, and every
// claim made at once is a different one.
func TestClaimSubnetSkipsClaimed(t *testing.T) {
	claims = t.TempDir()
	defer func() { claims = "/run/corkboard-netns" }()
	for n := 1; n <= 16383; n++ {
		if n == 4242 {
			continue
		}
		if err := os.WriteFile(filepath.Join(claims, strconv.Itoa(n)), []byte("another process\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n, err := claimSubnet("mine")
	if err != nil || n != 4242 {
		t.Fatalf("claimSubnet = %d, %v; want the one free /30, 4242", n, err)
	}
	if _, err := claimSubnet("another"); err == nil {
		t.Fatal("claimSubnet found a /30 when every one was claimed")
	}
}

func TestClaimSubnetAtOnce(t *testing.T) {
	claims = t.TempDir()
	defer func() { claims = "/run/corkboard-netns" }()
	var mu sync.Mutex
	got := map[int]int{}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				n, err := claimSubnet("g" + strconv.Itoa(g))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got[n]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(got) != 400 {
		t.Fatalf("400 claims at once gave %d distinct /30s", len(got))
	}
}

// A namespace's /30 is claimed while it exists and given back by Delete.
func TestDeleteGivesBackItsSubnet(t *testing.T) {
	ns, err := Create()
	if err != nil {
		t.Fatalf("a network namespace needs root and iproute2: %v", err)
	}
	claim := filepath.Join(claims, strconv.Itoa(ns.subnetNo))
	if b, err := os.ReadFile(claim); err != nil || string(b) != ns.Name+"\n" {
		t.Fatalf("claim %s = %q, %v; want the namespace's name", claim, b, err)
	}
	if err := ns.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(claim); !os.IsNotExist(err) {
		t.Fatalf("claim %s is still there after Delete: %v", claim, err)
	}
}
