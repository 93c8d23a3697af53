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
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// systemDirs are the host directories every instance sees, read-only,
// when they exist: programs, libraries and the system's configuration.
var systemDirs = []string{"/bin", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/sbin", "/usr"}

// devices are the device files every instance gets.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

// Isolator starts instances isolated (Mode Full), or says they are not
// (Mode None).
type Isolator struct {
	mode      Mode
	cfg       Config
	uids      *UIDPool
	newRoot   string
	system    []string
	links     map[string]string
	pidsRoot  string // "" without a usable pids controller
	pidsIssue string // why, when pidsRoot is ""
	// landlock is the kernel's Landlock ABI when it can confine
	// instances' TCP binds (BindablePorts), else 0, with bindsIssue why.
	landlock   int
	bindsIssue error
	// unavailable is why this host cannot isolate; nil when it can, or
	// when the mode is None (not asked).
	unavailable error
}

// New resolves cfg.Mode on this host. With Full, or Auto on a host that
// can isolate, instances are isolated; Auto elsewhere gives an Isolator in
// None mode whose Unavailable says why; Full elsewhere is an error naming
// what is missing.
func New(cfg Config) (*Isolator, error) {
	cfg = cfg.WithDefaults()
	pool, err := NewUIDPool(cfg.UIDs, cfg.UIDClaimDir)
	if err != nil {
		return nil, fmt.Errorf("instance_uid_range: %w", err)
	}
	iso := &Isolator{cfg: cfg, uids: pool, newRoot: filepath.Join(cfg.DataDir, "isolation", "root"), links: map[string]string{}}
	mode, err := Resolve(cfg.Mode, func() error {
		iso.unavailable = iso.check()
		return iso.unavailable
	})
	if err != nil {
		return nil, err
	}
	iso.mode = mode
	if mode == Full {
		iso.pidsRoot, iso.pidsIssue = detectPidsCgroup("/proc/self/cgroup")
	}
	return iso, nil
}

// Mode is Full when instances run isolated, None when they do not.
func (iso *Isolator) Mode() Mode { return iso.mode }

// PidsLimit says how the process limit is enforced, for logs.
func (iso *Isolator) PidsLimit() string {
	if iso.mode != Full {
		return "none"
	}
	if iso.pidsRoot != "" {
		return fmt.Sprintf("RLIMIT_NPROC %d and pids.max %d in %s", iso.cfg.MaxProcesses, iso.cfg.MaxProcesses, iso.pidsRoot)
	}
	return fmt.Sprintf("RLIMIT_NPROC %d (no pids cgroup: %s)", iso.cfg.MaxProcesses, iso.pidsIssue)
}

// Binds says how instances' TCP binds are confined, for logs.
func (iso *Isolator) Binds() string {
	if iso.mode != Full {
		return "any port"
	}
	if iso.landlock == 0 {
		return "any port (" + iso.bindsIssue.Error() + ")"
	}
	return fmt.Sprintf("each instance's own ports (Landlock ABI %d)", iso.landlock)
}

// BindsUnconfined says why isolated instances may bind any TCP port,
// another instance's next one among them; nil when they may not, or when
// instances are not isolated (Unavailable says why).
func (iso *Isolator) BindsUnconfined() error {
	if iso.mode != Full {
		return nil
	}
	return iso.bindsIssue
}

// MaxProcesses is how many processes an isolated instance may have, or 0
// when instances are not isolated. RLIMIT_NPROC and a cgroup v1 pids
// controller enforce it here; on a cgroup v2 host the rep's memory guard
// writes it as the instance cgroup's pids.max.
func (iso *Isolator) MaxProcesses() uint64 {
	if iso.mode != Full {
		return 0
	}
	return iso.cfg.MaxProcesses
}

// Unavailable says why this host cannot isolate instances (in Auto mode
// on such a host); nil otherwise.
func (iso *Isolator) Unavailable() error { return iso.unavailable }

// check finds out whether instances can be isolated here: the rep must be
// root, and an init must build a root in new namespaces (the probe does
// all of it but start an action).
func (iso *Isolator) check() error {
	if uid := os.Geteuid(); uid != 0 {
		return fmt.Errorf("the rep runs as uid %d, not root: instances need a uid of their own, namespaces and mounts", uid)
	}
	for _, ns := range []string{"pid", "mnt", "ipc"} {
		if _, err := os.Stat("/proc/self/ns/" + ns); err != nil {
			return fmt.Errorf("the kernel has no %s namespaces: %w", ns, err)
		}
	}
	if err := os.MkdirAll(iso.newRoot, 0o700); err != nil {
		return fmt.Errorf("making %s: %w", iso.newRoot, err)
	}
	iso.system = iso.system[:0]
	for _, dir := range systemDirs {
		info, err := os.Lstat(dir)
		if err != nil {
			continue
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(dir)
			if err != nil {
				continue
			}
			iso.links[dir] = target
		} else if !info.IsDir() {
			continue
		}
		iso.system = append(iso.system, dir)
	}
	probeDir := filepath.Join(iso.cfg.DataDir, "isolation", "probe")
	if err := os.MkdirAll(probeDir, 0o700); err != nil {
		return fmt.Errorf("making %s: %w", probeDir, err)
	}
	abi, err := landlockABI()
	if iso.bindsIssue = bindConfinement(abi, err); iso.bindsIssue == nil {
		iso.landlock = abi
	}
	probe := func() error {
		cfg := iso.initConfig(probeDir, 0)
		cfg.Probe = true
		p, err := start(cfg, nil, nil, 0)
		if err != nil {
			return err
		}
		_ = p.cmd.Wait()
		return nil
	}
	err = probe()
	if err != nil && iso.landlock > 0 {
		// A kernel with Landlock that still refuses it (a container's
		// seccomp profile, say) leaves binds unconfined, not instances
		// unisolated.
		refused := err
		iso.landlock = 0
		if err = probe(); err == nil {
			iso.bindsIssue = fmt.Errorf("the kernel refused Landlock to an instance's init: %w", refused)
		}
	}
	if err != nil {
		return fmt.Errorf("an instance's init could not build its namespaces: %w", err)
	}
	return nil
}

func (iso *Isolator) initConfig(instanceDir string, tmpfsBytes int64) initConfig {
	hideDirs := cleanAll(append([]string{iso.cfg.DataDir}, iso.cfg.HideDirs...))
	hideFiles := cleanAll(iso.cfg.HideFiles)
	plan := Plan(PlanInput{
		System:      iso.system,
		SystemLinks: iso.links,
		AppsDir:     iso.cfg.AppsDir,
		InstanceDir: instanceDir,
		HideDirs:    hideDirs,
		HideFiles:   hideFiles,
		Real:        realPaths(append(append([]string{iso.cfg.AppsDir}, hideDirs...), hideFiles...)),
		Devices:     devices,
		TmpfsBytes:  tmpfsBytes,
	})
	return initConfig{
		NewRoot:  iso.newRoot,
		Mounts:   plan,
		Landlock: iso.landlock,
		Rlimits: []Rlimit{
			{Resource: rlimitNproc, Value: iso.cfg.MaxProcesses},
			{Resource: syscall.RLIMIT_NOFILE, Value: OpenFilesLimit(iso.cfg.MaxOpenFiles)},
		},
	}
}

// OpenFilesLimit is the RLIMIT_NOFILE instances get for a configured
// limit: it, or the rep's own hard limit when that is lower (raising it
// takes CAP_SYS_RESOURCE, which a rep in a container may lack).
func OpenFilesLimit(configured uint64) uint64 {
	var own syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &own); err == nil && own.Max < configured {
		return own.Max
	}
	return configured
}

