package isolation

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// initArg0 is the argv[0] that makes a binary linking this package act as
// an instance's init rather than as itself.
const initArg0 = "corkboard-instance-init"

// The init's two extra descriptors. Its config comes in on configFD as
// JSON, and later one byte, "g", once the rep put the init in the
// instance's cgroups: the action starts only then, and so starts in
// them. The init reports on statusFD, one line each: "ready" or "error
// <why>" once its root is built; "started" or "error <why>" once the
// action started or could not; "exit <code>" or "signal <number>" when the
// action ended.
const (
	configFD = 3
	statusFD = 4
)

// initConfig is what the rep tells an instance's init, as JSON on
// configFD (not on its command line: /proc/1/cmdline is readable inside
// the namespace).
type initConfig struct {
	// Probe has the init check that it could isolate and exit, starting
	// nothing.
	Probe bool `json:"probe,omitempty"`
	// NewRoot is an empty directory of the rep's where the instance's
	// root is built (a tmpfs mounted there, in the init's own mount
	// namespace).
	NewRoot string   `json:"new_root"`
	Mounts  []Mount  `json:"mounts"`
	Rlimits []Rlimit `json:"rlimits,omitempty"`
	// Landlock is the kernel's Landlock ABI when it can confine the
	// action's TCP binds to BindPorts (confineNetwork); 0 leaves them
	// as they are.
	Landlock  int      `json:"landlock,omitempty"`
	BindPorts []uint32 `json:"bind_ports,omitempty"`
	UID       uint32   `json:"uid"`
	GID       uint32   `json:"gid"`
	Path      string   `json:"path"`
	Args      []string `json:"args"`
	Env       []string `json:"env"`
	Dir       string   `json:"dir"`
}

// Rlimit is one resource limit the action runs under (soft = hard).
type Rlimit struct {
	Resource int    `json:"resource"`
	Value    uint64 `json:"value"`
}

func init() {
	if len(os.Args) == 0 || os.Args[0] != initArg0 {
		return
	}
	// no_new_privs and the capability bounding set are per thread, and
	// the action is forked from the thread that starts it: one thread
	// does it all.
	runtime.LockOSThread()
	os.Exit(runInit())
}

// runInit is the instance's init: PID 1 of its namespace. It returns its
// exit code: the action's, or 128+n when a signal n killed it.
func runInit() int {
	status := os.NewFile(statusFD, "status")
	fail := func(err error) int {
		fmt.Fprintf(status, "error %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return 127
	}
	if err := closeOnExecAbove(syscall.Stderr); err != nil {
		return fail(err)
	}
	var cfg initConfig
	configFile := os.NewFile(configFD, "config")
	decoder := json.NewDecoder(configFile)
	if err := decoder.Decode(&cfg); err != nil {
		return fail(fmt.Errorf("reading the init's config: %w", err))
	}

	// Signals the rep sends the process group reach the action
	// directly; the init, in the same group, only has to outlive them
	// (Go would otherwise exit on SIGTERM, and take the namespace with
	// it). Handled here, they are reset to their defaults for the action
	// when it execs.
	signals := make(chan os.Signal, 16)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE)
	go func() {
		for range signals {
		}
	}()

	if err := enterRoot(cfg); err != nil {
		return fail(err)
	}
	if err := restrict(cfg.Rlimits); err != nil {
		return fail(err)
	}
	if cfg.Landlock > 0 {
		if err := confineNetwork(cfg.Landlock, cfg.BindPorts); err != nil {
			return fail(err)
		}
		// Landlock confines TCP, not Multipath TCP (mptcp_linux.go).
		if err := refuseMPTCP(); err != nil {
			return fail(err)
		}
	}
	fmt.Fprintln(status, "ready")
	if cfg.Probe {
		return 0
	}
	// The JSON ends with a newline (json.Encoder's); the go follows.
	rest := bufio.NewReader(io.MultiReader(decoder.Buffered(), configFile))
	goByte, err := rest.ReadByte()
	for err == nil && goByte == '\n' {
		goByte, err = rest.ReadByte()
	}
	if err != nil || goByte != 'g' {
		return fail(fmt.Errorf("waiting for the rep's go: got %q, %v", goByte, err))
	}
	configFile.Close()
	child, err := startAction(cfg)
	if err != nil {
		return fail(err)
	}
	fmt.Fprintln(status, "started")
	return reap(child, status)
}

