package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/corkboard/corkboard/models"
)

// DefaultAssetCacheBytes is the default of ExecutorConfig.AssetCacheBytes.
const DefaultAssetCacheBytes = 1 << 30 // 1 GiB

// AssetCacheStats says what the cell's asset cache did since the executor
// started, and what it holds.
type AssetCacheStats struct {
	// Downloads counts fetches from an asset's URL, failed ones included.
	Downloads int64
	// Failures counts the downloads that failed: no answer, an HTTP
	// error, a checksum mismatch, or nobody waiting for it any more.
	Failures int64
	// Hits counts the assets starts got without a download of their own:
	// from the cache, or by waiting for another start's download of the
	// same checksum.
	Hits int64
	// Evictions counts entries removed to keep the cache within its
	// limit, least recently used first.
	Evictions int64
	// Bytes and Entries are what the cache keeps now. An asset larger
	// than the whole cache is not counted: it goes once its starts are
	// done with it.
	Bytes   int64
	Entries int
}

// assetProgressInterval is how often a start waiting for a download
// writes its progress into the instance's log.
const assetProgressInterval = time.Second

// checksumName is the name of a cached file: its hex SHA-256.
var checksumName = regexp.MustCompile(`^[0-9a-f]{64}$`)

// downloadSuffix marks a download in progress in the cache dir; it gets
// its checksum as a name only once its bytes are verified.
const downloadSuffix = ".download-"

// assetCache keeps verified downloads in one directory, one file per
// checksum, named by it. Archives are kept as downloaded; each start
// unpacks its own copy. An entry in use by a start is never evicted;
// the others go least recently used first once the total is past the
// limit.
type assetCache struct {
	dir    string
	limit  int64
	logger lager.Logger
	// ctx is the executor's: downloads end when it shuts down.
	ctx    context.Context
	client *http.Client
	// fileDirs are the directories file:// assets may be read from,
	// their links resolved.
	fileDirs []string

	mu       sync.Mutex
	entries  map[string]*cacheEntry    // by checksum
	inflight map[string]*assetDownload // by checksum
	useSeq   uint64                    // orders entries by last use
	stats    AssetCacheStats
	// gate holds downloads to max_asset_downloads_per_cell.
	gate downloadGate
}

// cacheEntry is one cached file. Its fields after path are guarded by
// assetCache.mu.
type cacheEntry struct {
	sum  string
	path string
	size int64

	lastUse uint64
	users   int
	// verified is false for a file an earlier rep left: its first use
	// hashes it again, since a crash or a full disk may have left it
	// other than its name says.
	verified bool
	// oversized: larger than the whole cache, so it is used and then
	// removed rather than kept.
	oversized bool
}

// assetDownload is one fetch of a checksum that any number of starts wait
// for. Its fields after total are guarded by assetCache.mu.
type assetDownload struct {
	url    string
	done   chan struct{}
	cancel context.CancelCauseFunc
	// received and total say how far it got; total is -1 when unknown.
	received atomic.Int64
	total    atomic.Int64

	waiters  int
	finished bool
	// fetched is false when the bytes came from a file an earlier rep
	// left in the cache rather than from the URL.
	fetched bool
	// entry is set on success, with one use per waiter that was still
	// waiting; err on failure.
	entry *cacheEntry
	err   error
}

// errNoWaiters ends a download that every start waiting for it gave up.
var errNoWaiters = errors.New("no start waits for it any more")

