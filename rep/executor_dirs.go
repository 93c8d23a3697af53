package rep

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"

	"code.cloudfoundry.org/lager/v3"
)

// keepFinished is how many working directories of finished instances
// (crashed or stopped) stay on disk, so their logs can still be read; the
// oldest go first.
const keepFinished = 32

// workDirs manages DataDir/instances/<instance_guid>/: the working
// directory, HOME and log of each instance.
type workDirs struct {
	root   string
	logger lager.Logger

	mu   sync.Mutex
	kept []string // finished instances' guids, oldest first
}

// openWorkDirs makes root and takes stock of what an earlier rep left in
// it: processes still running are killed, their directories count as
// finished.
func openWorkDirs(root string, logger lager.Logger) (*workDirs, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
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
		w.kept = append(w.kept, l.guid)
	}
	w.prune()
	return w, nil
}

func (w *workDirs) path(instanceGuid string) string {
	return filepath.Join(w.root, instanceGuid)
}

// create makes the instance's directory. A directory kept from an earlier
// instance with the same guid is reused, log and all.
func (w *workDirs) create(instanceGuid string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.kept = slices.DeleteFunc(w.kept, func(g string) bool { return g == instanceGuid })
	dir := w.path(instanceGuid)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("making the working dir of instance %s: %w", instanceGuid, err)
	}
	return dir, nil
}

// remove deletes the directory of an instance that never started.
func (w *workDirs) remove(instanceGuid string) {
	if err := os.RemoveAll(w.path(instanceGuid)); err != nil {
		w.logger.Error("removing-working-dir", err, lager.Data{"instance_guid": instanceGuid})
	}
}

// finished keeps the directory of an instance that ended, for its log,
// and removes the oldest ones beyond keepFinished.
func (w *workDirs) finished(instanceGuid string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.kept = append(w.kept, instanceGuid)
	w.prune()
}

// prune needs w.mu held, or w not yet shared.
func (w *workDirs) prune() {
	for len(w.kept) > keepFinished {
		guid := w.kept[0]
		w.kept = w.kept[1:]
		w.remove(guid)
	}
}
