package executor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroup2SuperMagic is CGROUP2_SUPER_MAGIC, statfs's type of a cgroup v2
// mount.
const cgroup2SuperMagic = 0x63677270

// defaultCgroupRoot is where systemd and most container runtimes mount
// the cgroup v2 hierarchy.
const defaultCgroupRoot = "/sys/fs/cgroup"

// detectMemoryCgroup returns the directory of the rep's own cgroup when
// instances can get memory-limited cgroups under it, or an error saying
// why not. root is where cgroup v2 is mounted ("" for /sys/fs/cgroup, "-"
// for never); selfCgroupFile names the rep's cgroup, as
// /proc/self/cgroup does.
func detectMemoryCgroup(root, selfCgroupFile string) (string, error) {
	if root == "-" {
		return "", errors.New(`cgroups are turned off (CgroupRoot "-")`)
	}
	if root == "" {
		root = defaultCgroupRoot
	}
	if !isCgroup2(root) {
		return "", fmt.Errorf("%s is not a cgroup v2 mount (a cgroup v1 or hybrid host?)", root)
	}
	own, err := ownCgroup(selfCgroupFile)
	if err != nil {
		return "", fmt.Errorf("finding the rep's cgroup: %w", err)
	}
	dir := filepath.Join(root, own)

	// Without "memory" there, a child cgroup has no memory.max.
	subtree, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return "", fmt.Errorf("reading the rep's cgroup: %w", err)
	}
	if !slices.Contains(strings.Fields(string(subtree)), "memory") {
		return "", fmt.Errorf("the memory controller is not enabled for the children of the rep's cgroup %s (its cgroup.subtree_control: %q)",
			dir, strings.TrimSpace(string(subtree)))
	}

	// Permissions alone do not tell (root, a read-only mount, delegation):
	// making a cgroup does.
	probe := filepath.Join(dir, fmt.Sprintf("corkboard-probe-%d", os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return "", fmt.Errorf("cannot create a cgroup under the rep's cgroup %s: %w", dir, err)
	}
	if err := syscall.Rmdir(probe); err != nil {
		return "", fmt.Errorf("cannot remove the cgroup %s it just created: %w", probe, err)
	}
	return dir, nil
}

// isCgroup2 reports whether root is a cgroup v2 mount: by its file system
// type, or, for a tree that is not a mount (tests), by the file only the
// root of a cgroup v2 hierarchy has. On a hybrid host /sys/fs/cgroup is a
// tmpfs holding v1 mounts, and neither holds.
func isCgroup2(root string) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(root, &st); err == nil && st.Type == cgroup2SuperMagic {
		return true
	}
	_, err := os.Stat(filepath.Join(root, "cgroup.controllers"))
	return err == nil
}

// ownCgroup reads the rep's cgroup v2 path from selfCgroupFile, in the
// format of /proc/self/cgroup: the line "0::/some/path".
func ownCgroup(selfCgroupFile string) (string, error) {
	data, err := os.ReadFile(selfCgroupFile)
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if path, ok := strings.CutPrefix(line, "0::"); ok && strings.HasPrefix(path, "/") {
			return path, nil
		}
	}
	return "", fmt.Errorf("%s has no cgroup v2 line (0::/path)", selfCgroupFile)
}

// cgroupControllerEnabled reports whether controller is enabled for the
// children of the cgroup dir (listed in its cgroup.subtree_control).
func cgroupControllerEnabled(dir, controller string) bool {
	subtree, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	return err == nil && slices.Contains(strings.Fields(string(subtree)), controller)
}

// createInstanceCgroup makes parent/corkboard-<instanceGuid> with a limit
// of limitBytes, and of maxProcesses processes unless it is 0, and moves
// the process pgid into it. On an error it leaves nothing behind and the
// process where it was.
func createInstanceCgroup(parent, instanceGuid string, pgid int, limitBytes int64, maxProcesses uint64) (dir string, err error) {
	if instanceGuid == "" || strings.ContainsAny(instanceGuid, "/\x00") || instanceGuid == "." || instanceGuid == ".." {
		return "", fmt.Errorf("instance guid %q cannot name a cgroup", instanceGuid)
	}
	dir = filepath.Join(parent, "corkboard-"+instanceGuid)
	err = os.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrExist) {
		// Left by a rep that died. Rmdir, not RemoveAll: an empty cgroup
		// goes, anything else (one still in use, a file) stays.
		if rmErr := syscall.Rmdir(dir); rmErr != nil {
			return "", fmt.Errorf("%s exists and cannot be removed: %w", dir, rmErr)
		}
		err = os.Mkdir(dir, 0o755)
	}
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			_ = syscall.Rmdir(dir)
		}
	}()

	if err := writeCgroupFile(dir, "memory.max", strconv.FormatInt(limitBytes, 10)); err != nil {
		return "", err
	}
	// Swap would let the instance hold more than its limit, out of sight.
	if err := writeCgroupFileIfPresent(dir, "memory.swap.max", "0"); err != nil {
		return "", err
	}
	// When the kernel kills for memory, the whole instance goes, as with
	// the watchdog, not only its largest process.
	if err := writeCgroupFileIfPresent(dir, "memory.oom.group", "1"); err != nil {
		return "", err
	}
	if maxProcesses > 0 {
		if err := writeCgroupFile(dir, "pids.max", strconv.FormatUint(maxProcesses, 10)); err != nil {
			return "", err
		}
	}
	// Last, so the process is never in the cgroup before its limits are.
	if err := writeCgroupFile(dir, "cgroup.procs", strconv.Itoa(pgid)); err != nil {
		return "", err
	}
	return dir, nil
}

func writeCgroupFile(dir, name, value string) error {
	if err := os.WriteFile(filepath.Join(dir, name), []byte(value), 0o644); err != nil {
		return fmt.Errorf("writing %s to %s: %w", value, filepath.Join(dir, name), err)
	}
	return nil
}

// writeCgroupFileIfPresent writes a file that only some kernels (or
// configurations) have, such as memory.swap.max without swap accounting.
func writeCgroupFileIfPresent(dir, name, value string) error {
	if _, err := os.Stat(filepath.Join(dir, name)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return writeCgroupFile(dir, name, value)
}

// cgroupOOMKills is how many processes the kernel's OOM killer killed in
// the cgroup dir: the oom_kill line of its memory.events.
func cgroupOOMKills(dir string) (int64, error) {
	data, err := os.ReadFile(filepath.Join(dir, "memory.events"))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if value, ok := strings.CutPrefix(line, "oom_kill "); ok {
			return strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		}
	}
	return 0, nil
}

// cgroupMemoryCurrent is what the cgroup dir holds now, in bytes: its
// memory.current.
func cgroupMemoryCurrent(dir string) (int64, error) {
	data, err := os.ReadFile(filepath.Join(dir, "memory.current"))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
}

// cgroupRemoveTimeout bounds how long removeInstanceCgroup waits for the
// processes in a cgroup to die.
const cgroupRemoveTimeout = 2 * time.Second

// removeInstanceCgroup removes an instance's cgroup. A cgroup goes only
// once no process is in it; the executor has killed the instance's group
// when this runs, but a dying process may still be there for a moment,
// and one that left the process group (setsid) would stay: cgroup.kill
// (Linux 5.14 and later) kills whatever is left.
func removeInstanceCgroup(dir string) error {
	deadline := time.Now().Add(cgroupRemoveTimeout)
	killed := false
	for {
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
		if !killed {
			_ = writeCgroupFileIfPresent(dir, "cgroup.kill", "1")
			killed = true
		}
		time.Sleep(10 * time.Millisecond)
	}
}