// realPaths maps each of paths that resolves to another path, its
// symbolic links followed, to that path (PlanInput.Real). Resolved at
// every start: a link may have changed since the last.
func realPaths(paths []string) map[string]string {
	real := map[string]string{}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if r, err := filepath.EvalSymlinks(p); err == nil && r != p {
			real[p] = r
		}
	}
	return real
}

func cleanAll(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			out = append(out, abs)
		}
	}
	return out
}

// Identity is one instance's uid, gid and cgroup while it runs (its
// setup and its action share it).
type Identity struct {
	iso      *Isolator
	dir      string
	UID, GID uint32
	pidsDir  string
	// tmpfsBytes bounds each of its /tmp and /dev/shm (PlanInput).
	tmpfsBytes int64
	// bindPorts are the TCP ports its processes may bind, where the
	// kernel can confine them (BindablePorts).
	bindPorts []uint32
}

// Acquire gives the instance whose directory is dir a uid and gid of its
// own, makes dir its own (mode 0700), and, where the pids controller
// exists, a pids cgroup; its /tmp and /dev/shm will each hold at most
// memoryMB MiB (0: no bound), as what they hold is memory; where the
// kernel can confine binds, it may bind the TCP ports BindablePorts
// allows for hostPorts, its own, and no other. In None mode it returns
// nil: nothing to do. Release gives everything back.
func (iso *Isolator) Acquire(instanceGuid, dir string, memoryMB int32, hostPorts []uint32) (*Identity, error) {
	if iso == nil || iso.mode != Full {
		return nil, nil
	}
	id, err := iso.uids.Allocate()
	if err != nil {
		return nil, err
	}
	ident := &Identity{iso: iso, dir: dir, UID: id, GID: id, tmpfsBytes: int64(max(memoryMB, 0)) << 20,
		bindPorts: BindablePorts(hostPorts, iso.cfg.InstancePorts, readEphemeralPorts(ephemeralPortsFile))}
	if err := ident.Own(); err != nil {
		iso.uids.Release(id)
		return nil, err
	}
	if iso.pidsRoot != "" {
		pidsDir := filepath.Join(iso.pidsRoot, "corkboard-"+instanceGuid)
		if err := os.Mkdir(pidsDir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			iso.uids.Release(id)
			return nil, fmt.Errorf("making the pids cgroup %s: %w", pidsDir, err)
		}
		if err := os.WriteFile(filepath.Join(pidsDir, "pids.max"), []byte(strconv.FormatUint(iso.cfg.MaxProcesses, 10)), 0o644); err != nil {
			_ = syscall.Rmdir(pidsDir)
			iso.uids.Release(id)
			return nil, fmt.Errorf("limiting the pids cgroup %s: %w", pidsDir, err)
		}
		ident.pidsDir = pidsDir
	}
	return ident, nil
}