// openAssetCache makes dir, removes downloads an earlier rep left
// unfinished, and takes the files it left finished as entries to verify
// on their first use, the most recently used last, evicting the oldest
// if they are past the limit.
//
// Its downloads connect to no link-local or metadata address unless
// allowLinkLocal (see assetDialer).
//
// It reads file:// assets from under fileDirs only (openFileAsset); their
// symbolic links are resolved here, and one that does not resolve is an
// error.
func openAssetCache(ctx context.Context, dir string, limit int64, allowLinkLocal bool, fileDirs []string, logger lager.Logger) (*assetCache, error) {
	var resolvedDirs []string
	for _, fileDir := range fileDirs {
		resolved, err := filepath.EvalSymlinks(fileDir)
		if err != nil {
			return nil, fmt.Errorf("ExecutorConfig.FileAssetDirs: %w", err)
		}
		resolvedDirs = append(resolvedDirs, resolved)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("ExecutorConfig.AssetCacheDir: %w", err)
	}
	files, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("ExecutorConfig.AssetCacheDir: %w", err)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if !allowLinkLocal {
		transport.DialContext = assetDialer().DialContext
	}
	c := &assetCache{
		dir:      dir,
		limit:    limit,
		logger:   logger.Session("asset-cache"),
		ctx:      ctx,
		client:   &http.Client{Transport: transport},
		fileDirs: resolvedDirs,
		entries:  map[string]*cacheEntry{},
		inflight: map[string]*assetDownload{},
	}
	type found struct {
		entry   *cacheEntry
		modTime time.Time
	}
	var leftovers []found
	for _, file := range files {
		path := filepath.Join(dir, file.Name())
		if strings.Contains(file.Name(), downloadSuffix) {
			_ = os.Remove(path)
			continue
		}
		if !checksumName.MatchString(file.Name()) || !file.Type().IsRegular() {
			continue
		}
		info, err := file.Info()
		if err != nil {
			continue
		}
		leftovers = append(leftovers, found{
			entry:   &cacheEntry{sum: file.Name(), path: path, size: info.Size()},
			modTime: info.ModTime(),
		})
	}
	// A file's modification time is when it was last used (touch), so
	// the least recently used go first across restarts too.
	sort.Slice(leftovers, func(i, j int) bool { return leftovers[i].modTime.Before(leftovers[j].modTime) })
	for _, l := range leftovers {
		c.useSeq++
		l.entry.lastUse = c.useSeq
		l.entry.oversized = l.entry.size > limit
		c.entries[l.entry.sum] = l.entry
		c.stats.Bytes += l.entry.size
		c.stats.Entries++
	}
	c.mu.Lock()
	c.evict()
	c.mu.Unlock()
	if len(leftovers) > 0 {
		c.logger.Info("found-entries", lager.Data{"entries": c.stats.Entries, "bytes": c.stats.Bytes})
	}
	return c, nil
}

// Stats returns a copy of the counts.
func (c *assetCache) Stats() AssetCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// assetSource says where a start got an asset from.
type assetSource int

const (
	fromCache assetSource = iota + 1
	// downloadedHere: this start's own download.
	downloadedHere
	// downloadedByOther: another start's download it waited for.
	downloadedByOther
)

// acquire returns the cached, verified file of the asset's checksum,
// downloading it first unless the cache has it or another start is
// downloading it already (then it waits for that download). The entry is
// in use until release. note writes a line into the start's instance log.
// When ctx ends first, acquire returns an error saying why (see
// interruption) and how far the download got.
//
// A start that waited for another's download of the same checksum from
// another URL, which failed, downloads from its own URL rather than fail
// with the other's error: what one definition names must not make
// another's start fail (at most sharedAttempts waits in all).
func (c *assetCache) acquire(ctx context.Context, asset *models.Asset, note func(string)) (*cacheEntry, assetSource, error) {
	for attempt := 1; ; attempt++ {
		entry, source, otherURL, err := c.acquireOnce(ctx, asset, note)
		if err == nil || otherURL == "" || ctx.Err() != nil || attempt == sharedAttempts {
			return entry, source, err
		}
		note(fmt.Sprintf("the download of %s, which this start waited for, failed (%v): downloading asset %s itself", otherURL, err, asset.GetUrl()))
	}
}

// sharedAttempts bounds how often acquire waits for downloads of other
// URLs that fail.
const sharedAttempts = 3

// acquireOnce is one attempt of acquire; otherURL is the URL of the
// download it waited for when that was another start's, of another URL.
func (c *assetCache) acquireOnce(ctx context.Context, asset *models.Asset, note func(string)) (entry *cacheEntry, source assetSource, otherURL string, err error) {
	sum := asset.GetSha256()
	c.mu.Lock()
	if entry := c.entries[sum]; entry != nil && entry.verified {
		c.use(entry)
		c.stats.Hits++
		c.mu.Unlock()
		touch(entry.path)
		return entry, fromCache, "", nil
	}
	source = downloadedByOther
	line := fmt.Sprintf("waiting for asset %s (sha256 %s): another start on this cell is downloading it", asset.GetUrl(), sum)
	dl := c.inflight[sum]
	if dl == nil {
		source = downloadedHere
		line = fmt.Sprintf("downloading asset %s (sha256 %s)", asset.GetUrl(), sum)
		if c.entries[sum] != nil {
			line = fmt.Sprintf("checking asset %s (sha256 %s), which an earlier rep left in the cell's cache", asset.GetUrl(), sum)
		}
		dl = c.startDownload(asset, note)
	} else {
		c.stats.Hits++
	}
	dl.waiters++
	c.mu.Unlock()
	note(line)

	entry, err = c.wait(ctx, dl, note)
	if err != nil {
		if source == downloadedByOther && dl.url != asset.GetUrl() {
			otherURL = dl.url
		}
		return nil, source, otherURL, err
	}
	if !dl.fetched {
		source = fromCache
	}
	return entry, source, "", nil
}

