package isolation

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
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

// DefaultUIDClaimDir is where reps claim the instance uids they hand out,
// one lock file per uid: /run, so every rep of a host sees the same files
// and a reboot clears them.
const DefaultUIDClaimDir = "/run/corkboard/instance-uids"

// UIDPool hands out the ids of a range, one per running instance. It is
// safe for concurrent use.
//
// A uid must be one instance's on the whole host, not only among this
// rep's: two reps on one host (their ranges the default, or overlapping)
// that both handed out the same uid gave two instances one RLIMIT_NPROC
// between them, so that one instance's threads stopped the other's
// forks, and one file owner. So with a claim dir, a uid is handed out
// only once this pool holds an exclusive lock (flock) on its file there,
// which it keeps until the uid is released: another rep skips a uid whose
// file is locked, and a rep that dies lets go of its locks with its open
// files.
//
// Worked example, reps A and B on one host, both with uids 5000-5002:
//  1. A hands out 5000 (locks 5000), then 5001.
//  2. B's first Allocate tries 5000 and 5001 (locked by A) and hands out
//     5002.
//  3. B's next Allocate finds every uid locked or its own: all 3 in use.
//  4. A releases 5000 (closes its lock file); B's next Allocate gets it.
type UIDPool struct {
	r UIDRange
	// claimDir holds the lock files; "" claims nothing beyond this pool.
	claimDir string

	mu sync.Mutex
	// used holds each id handed out, with its claim (nil without a
	// claim dir).
	used map[uint32]*os.File
	next uint32 // offset where the search for a free id starts
}

// errClaimed says another pool (another rep) holds the uid.
var errClaimed = errors.New("claimed by another rep")

// NewUIDPool makes a pool over a valid range, claiming its uids in
// claimDir (made at the first claim: only a rep that isolates, as root,
// claims) unless it is "".
func NewUIDPool(r UIDRange, claimDir string) (*UIDPool, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &UIDPool{r: r, claimDir: claimDir, used: map[uint32]*os.File{}}, nil
}

// Allocate takes a free id. It goes round the range rather than reusing
// the id just freed at once, so an id is reused as late as possible.
func (p *UIDPool) Allocate() (uint32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := uint32(0); i < p.r.Count; i++ {
		offset := (p.next + i) % p.r.Count
		id := p.r.First + offset
		if _, mine := p.used[id]; mine {
			continue
		}
		claim, err := p.claim(id)
		if errors.Is(err, errClaimed) {
			continue
		}
		if err != nil {
			return 0, err
		}
		p.used[id] = claim
		p.next = (offset + 1) % p.r.Count
		return id, nil
	}
	return 0, fmt.Errorf("all %d instance uids (%d-%d) are in use, by this rep or another on the host", p.r.Count, p.r.First, p.r.First+p.r.Count-1)
}

// claim locks id's file in the claim dir, or says errClaimed when another
// holds it.
func (p *UIDPool) claim(id uint32) (*os.File, error) {
	if p.claimDir == "" {
		return nil, nil
	}
	if err := os.MkdirAll(p.claimDir, 0o700); err != nil {
		return nil, fmt.Errorf("claiming uid %d: %w", id, err)
	}
	f, err := os.OpenFile(filepath.Join(p.claimDir, strconv.FormatUint(uint64(id), 10)), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("claiming uid %d: %w", id, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errClaimed
		}
		return nil, fmt.Errorf("claiming uid %d: %w", id, err)
	}
	return f, nil
}

// Release gives an id back, and its claim; an id the pool did not hand
// out is ignored.
func (p *UIDPool) Release(id uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if claim := p.used[id]; claim != nil {
		claim.Close()
	}
	delete(p.used, id)
}

// InUse is how many ids are handed out.
func (p *UIDPool) InUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.used)
}
