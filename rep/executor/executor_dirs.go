package executor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"code.cloudfoundry.org/lager/v3"
)

// keepFinished is how many working directories of finished instances
// (crashed or stopped) stay on disk, so their logs can still be read: at
// most one per (process_guid, index), the last of that index to end, and
// the oldest go first. A log is capped like a live one (LogLimit), so the
// kept logs take at most keepFinished × 2 × LogLimit.
const keepFinished = 32

// EndedInstance is an instance that ended on this cell and whose working
// directory, log included, the executor keeps.
type EndedInstance struct {
	ProcessGuid  string
	Index        int32
	InstanceGuid string
	DefinitionId string
	EndedAt      time.Time
	// Ending says how it ended, for a person: "crashed: exited with code
	// 3", "stopped: exited with code 0", "unhealthy, then stopped: health
	// check failed 3 times in a row: GET /health on port 8080: 503".
	Ending string
}

// keptDir is the directory of a finished instance.
type keptDir struct {
	guid string
	// ended is nil for a directory an earlier rep on the data dir left:
	// nothing says which index it ran.
	ended *EndedInstance
}

// workDirs manages DataDir/instances/<instance_guid>/, the working
// directory and HOME of each instance, and its log beside it
// (instanceLogPath).
type workDirs struct {
	root   string
	logger lager.Logger

	mu   sync.Mutex
	kept []keptDir // oldest first
}

// openWorkDirs makes root and takes stock of what an earlier rep left in
// it: processes still running are killed, their directories count as
// finished.
func openWorkDirs(root string, logger lager.Logger) (*workDirs, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("ExecutorConfig.DataDir: %w", err)
	}
	if err := os.Chmod(root, 0o700); err != nil {
		return nil, fmt.Errorf("ExecutorConfig.DataDir: %w", err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("ExecutorConfig.DataDir: %w", err)
	}
	type leftover struct {
		guid    string
		modTime int64
	}
	var leftovers []leftover
	for _, entry := range entries {
		if !entry.IsDir() {
			removeOrphanLog(root, entry.Name(), logger)
			continue
		}
		dir := filepath.Join(root, entry.Name())
		if pid, killed := reapLeftover(dir); killed {
			logger.Info("killed-leftover-instance", lager.Data{"instance_guid": entry.Name(), "pid": pid})
		}
		removePidFile(dir)
		info, err := entry.Info()
		if err != nil {
			continue
		}
		leftovers = append(leftovers, leftover{guid: entry.Name(), modTime: info.ModTime().UnixNano()})
	}
	sort.Slice(leftovers, func(i, j int) bool { return leftovers[i].modTime < leftovers[j].modTime })

	w := &workDirs{root: root, logger: logger}
	for _, l := range leftovers {
		w.kept = append(w.kept, keptDir{guid: l.guid})
	}
	w.prune()
	return w, nil
}

// removeOrphanLog deletes name, in root, when it is an instance's log
// (instanceLogPath) whose directory is gone: an earlier rep stopped
// between removing the one and the other.
func removeOrphanLog(root, name string, logger lager.Logger) {
	guid, ok := strings.CutPrefix(strings.TrimSuffix(name, rotatedLogSuffix), ".")
	if !ok {
		return
	}
	if guid, ok = strings.CutSuffix(guid, instanceLogSuffix); !ok || guid == "" {
		return
	}
	if _, err := os.Lstat(filepath.Join(root, guid)); !errors.Is(err, os.ErrNotExist) {
		return
	}
	if err := os.Remove(filepath.Join(root, name)); err != nil {
		logger.Error("removing-orphan-log", err, lager.Data{"file": name})
	}
}

func (w *workDirs) path(instanceGuid string) string {
	return filepath.Join(w.root, instanceGuid)
}

// create makes the instance's directory. A directory kept from an earlier
// instance with the same guid is reused, log and all.
func (w *workDirs) create(instanceGuid string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.kept = slices.DeleteFunc(w.kept, func(k keptDir) bool { return k.guid == instanceGuid })
	dir := w.path(instanceGuid)
	// The instance's own (an isolated instance's uid owns it, see
	// isolation.Identity.Own), like its log.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("making the working dir of instance %s: %w", instanceGuid, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", fmt.Errorf("making the working dir of instance %s: %w", instanceGuid, err)
	}
	return dir, nil
}

// remove deletes an instance's directory and its log.
func (w *workDirs) remove(instanceGuid string) {
	if err := os.RemoveAll(w.path(instanceGuid)); err != nil {
		w.logger.Error("removing-working-dir", err, lager.Data{"instance_guid": instanceGuid})
	}
	if err := removeInstanceLog(w.path(instanceGuid)); err != nil {
		w.logger.Error("removing-instance-log", err, lager.Data{"instance_guid": instanceGuid})
	}
}

// finished keeps the directory of an instance that ended, for its log.
// It replaces the directory kept for an earlier instance of the same
// index, and removes the oldest ones beyond keepFinished.
func (w *workDirs) finished(ended EndedInstance) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.kept = slices.DeleteFunc(w.kept, func(k keptDir) bool {
		if k.ended == nil || k.ended.ProcessGuid != ended.ProcessGuid || k.ended.Index != ended.Index {
			return false
		}
		if k.guid != ended.InstanceGuid {
			w.remove(k.guid)
		}
		return true
	})
	w.kept = append(w.kept, keptDir{guid: ended.InstanceGuid, ended: &ended})
	w.prune()
}

// lastEnded is the kept instance of an index, if any.
func (w *workDirs) lastEnded(processGuid string, index int32) (EndedInstance, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range w.kept {
		if k.ended != nil && k.ended.ProcessGuid == processGuid && k.ended.Index == index {
			return *k.ended, true
		}
	}
	return EndedInstance{}, false
}

// ended is what is known of a kept instance: false for one that is not
// kept, or whose index is unknown (an earlier rep's).
func (w *workDirs) ended(instanceGuid string) (EndedInstance, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range w.kept {
		if k.guid == instanceGuid && k.ended != nil {
			return *k.ended, true
		}
	}
	return EndedInstance{}, false
}

// prune needs w.mu held, or w not yet shared.
func (w *workDirs) prune() {
	for len(w.kept) > keepFinished {
		oldest := w.kept[0]
		w.kept = w.kept[1:]
		w.remove(oldest.guid)
	}
}