// startDownload registers a download of the asset's checksum and starts
// it; c.mu is held.
func (c *assetCache) startDownload(asset *models.Asset, note func(string)) *assetDownload {
	ctx, cancel := context.WithCancelCause(c.ctx)
	dl := &assetDownload{url: asset.GetUrl(), done: make(chan struct{}), cancel: cancel}
	dl.total.Store(-1)
	c.inflight[asset.GetSha256()] = dl
	leftover := c.entries[asset.GetSha256()] // unverified, or nil
	go c.run(ctx, dl, asset, leftover, note)
	return dl
}

// run obtains the asset's bytes for dl, from the file an earlier rep left
// when it still matches its checksum, else from the URL, and hands the
// entry to the starts still waiting.
func (c *assetCache) run(ctx context.Context, dl *assetDownload, asset *models.Asset, leftover *cacheEntry, note func(string)) {
	var entry *cacheEntry
	var err error
	fetched := true
	if leftover != nil {
		if c.verifyLeftover(leftover) {
			entry, fetched = leftover, false
		} else {
			note(fmt.Sprintf("the cached copy of asset %s does not match its checksum any more: downloading it again", asset.GetUrl()))
			c.logger.Info("removed-corrupt-entry", lager.Data{"sha256": leftover.sum})
			c.mu.Lock()
			c.drop(leftover)
			c.mu.Unlock()
		}
	}
	if fetched {
		if err = c.gate.enter(ctx, note); err == nil {
			entry, err = c.fetch(ctx, dl, asset)
			c.gate.leave()
		}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.inflight, asset.GetSha256())
	dl.finished = true
	dl.fetched = fetched
	switch {
	case fetched && err != nil:
		c.stats.Downloads++
		c.stats.Failures++
		dl.err = err
	case fetched:
		c.stats.Downloads++
		c.insert(entry)
	default:
		c.stats.Hits++
		entry.verified = true
	}
	if err == nil {
		dl.entry = entry
		c.useSeq++
		entry.lastUse = c.useSeq
		entry.users += dl.waiters
		c.dropUnusedOversized(entry)
		c.evict()
	}
	close(dl.done)
	dl.cancel(nil)
}

// wait waits for dl, writing its progress into the start's log about once
// a second. A start that gives up (ctx ends) leaves the download to the
// others; the last to leave ends it.
func (c *assetCache) wait(ctx context.Context, dl *assetDownload, note func(string)) (*cacheEntry, error) {
	ticker := time.NewTicker(assetProgressInterval)
	defer ticker.Stop()
	reported := int64(0)
	for {
		select {
		case <-dl.done:
			// dl's fields are final once done is closed.
			return dl.entry, dl.err
		case <-ticker.C:
			if got := dl.received.Load(); got != reported {
				reported = got
				note(fmt.Sprintf("downloading asset %s: %s", dl.url, dl.progress()))
			}
		case <-ctx.Done():
			c.mu.Lock()
			finished := dl.finished
			if !finished {
				dl.waiters--
				if dl.waiters == 0 {
					dl.cancel(errNoWaiters)
				}
			}
			c.mu.Unlock()
			if finished && dl.entry != nil {
				// It finished as ctx ended, counting this start in.
				c.release(dl.entry)
			}
			return nil, interruption(ctx, "download", " ("+dl.progress()+")")
		}
	}
}

// progress says how much of the download arrived: "1.2 MB of 6.1 MB" or
// "1.2 MB so far".
func (dl *assetDownload) progress() string {
	got, total := dl.received.Load(), dl.total.Load()
	if total >= 0 {
		return fmt.Sprintf("%s of %s", formatBytes(got), formatBytes(total))
	}
	return formatBytes(got) + " so far"
}

