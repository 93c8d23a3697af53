package executor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// appsDirName names the apps dir in errors about a path resolved there.
const appsDirName = "the apps dir"

// resolveExecutable finds the executable an action path names (field is
// the definition's field, "action.path" or "setup.path"):
//   - an absolute path as it is;
//   - a path with a slash ("./hello", "bin/web") under base;
//   - a bare name ("hello", "sh") under base when it is there, otherwise
//     in defaultPath, the PATH instances get.
//
// base is the apps dir, or the instance's directory for a definition with
// assets; baseName says which, for errors. It must be a regular,
// executable file.
func resolveExecutable(field, base, baseName, path string) (string, error) {
	var candidates []string
	switch {
	case filepath.IsAbs(path):
		candidates = []string{path}
	case strings.Contains(path, "/"):
		candidates = []string{filepath.Join(base, path)}
	default:
		candidates = []string{filepath.Join(base, path)}
		for _, dir := range filepath.SplitList(defaultPath) {
			candidates = append(candidates, filepath.Join(dir, path))
		}
	}
	var firstErr error
	for _, candidate := range candidates {
		err := checkExecutable(candidate)
		if err == nil {
			return candidate, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if len(candidates) > 1 {
		return "", fmt.Errorf("InstanceSpec.Definition.%s %q: not found in %s %s nor in %s", field, path, baseName, base, defaultPath)
	}
	return "", fmt.Errorf("InstanceSpec.Definition.%s %q: %w", field, path, firstErr)
}

func checkExecutable(path string) error {
	info, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s does not exist", path)
	}
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	if info.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not executable", path)
	}
	return nil
}

// resolveDir is the directory an action starts in: workDir (the
// instance's working directory) unless the action names one; a relative
// one resolves under base. It must exist.
func resolveDir(field, base, workDir, dir string) (string, error) {
	if dir == "" {
		return workDir, nil
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(base, dir)
	}
	info, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("InstanceSpec.Definition.%s: %w", field, err)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("InstanceSpec.Definition.%s: %s is not a directory", field, dir)
	}
	return dir, nil
}

// describeExit says how a process ended, for a person: "exited with code
// 3" or "killed by signal 9".
func describeExit(state *os.ProcessState, waitErr error) string {
	if state == nil {
		return fmt.Sprintf("lost track of the process: %v", waitErr)
	}
	if status, ok := state.Sys().(syscall.WaitStatus); ok && status.Signaled() {
		return fmt.Sprintf("killed by signal %d", int(status.Signal()))
	}
	return fmt.Sprintf("exited with code %d", state.ExitCode())
}

// signalGroup signals every process of the group pid leads. Instances run
// in their own group (Setpgid), so this reaches whatever they started too.
// A group that is already gone is no error.
func signalGroup(pid int, sig syscall.Signal) {
	if pid <= 0 {
		return
	}
	_ = syscall.Kill(-pid, sig)
}

// pidFile records the pid of the process of the instance whose working
// directory is dir, and when that process started, so a rep restarted on
// the same data dir can kill what its predecessor left running without
// killing a stranger that got the same pid. It is beside the directory,
// not in it: an isolated instance owns its directory, and a pid file it
// wrote would have the next rep kill whatever process group it names.
// (Instance guids never start with a dot, so no directory is named so.)
func pidFile(dir string) string {
	return filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".pid")
}

func writePidFile(dir string, pid int) {
	start, _ := processStartTime(pid)
	_ = os.WriteFile(pidFile(dir), fmt.Appendf(nil, "%d %d\n", pid, start), 0o600)
}

func removePidFile(dir string) {
	_ = os.Remove(pidFile(dir))
}

// reapLeftover kills the process group recorded in dir's pid file, if it
// is still the one the pid file means. A pid is not reused while a process
// group of that id has members, so when its leader is gone but members
// remain, the group is still ours; when another process holds the pid now
// (its start time differs), our group is long gone.
func reapLeftover(dir string) (pid int, killed bool) {
	data, err := os.ReadFile(pidFile(dir))
	if err != nil {
		return 0, false
	}
	var recordedStart uint64
	// Never pid 1: kill(-1) is every process.
	if _, err := fmt.Sscanf(string(data), "%d %d", &pid, &recordedStart); err != nil || pid <= 1 || recordedStart == 0 {
		return 0, false
	}
	start, err := processStartTime(pid)
	if err == nil && start != recordedStart {
		return pid, false
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		// Cannot tell (no /proc): leave it alone.
		return pid, false
	}
	return pid, syscall.Kill(-pid, syscall.SIGKILL) == nil
}
