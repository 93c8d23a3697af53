package isolation

import (
	"errors"
	"fmt"
	"sync"
)

// Default instance uid range: far above the ids distributions hand to
// people and system services (below 65536) and to the subordinate ids
// useradd gives rootless containers (from 100000, 65536 per user, so the
// first user's end at 165535), and a full 16-bit block wide, so a cell
// never runs short.
const (
	DefaultUIDFirst = 200000
	DefaultUIDCount = 65536
)

// UIDRange is the uids (and gids, the same numbers) instances run as:
// First, First+1, ..., First+Count-1.
type UIDRange struct {
	// First is the lowest uid of the range; at least 1000.
	First uint32 `json:"first"`
	// Count is how many uids the range holds, one per running isolated
	// instance.
	Count uint32 `json:"count"`
}

// Validate refuses a range that holds root or any id below 1000 (system
// users), that is empty, or that runs past the largest usable id
// (4294967294: 4294967295 is (uid_t)-1, "no change" to setresuid).
func (r UIDRange) Validate() error {
	switch {
	case r.Count == 0:
		return errors.New("count must be at least 1")
	case r.First < 1000:
		return fmt.Errorf("first must be at least 1000 (ids below are root and system users), got %d", r.First)
	case uint64(r.First)+uint64(r.Count)-1 > 4294967294:
		return fmt.Errorf("first %d + count %d runs past the largest uid 4294967294", r.First, r.Count)
	}
	return nil
}

// UIDPool hands out the ids of a range, one per running instance. It is
// safe for concurrent use.
type UIDPool struct {
	r UIDRange

	mu   sync.Mutex
	used map[uint32]bool
	next uint32 // offset where the search for a free id starts
}

// NewUIDPool makes a pool over a valid range.
func NewUIDPool(r UIDRange) (*UIDPool, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &UIDPool{r: r, used: map[uint32]bool{}}, nil
}

// Allocate takes a free id. It goes round the range rather than reusing
// the id just freed at once, so an id is reused as late as possible.
func (p *UIDPool) Allocate() (uint32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := uint32(0); i < p.r.Count; i++ {
		offset := (p.next + i) % p.r.Count
		id := p.r.First + offset
		if !p.used[id] {
			p.used[id] = true
			p.next = (offset + 1) % p.r.Count
			return id, nil
		}
	}
	return 0, fmt.Errorf("all %d instance uids (%d-%d) are in use", p.r.Count, p.r.First, p.r.First+p.r.Count-1)
}

// Release gives an id back; an id the pool did not hand out is ignored.
func (p *UIDPool) Release(id uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.used, id)
}

// InUse is how many ids are handed out.
func (p *UIDPool) InUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.used)
}