// fetch downloads the asset into a temporary file in the cache dir, checks
// its checksum, and only then gives it its checksum as its name: a file so
// named was verified.
func (c *assetCache) fetch(ctx context.Context, dl *assetDownload, asset *models.Asset) (*cacheEntry, error) {
	tmp, err := os.CreateTemp(c.dir, asset.GetSha256()+downloadSuffix+"*")
	if err != nil {
		return nil, fmt.Errorf("cannot write to the cell's asset cache: %w", err)
	}
	keep := false
	defer func() {
		if !keep {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	hash := sha256.New()
	size, err := fetchURL(ctx, c.client, c.fileDirs, asset.GetUrl(), io.MultiWriter(tmp, hash), dl)
	if err != nil {
		return nil, err
	}
	if got := hex.EncodeToString(hash.Sum(nil)); got != asset.GetSha256() {
		return nil, fmt.Errorf("checksum mismatch: the definition names sha256 %s, the download has %s", asset.GetSha256(), got)
	}
	// On disk before it is named, so that a crash leaves no file whose
	// name lies about its bytes.
	if err := tmp.Sync(); err != nil {
		return nil, fmt.Errorf("cannot write to the cell's asset cache: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("cannot write to the cell's asset cache: %w", err)
	}
	path := filepath.Join(c.dir, asset.GetSha256())
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, fmt.Errorf("cannot write to the cell's asset cache: %w", err)
	}
	keep = true
	syncDir(c.dir)
	return &cacheEntry{sum: asset.GetSha256(), path: path, size: size, verified: true, oversized: size > c.limit}, nil
}

// verifyLeftover hashes a file an earlier rep left and reports whether it
// still has the checksum its name says.
func (c *assetCache) verifyLeftover(entry *cacheEntry) bool {
	f, err := os.Open(entry.path)
	if err != nil {
		return false
	}
	defer f.Close()
	hash := sha256.New()
	if _, err := io.Copy(hash, f); err != nil {
		return false
	}
	return hex.EncodeToString(hash.Sum(nil)) == entry.sum
}

// release ends a start's use of an entry: an oversized one goes with its
// last user, and the cache evicts what it must.
func (c *assetCache) release(entry *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	entry.users--
	c.dropUnusedOversized(entry)
	c.evict()
}

// use marks a start's use of entry; c.mu is held.
func (c *assetCache) use(entry *cacheEntry) {
	c.useSeq++
	entry.lastUse = c.useSeq
	entry.users++
}

// insert adds a verified download; c.mu is held.
func (c *assetCache) insert(entry *cacheEntry) {
	c.entries[entry.sum] = entry
	if !entry.oversized {
		c.stats.Bytes += entry.size
		c.stats.Entries++
	}
}

// dropUnusedOversized removes an oversized entry nobody uses; c.mu is
// held.
func (c *assetCache) dropUnusedOversized(entry *cacheEntry) {
	if entry.oversized && entry.users == 0 && c.entries[entry.sum] == entry {
		c.drop(entry)
	}
}

// evict removes the least recently used entries that no start uses and
// none downloads, until the cache is within its limit; c.mu is held.
func (c *assetCache) evict() {
	for c.stats.Bytes > c.limit {
		var oldest *cacheEntry
		for _, entry := range c.entries {
			if entry.users > 0 || entry.oversized || c.inflight[entry.sum] != nil {
				continue
			}
			if oldest == nil || entry.lastUse < oldest.lastUse {
				oldest = entry
			}
		}
		if oldest == nil {
			// Everything left is in use; the next release tries again.
			return
		}
		c.drop(oldest)
		c.stats.Evictions++
		c.logger.Info("evicted", lager.Data{"sha256": oldest.sum, "bytes": oldest.size})
	}
}

// drop removes an entry and its file; c.mu is held.
func (c *assetCache) drop(entry *cacheEntry) {
	delete(c.entries, entry.sum)
	if !entry.oversized {
		c.stats.Bytes -= entry.size
		c.stats.Entries--
	}
	if err := os.Remove(entry.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		c.logger.Error("removing-entry-failed", err, lager.Data{"sha256": entry.sum})
	}
}

// touch records a use in the file's modification time, which orders the
// entries a restarted rep finds.
func touch(path string) {
	now := time.Now()
	_ = os.Chtimes(path, now, now)
}

// syncDir makes a rename in dir durable; a failure only risks the entry
// being downloaded again.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// formatBytes is a size for a person: "512 B", "12.3 kB", "6.1 MB".
func formatBytes(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	case n < 1000*1000*1000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	default:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	}
}