// closeOnExecAbove marks every descriptor the init holds above lowest
// close-on-exec, so that the action gets only its standard three. The
// init's status pipe (statusFD) stays open for the init, which reports
// on it after the action started: had the action it too, it could write
// "signal 9" there and have its rep record a death that did not happen.
// And a descriptor the rep inherited without close-on-exec from whatever
// started it (the init inherits it in turn) would hand the action a file
// its uid may not open.
func closeOnExecAbove(lowest int) error {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("listing the init's open descriptors: %w", err)
	}
	for _, entry := range entries {
		fd, err := strconv.Atoi(entry.Name())
		if err != nil || fd <= lowest {
			continue
		}
		// The directory's own descriptor, closed by now, is already
		// close-on-exec; marking a closed one does nothing.
		syscall.CloseOnExec(fd)
	}
	return nil
}

// enterRoot builds the instance's root under NewRoot and makes it the
// root.
func enterRoot(cfg initConfig) error {
	// Nothing mounted here reaches the host's namespace.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	root := cfg.NewRoot
	if err := syscall.Mount("tmpfs", root, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0755,size=1m"); err != nil {
		return fmt.Errorf("mounting the new root on %s: %w", root, err)
	}
	for _, m := range cfg.Mounts {
		if err := apply(root, m); err != nil {
			return fmt.Errorf("%s %s: %w", m.Kind, m.Target, err)
		}
	}
	if err := os.Chdir(root); err != nil {
		return err
	}
	// pivot_root with the same directory twice stacks the old root under
	// the new one; unmounting "." then drops it.
	if err := syscall.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root to %s: %w", root, err)
	}
	if err := syscall.Unmount(".", syscall.MNT_DETACH); err != nil {
		return fmt.Errorf("unmounting the old root: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	// The root's own tmpfs holds only mount points.
	if err := syscall.Mount("", "/", "", syscall.MS_REMOUNT|syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV, ""); err != nil {
		return fmt.Errorf("making the new root read-only: %w", err)
	}
	return nil
}

// apply takes one step of building the root (see MountKind).
func apply(root string, m Mount) error {
	target := filepath.Join(root, m.Target)
	switch m.Kind {
	case Symlink:
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.Symlink(m.Source, target)
	case BindReadOnly, BindWritable:
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
		if err := syscall.Mount(m.Source, target, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return err
		}
		attrs := uint64(mountAttrNosuid | mountAttrNodev)
		if m.Kind == BindReadOnly {
			attrs |= mountAttrRdonly
		}
		return mountSetattrRecursive(target, attrs)
	case MaskDir, MaskFile:
		if _, err := os.Lstat(target); errors.Is(err, fs.ErrNotExist) {
			// Not there (yet): nothing to hide.
			return nil
		}
	}
	switch m.Kind {
	case MaskDir:
		// Writable by root alone (the init makes mount points in it, for
		// an instance's directory under the rep's data dir).
		return syscall.Mount("tmpfs", target, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "mode=0755,size=4k")
	case MaskFile:
		return syscall.Mount("/dev/null", target, "", syscall.MS_BIND, "")
	case Tmpfs:
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
		return syscall.Mount("tmpfs", target, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, m.Source)
	case Proc:
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
		return syscall.Mount("proc", target, "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "")
	case Device:
		if _, err := os.Stat(m.Source); err != nil {
			// A device the host lacks is left out.
			return nil
		}
		f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o666)
		if err != nil {
			return err
		}
		f.Close()
		return syscall.Mount(m.Source, target, "", syscall.MS_BIND, "")
	}
	return fmt.Errorf("unknown mount kind %q", m.Kind)
}

// restrict sets the rlimits, no_new_privs (no exec gains privileges: set
// uid/gid bits and file capabilities are ignored) and empties the
// capability bounding set, for this thread and so for the action.
func restrict(limits []Rlimit) error {
	for _, l := range limits {
		if err := syscall.Setrlimit(l.Resource, &syscall.Rlimit{Cur: l.Value, Max: l.Value}); err != nil {
			return fmt.Errorf("setting rlimit %d to %d: %w", l.Resource, l.Value, err)
		}
	}
	if err := prctl(prSetNoNewPrivs, 1); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	for c := 0; ; c++ {
		err := prctl(syscall.PR_CAPBSET_DROP, uintptr(c))
		if errors.Is(err, syscall.EINVAL) {
			// Past the last capability the kernel knows.
			if c == 0 {
				return errors.New("dropping the capability bounding set: the kernel knows no capability")
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
}

// startAction starts the action as the instance's uid and gid, with no
// supplementary groups, in the init's process group (the rep signals
// that group). A busy executable (ETXTBSY, see the rep's startCommand) is
// tried again after a pause that doubles, about 0.6s in all.
func startAction(cfg initConfig) (*exec.Cmd, error) {
	pause := 5 * time.Millisecond
	for attempt := 1; ; attempt++ {
		cmd := &exec.Cmd{
			Path:   cfg.Path,
			Args:   append([]string{cfg.Path}, cfg.Args...),
			Env:    cfg.Env,
			Dir:    cfg.Dir,
			Stdout: os.Stdout,
			Stderr: os.Stderr,
			SysProcAttr: &syscall.SysProcAttr{
				Credential: &syscall.Credential{Uid: cfg.UID, Gid: cfg.GID, Groups: []uint32{}},
			},
		}
		err := cmd.Start()
		if err == nil {
			return cmd, nil
		}
		if !errors.Is(err, syscall.ETXTBSY) || attempt == 8 {
			return nil, err
		}
		time.Sleep(pause)
		pause *= 2
	}
}

// reap waits for every process of the namespace that ends (an init must,
// or they stay zombies) until the action itself ends, reports how, and
// returns the exit code the init leaves with. Whatever else still runs in
// the namespace is killed by the kernel when the init exits.
func reap(child *exec.Cmd, status *os.File) int {
	pid := child.Process.Pid
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			fmt.Fprintf(status, "error waiting for the action: %v\n", err)
			return 127
		}
		if got != pid {
			continue
		}
		if ws.Signaled() {
			fmt.Fprintf(status, "signal %d\n", int(ws.Signal()))
			return 128 + int(ws.Signal())
		}
		fmt.Fprintf(status, "exit %d\n", ws.ExitStatus())
		return ws.ExitStatus()
	}
}

// readStatusLine reads one line the init reported (see statusFD).
func readStatusLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(line, "\n"), nil
}

// What the syscall package lacks, so that the package needs nothing
// beyond the standard library.
const (
	prSetNoNewPrivs  = 38     // PR_SET_NO_NEW_PRIVS
	sysMountSetattr  = 442    // mount_setattr(2), the same number on every architecture
	atRecursive      = 0x8000 // AT_RECURSIVE
	atFdcwd          = -100   // AT_FDCWD
	mountAttrRdonly  = 0x1    // MOUNT_ATTR_RDONLY
	mountAttrNosuid  = 0x2    // MOUNT_ATTR_NOSUID
	mountAttrNodev   = 0x4    // MOUNT_ATTR_NODEV
	rlimitNproc      = 6      // RLIMIT_NPROC
	mountAttrSizeVer = 32     // sizeof(struct mount_attr), MOUNT_ATTR_SIZE_VER0
)

func prctl(option int, arg uintptr) error {
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, uintptr(option), arg, 0, 0, 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// mountAttr is struct mount_attr.
type mountAttr struct {
	attrSet, attrClr, propagation, usernsFd uint64
}

// mountSetattrRecursive sets attrs on the mount at path and every mount
// under it (a bind of /etc may hold more binds).
func mountSetattrRecursive(path string, attrs uint64) error {
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return err
	}
	attr := mountAttr{attrSet: attrs}
	fd := atFdcwd
	_, _, errno := syscall.Syscall6(sysMountSetattr, uintptr(fd), uintptr(unsafe.Pointer(p)), atRecursive,
		uintptr(unsafe.Pointer(&attr)), mountAttrSizeVer, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
