package executor

import (
	"fmt"
	"net"
	"strconv"
	"sync"
)

// portAllocator hands out host ports from an inclusive range. It skips
// ports it already handed out and ports some other process listens on, and
// it goes round the range instead of handing a just-freed port straight
// back out, so a router still holding an old route does not reach a new
// instance by accident.
type portAllocator struct {
	min, max uint32

	mu    sync.Mutex
	next  uint32
	inUse map[uint32]bool
}

func newPortAllocator(min, max uint32) (*portAllocator, error) {
	if min < 1 || min > 65535 {
		return nil, fmt.Errorf("ExecutorConfig.PortMin must be 1-65535, got %d", min)
	}
	if max < min || max > 65535 {
		return nil, fmt.Errorf("ExecutorConfig.PortMax must be %d-65535 (at least PortMin), got %d", min, max)
	}
	return &portAllocator{min: min, max: max, next: min, inUse: map[uint32]bool{}}, nil
}

// allocate returns n free ports, or an error saying why there are not
// that many.
func (p *portAllocator) allocate(n int) ([]uint32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n == 0 {
		return nil, nil
	}
	size := p.max - p.min + 1
	var ports []uint32
	taken := 0
	port := p.next
	for range size {
		candidate := port
		port++
		if port > p.max {
			port = p.min
		}
		if p.inUse[candidate] {
			continue
		}
		if !canListen(candidate) {
			taken++
			continue
		}
		ports = append(ports, candidate)
		if len(ports) == n {
			break
		}
	}
	if len(ports) < n {
		return nil, fmt.Errorf("port range %d-%d exhausted: need %s, found %d (%d held by instances, %d in use by other processes)",
			p.min, p.max, freePorts(n), len(ports), len(p.inUse), taken)
	}
	for _, got := range ports {
		p.inUse[got] = true
	}
	p.next = port
	return ports, nil
}

func (p *portAllocator) release(ports []uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, port := range ports {
		delete(p.inUse, port)
	}
}

// canListen reports whether nothing listens on port, on any address: an
// instance listens on all of them.
func canListen(port uint32) bool {
	l, err := net.Listen("tcp", ":"+strconv.FormatUint(uint64(port), 10))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func freePorts(n int) string {
	if n == 1 {
		return "1 free port"
	}
	return fmt.Sprintf("%d free ports", n)
}
