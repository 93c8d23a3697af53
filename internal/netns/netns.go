// Package netns runs a process on a network of its own, as if on another
// host: a Linux network namespace joined to this one by a veth pair, so
// that a test can partition it (Partition: the pair's link goes down, and
// every packet either way is dropped, as a cut cable drops them) without
// touching any other process. It needs root (CAP_NET_ADMIN), the ip
// command (iproute2) and nsenter (util-linux).
//
// This host is the namespaces' router: each routes the namespaces' block
// (10.231.0.0/16) through its host end, so with forwarding on
// (EnableForwarding) a process in one namespace reaches another
// namespace's IP, as hosts on one network reach each other, and a
// partitioned namespace is cut off from all of them. Nothing else is
// routed: a name lookup inside fails at once instead of waiting on a
// resolver it cannot reach.
package netns

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Namespace is a network namespace with one veth pair to the host: the
// host's end has HostIP, the namespace's end IP, on a /30 of their own.
// Inside, HostIP is reachable, and with forwarding on the other
// namespaces' IPs too; the namespace's loopback is its own.
type Namespace struct {
	Name   string
	HostIP string
	IP     string
	// hostLink is the pair's end on the host: Partition sets it down.
	hostLink string
	// subnetNo is the number of its /30 (claimSubnet).
	subnetNo int
}

// block is the namespaces' addresses, 16,384 /30s.
const block = "10.231.0.0/16"

// claims is where the /30s in use on this machine are claimed, one file
// each, named by the /30's number: test processes that run at the same
// time (go test runs packages side by side) must not hand out the same
// addresses, so a /30 is taken by creating its file, which fails when
// another process holds it, and given back by Delete.
var claims = "/run/corkboard-netns"

// claimSubnet claims a free /30 of block for the namespace named name
// and returns its number, 1 to 16,383 (0 would hold the block's network
// address). It looks from a random number on, so that processes starting
// together rarely try the same files.
func claimSubnet(name string) (int, error) {
	if err := os.MkdirAll(claims, 0o755); err != nil {
		return 0, err
	}
	var b [2]byte
	rand.Read(b[:])
	start := int(binary.BigEndian.Uint16(b[:]))
	for i := range 16383 {
		n := 1 + (start+i)%16383
		f, err := os.OpenFile(filepath.Join(claims, strconv.Itoa(n)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		_, err = f.WriteString(name + "\n")
		f.Close()
		return n, err
	}
	return 0, fmt.Errorf("every /30 of %s is claimed: see %s", block, claims)
}

// Create makes a namespace and its veth pair, both up.
func Create() (*Namespace, error) {
	var random [3]byte
	rand.Read(random[:])
	id := hex.EncodeToString(random[:])
	n, err := claimSubnet("corkboard-" + id)
	if err != nil {
		return nil, err
	}
	ns := &Namespace{
		Name:     "corkboard-" + id,
		HostIP:   fmt.Sprintf("10.231.%d.%d", n/64, (n%64)*4+1),
		IP:       fmt.Sprintf("10.231.%d.%d", n/64, (n%64)*4+2),
		hostLink: "ckh" + id,
		subnetNo: n,
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
		{"netns", "exec", ns.Name, "ip", "route", "add", block, "via", ns.HostIP},
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

// Command is name run with args inside the namespace. nsenter enters the
// network namespace only and execs name, so the process started is name's
// own and sees this host's file systems (ip netns exec would give it a
// mount namespace of its own with a fresh /sys, without the cgroup file
// systems a rep reads its instances' memory from).
func (ns *Namespace) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=/run/netns/" + ns.Name, "--", name}, args...)...)
}

// forwardingPath is the switch of this host's IPv4 forwarding.
const forwardingPath = "/proc/sys/net/ipv4/ip_forward"

// EnableForwarding turns this host's IPv4 forwarding on, so namespaces
// reach each other through it, and returns what turns it back to what it
// was — unless a namespace, this process's or another's, still holds a
// /30 then: its processes may still need the forwarding.
func EnableForwarding() (restore func() error, err error) {
	was, err := os.ReadFile(forwardingPath)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(forwardingPath, []byte("1\n"), 0o644); err != nil {
		return nil, fmt.Errorf("turning IPv4 forwarding on: %w", err)
	}
	return func() error {
		if held, _ := os.ReadDir(claims); len(held) > 0 {
			return nil
		}
		return os.WriteFile(forwardingPath, was, 0o644)
	}, nil
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
	err := ip("netns", "del", ns.Name)
	os.Remove(filepath.Join(claims, strconv.Itoa(ns.subnetNo)))
	return err
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