// Own gives the instance's directory and everything in it to the
// instance (the rep wrote its assets as root), the directory itself
// mode 0700. The rep keeps nothing there that it writes or reads back
// later (its log and pid file are beside the directory, in the data dir
// no instance sees): whatever is in a directory its instance owns, the
// instance can replace — with a symbolic link to a file only root may
// read, say.
func (ident *Identity) Own() error {
	if ident == nil {
		return nil
	}
	err := filepath.WalkDir(ident.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, int(ident.UID), int(ident.GID))
	})
	if err != nil {
		return fmt.Errorf("giving %s to uid %d: %w", ident.dir, ident.UID, err)
	}
	return os.Chmod(ident.dir, 0o700)
}

// Release frees the uid and removes the pids cgroup, once nothing of the
// instance runs.
func (ident *Identity) Release() {
	if ident == nil {
		return
	}
	if ident.pidsDir != "" {
		_ = syscall.Rmdir(ident.pidsDir)
	}
	ident.iso.uids.Release(ident.UID)
}

// Action is one program an instance runs (its setup or its action).
type Action struct {
	// Path is absolute, and so is Dir.
	Path string
	Args []string
	Env  []string
	Dir  string
	// WaitDelay is the init command's (see exec.Cmd.WaitDelay).
	WaitDelay time.Duration
}

// Process is an instance's init, running.
type Process struct {
	cmd    *exec.Cmd
	config *os.File
	status *bufio.Reader
	file   *os.File
}

// Cmd is the init's command: Wait for it, signal its process group.
func (p *Process) Cmd() *exec.Cmd { return p.cmd }

