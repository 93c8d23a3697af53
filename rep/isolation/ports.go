package isolation

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// PortRange is an inclusive range of TCP ports; the zero range is
// unknown.
type PortRange struct {
	First, Last uint32
}

func (r PortRange) known() bool { return r.First != 0 && r.First <= r.Last }

func (r PortRange) overlaps(o PortRange) bool {
	return r.First <= o.Last && o.First <= r.Last
}

// BindablePorts decides which TCP ports an isolated instance may bind.
// Instances share the host's network, so a port one instance listens on
// is a port no other can have; the ports a rep hands out are its cell's
// range, and an instance that could listen on any of them could hold
// another instance's next port, and answer that instance's health check
// and its router's traffic. So:
//
//  1. An instance may bind each host port it was given.
//  2. It may bind port 0 (a port the kernel picks, from its ephemeral
//     range) only when the kernel's ephemeral range is known and lies
//     wholly outside the cell's range: then such a port can never be one
//     the rep hands out.
//  3. Nothing else.
//
// The result is sorted, without repeats.
//
// Worked example: a cell handing out 61000-61099, the kernel's ephemeral
// range 32768-60999 (Linux's default).
//   - An instance given 61004 and 61005 may bind 0, 61004 and 61005: a
//     test server on port 0 gets a port below 61000, outside the cell's.
//   - With the ephemeral range set to 32768-65535, the same instance may
//     bind 61004 and 61005 only: port 0 could land on 61006, the next
//     instance's port.
//   - An instance given no ports may bind port 0 only (or nothing at all,
//     in the second case).
func BindablePorts(own []uint32, cell, ephemeral PortRange) []uint32 {
	var ports []uint32
	if cell.known() && ephemeral.known() && !cell.overlaps(ephemeral) {
		ports = append(ports, 0)
	}
	for _, p := range own {
		if p != 0 {
			ports = append(ports, p)
		}
	}
	slices.Sort(ports)
	return slices.Compact(ports)
}

// ephemeralPortsFile holds the kernel's ephemeral port range, for IPv4
// and IPv6 alike.
const ephemeralPortsFile = "/proc/sys/net/ipv4/ip_local_port_range"

// readEphemeralPorts reads the kernel's ephemeral port range as it is
// now; the zero range, unknown, when it cannot.
func readEphemeralPorts(file string) PortRange {
	data, err := os.ReadFile(file)
	if err != nil {
		return PortRange{}
	}
	r, err := parsePortRange(string(data))
	if err != nil {
		return PortRange{}
	}
	return r
}

// parsePortRange reads "first last" (whitespace between), as the kernel
// writes ip_local_port_range.
func parsePortRange(text string) (PortRange, error) {
	fields := strings.Fields(text)
	if len(fields) != 2 {
		return PortRange{}, fmt.Errorf("want two ports, got %q", text)
	}
	var bounds [2]uint32
	for i, f := range fields {
		n, err := strconv.ParseUint(f, 10, 16)
		if err != nil || n == 0 {
			return PortRange{}, fmt.Errorf("%q is not a port", f)
		}
		bounds[i] = uint32(n)
	}
	return PortRange{First: bounds[0], Last: bounds[1]}, nil
}
