// Package netns runs a process on a network of its own, as if on another
// host: a Linux network namespace joined to this one by a veth pair, so
// that a test can partition it (Partition: the pair's link goes down, and
// every packet either way is dropped, as a cut cable drops them) without
// touching any other process. It needs root (CAP_NET_ADMIN) and the ip
// command (iproute2).
package netns

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os/exec"
	"strings"
	"sync/atomic"
)

// Namespace is a network namespace with one veth pair to the host: the
// host's end has HostIP, the namespace's end IP, on a /30 of their own.
// Inside, only HostIP is reachable (and the namespace's own loopback).
type Namespace struct {
	Name   string
	HostIP string
	IP     string
	// hostLink is the pair's end on the host: Partition sets it down.
	hostLink string
}

// subnets numbers the /30s this process hands out in 10.231.0.0/16.
var subnets atomic.Int32

// Create makes a namespace and its veth pair, both up.
func Create() (*Namespace, error) {
	var random [3]byte
	rand.Read(random[:])
	id := hex.EncodeToString(random[:])
	n := subnets.Add(1)
	ns := &Namespace{
		Name:     "corkboard-" + id,
		HostIP:   fmt.Sprintf("10.231.%d.%d", n/64, (n%64)*4+1),
		IP:       fmt.Sprintf("10.231.%d.%d", n/64, (n%64)*4+2),
		hostLink: "ckh" + id,
	}
	inner := "ckn" + id
	steps := [][]string{
		{"netns", "add", ns.Name},
		{"link", "add", ns.hostLink, "type", "veth", "peer", "name", inner},
		{"link", "set", inner, "netns", ns.Name},
		{"addr", "add", ns.HostIP + "/30", "dev", ns.hostLink},
		{"link", "set", ns.hostLink, "up"},
		{"netns", "exec", ns.Name, "ip", "addr", "add", ns.IP + "/30", "dev", inner},
		{"netns", "exec", ns.Name, "ip", "link", "set", inner, "up"},
		{"netns", "exec", ns.Name, "ip", "link", "set", "lo", "up"},
		// While the link is down its own route is gone, and the host
		// would send the namespace's packets on by its default route
		// (here a proxy answered them): this route, below the link's,
		// then drops them instead.
		{"route", "add", "blackhole", ns.subnet(), "metric", "4000"},
	}
	for _, step := range steps {
		if err := ip(step...); err != nil {
			ns.Delete()
			return nil, err
		}
	}
	return ns, nil
}

// Command is name run with args inside the namespace. ip netns exec execs
// it, so the process started is name's own.
func (ns *Namespace) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", ns.Name, name}, args...)...)
}

// Partition cuts the namespace off: its link goes down, and packets sent
// either way are dropped until Heal (the host's are refused at once, by
// the blackhole route). Connections stay open on both sides, as in a real
// partition; TCP retransmits what it sent, and delivers it if the
// partition heals before it gives up.
func (ns *Namespace) Partition() error { return ip("link", "set", ns.hostLink, "down") }

// Heal brings the link back up.
func (ns *Namespace) Heal() error { return ip("link", "set", ns.hostLink, "up") }

// Delete removes the namespace, and with it the veth pair and the
// blackhole route. Processes still running in it keep it until they exit.
func (ns *Namespace) Delete() error {
	ip("route", "del", "blackhole", ns.subnet(), "metric", "4000")
	ip("link", "del", ns.hostLink)
	return ip("netns", "del", ns.Name)
}

// subnet is the pair's /30.
func (ns *Namespace) subnet() string {
	last := strings.LastIndex(ns.HostIP, ".")
	var host int
	fmt.Sscan(ns.HostIP[last+1:], &host)
	return fmt.Sprintf("%s.%d/30", ns.HostIP[:last], host-1)
}

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