// Start starts the instance's init, which builds the instance's root and
// waits. attr is the init's SysProcAttr (process group, parent death
// signal), to which Start adds the namespaces. Once the init is ready it
// is put in the instance's pids cgroup and joined(pid) runs (the rep puts
// it in a memory cgroup there); then the action starts, as the instance's
// uid, inside them. An error means nothing runs any more.
func (ident *Identity) Start(a Action, stdout, stderr io.Writer, attr *syscall.SysProcAttr, joined func(pid int) error) (*Process, error) {
	cfg := ident.iso.initConfig(ident.dir, ident.tmpfsBytes)
	cfg.BindPorts = ident.bindPorts
	cfg.UID, cfg.GID = ident.UID, ident.GID
	cfg.Path, cfg.Args, cfg.Env, cfg.Dir = a.Path, a.Args, a.Env, a.Dir
	p, err := start(cfg, stdout, stderr, a.WaitDelay, attr)
	if err != nil {
		return nil, err
	}
	pid := p.cmd.Process.Pid
	kill := func(err error) (*Process, error) {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = p.cmd.Wait()
		p.close()
		return nil, err
	}
	if ident.pidsDir != "" {
		if err := os.WriteFile(filepath.Join(ident.pidsDir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return kill(fmt.Errorf("joining the pids cgroup %s: %w", ident.pidsDir, err))
		}
	}
	if joined != nil {
		if err := joined(pid); err != nil {
			return kill(err)
		}
	}
	if _, err := p.config.Write([]byte("g")); err != nil {
		// Gone: its last report says why.
		if said := p.expect("started"); said != nil {
			err = said
		}
		return kill(fmt.Errorf("telling the init to start: %w", err))
	}
	p.config.Close()
	p.config = nil
	if err := p.expect("started"); err != nil {
		_ = p.cmd.Wait()
		p.close()
		return nil, err
	}
	return p, nil
}

// start starts an init with cfg and waits until it is ready (or failed).
func start(cfg initConfig, stdout, stderr io.Writer, waitDelay time.Duration, attr ...*syscall.SysProcAttr) (*Process, error) {
	configR, configW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		configR.Close()
		configW.Close()
		return nil, err
	}
	sys := &syscall.SysProcAttr{}
	if len(attr) > 0 && attr[0] != nil {
		copied := *attr[0]
		sys = &copied
	}
	sys.Cloneflags |= syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC
	cmd := &exec.Cmd{
		Path:        "/proc/self/exe",
		Args:        []string{initArg0},
		Env:         []string{},
		Dir:         "/",
		Stdout:      stdout,
		Stderr:      stderr,
		ExtraFiles:  []*os.File{configR, statusW},
		SysProcAttr: sys,
		WaitDelay:   waitDelay,
	}
	err = cmd.Start()
	configR.Close()
	statusW.Close()
	if err != nil {
		configW.Close()
		statusR.Close()
		return nil, fmt.Errorf("starting the instance's init: %w", err)
	}
	p := &Process{cmd: cmd, config: configW, status: bufio.NewReader(statusR), file: statusR}
	if err := json.NewEncoder(configW).Encode(cfg); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		p.close()
		return nil, fmt.Errorf("configuring the instance's init: %w", err)
	}
	if err := p.expect("ready"); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		p.close()
		return nil, err
	}
	return p, nil
}

// expect reads the init's next report, which must be want.
func (p *Process) expect(want string) error {
	line, err := readStatusLine(p.status)
	switch {
	case err != nil:
		return fmt.Errorf("the instance's init ended without a word: %w", err)
	case strings.HasPrefix(line, "error "):
		return errors.New(strings.TrimPrefix(line, "error "))
	case line != want:
		return fmt.Errorf("the instance's init said %q, not %q", line, want)
	}
	return nil
}

// Exit says how the action ended, for a person ("exited with code 3",
// "killed by signal 9"), once Wait returned: as the init reported it, or,
// when the init itself was killed (the rep's SIGKILL takes the whole
// namespace), how the init ended. ok is false when there was no report.
func (p *Process) Exit() (reason string, ok bool) {
	defer p.close()
	line, err := readStatusLine(p.status)
	if err != nil {
		return "", false
	}
	if n, found := strings.CutPrefix(line, "exit "); found {
		return "exited with code " + n, true
	}
	if n, found := strings.CutPrefix(line, "signal "); found {
		return "killed by signal " + n, true
	}
	return "", false
}

func (p *Process) close() {
	if p.config != nil {
		p.config.Close()
		p.config = nil
	}
	if p.file != nil {
		p.file.Close()
		p.file = nil
	}
}

// detectPidsCgroup finds where instances' pids cgroups go: under the
// rep's own cgroup of the cgroup v1 pids controller mounted at
// /sys/fs/cgroup/pids (as on hybrid hosts). It returns "" and why not
// when there is none or it cannot be written. (On a pure cgroup v2 host,
// RLIMIT_NPROC of the instance's own uid bounds its processes.)
func detectPidsCgroup(selfCgroupFile string) (string, string) {
	data, err := os.ReadFile(selfCgroupFile)
	if err != nil {
		return "", err.Error()
	}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || parts[1] != "pids" {
			continue
		}
		dir := filepath.Join("/sys/fs/cgroup/pids", parts[2])
		probe := filepath.Join(dir, fmt.Sprintf("corkboard-probe-%d", os.Getpid()))
		if err := os.Mkdir(probe, 0o755); err != nil {
			return "", fmt.Sprintf("cannot create a cgroup in %s: %v", dir, err)
		}
		_ = syscall.Rmdir(probe)
		return dir, ""
	}
	return "", "no cgroup v1 pids controller"
}
