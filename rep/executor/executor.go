package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"sync"
	"syscall"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep/isolation"
)

// Defaults of ExecutorConfig and of definitions that leave a field out.
const (
	DefaultStopTimeout = 10 * time.Second
	// DefaultStartCheckInterval is short so that an instance is routable
	// soon after it answers, whatever the interval of its checks once it
	// is healthy.
	DefaultStartCheckInterval = 500 * time.Millisecond
	DefaultStartTimeout       = 60 * time.Second
	DefaultAddress            = "127.0.0.1"
	DefaultLogLimit           = 10 << 20 // bytes: 10 MiB

	// shutdownTimeout is how long Shutdown lets instances handle SIGTERM
	// before it kills them: the rep is on its way out and should not hang.
	shutdownTimeout = 2 * time.Second
)

// ErrInstanceNotFound is returned (wrapped) for an instance guid the
// executor does not run, or, from Stop, for an instance that exited on its
// own before it was stopped (its Crashed event is on the way).
var ErrInstanceNotFound = errors.New("instance not found")

// ExecutorConfig configures an Executor.
type ExecutorConfig struct {
	// CellID is passed to instances as CELL_ID. Required.
	CellID string
	// DataDir holds the instances' working directories:
	// DataDir/instances/<instance_guid>/. Required.
	DataDir string
	// AppsDir is where a relative action path (and a relative action dir)
	// of a definition without assets resolves; with assets, they resolve
	// in the instance's directory. Empty means the rep's working
	// directory.
	AppsDir string
	// AssetCacheDir keeps the verified downloads of definitions' assets,
	// one file per checksum, shared by the instances of the cell. Empty
	// means DataDir/assets.
	AssetCacheDir string
	// AssetCacheBytes bounds what AssetCacheDir keeps: past it, the least
	// recently used entries that no start uses go. Zero means
	// DefaultAssetCacheBytes.
	AssetCacheBytes int64
	// AllowLinkLocal lets asset downloads connect to link-local and cloud
	// metadata addresses (models.IsLinkLocalOrMetadata), which are
	// refused by default, whatever name or redirect led there.
	AllowLinkLocal bool
	// FileAssetDirs are the directories file:// assets may be read from
	// (absolute; their links are resolved at start); empty refuses every
	// file:// asset. The rep reads them as root for whoever may desire an
	// LRP, so they should hold nothing but droplets.
	FileAssetDirs []string
	// Address is the host address in net info and the address health
	// checks connect to. Empty means 127.0.0.1.
	Address string
	// PortMin and PortMax bound the host ports handed to instances,
	// inclusive. Required.
	PortMin uint32
	PortMax uint32
	// InstanceURL returns the local instance endpoint passed as
	// CORK_INSTANCE_URL (the agent serves it); may be nil.
	InstanceURL func(instanceGuid string) string
	// StopTimeout is how long Stop waits after SIGTERM before SIGKILL.
	// Zero means DefaultStopTimeout.
	StopTimeout time.Duration
	// StartCheckInterval is the pause between health checks while an
	// instance starts, until its first check passes; a definition whose
	// health_check.interval_ms is shorter is checked that often instead.
	// Once healthy, the definition's interval applies. Zero means
	// DefaultStartCheckInterval.
	StartCheckInterval time.Duration
	// LogLimit caps each instance's log, in bytes. When the log would
	// grow past it, it is renamed to its ".1" (replacing the one
	// before) and a fresh log starts, so an instance's logs never
	// take more than 2 × LogLimit of disk. Zero means DefaultLogLimit.
	LogLimit int64
	// MemoryCheckInterval is how often the memory watchdog sums each
	// instance's resident memory, where cgroups do not enforce memory_mb.
	// Zero means 250ms.
	MemoryCheckInterval time.Duration
	// CgroupRoot is where cgroup v2 is mounted: "" finds out
	// (/sys/fs/cgroup), "-" never uses cgroups (the watchdog alone).
	CgroupRoot string
	// Isolation keeps instances apart from the rep and from each other
	// (see package isolation); its Mode "" is "auto". Its DataDir and
	// AppsDir are this config's.
	Isolation isolation.Config
	// Logger may be nil (logs nothing).
	Logger lager.Logger
}

// InstanceSpec is one instance to run.
type InstanceSpec struct {
	ProcessGuid  string
	Index        int32
	InstanceGuid string
	// Definition is what the instance runs, fetched by the agent by
	// definition id.
	Definition *models.LRPDefinition
}

// EventKind says what happened to an instance.
type EventKind int

const (
	// Healthy: the instance passed its first health check; Event.NetInfo
	// says where it answers. Sent at most once per instance.
	Healthy EventKind = iota + 1
	// Crashed: the instance exited without being asked to, or did not
	// become healthy within its start timeout (and was killed);
	// Event.Reason says which. The process is gone and its ports are free
	// when this is sent.
	Crashed
	// Exited: the instance exited after Stop (or Shutdown). The process is
	// gone and its ports are free when this is sent.
	Exited
	// Unhealthy: a healthy instance failed its health check
	// failure_threshold times in a row; Event.Reason says how. The
	// executor leaves the process running and checks it no more: routers
	// may still send it requests, so whoever runs the executor takes it
	// out of service first (the agent: unroutable, grace period, Stop).
	// Sent at most once, after Healthy and before the last event.
	Unhealthy
)

func (k EventKind) String() string {
	switch k {
	case Healthy:
		return "healthy"
	case Crashed:
		return "crashed"
	case Exited:
		return "exited"
	case Unhealthy:
		return "unhealthy"
	default:
		return fmt.Sprintf("EventKind(%d)", int(k))
	}
}

// Event is what the agent reports to the board. Every instance that Run
// started gets exactly one Crashed or Exited event, after at most one
// Healthy and at most one Unhealthy event.
type Event struct {
	InstanceGuid string
	ProcessGuid  string
	Index        int32
	Kind         EventKind
	// NetInfo is set with Healthy.
	NetInfo *models.NetInfo
	// Reason is set with Crashed and Unhealthy, for a person: "exited
	// with code 3", "killed by signal 9", "did not become healthy within
	// 30s: ...", "health check failed 3 times in a row: GET /health on
	// port 8080: 503".
	Reason string
}

// InstanceStatus describes an instance the executor runs (started and not
// yet exited, stopping included).
type InstanceStatus struct {
	ProcessGuid  string
	Index        int32
	InstanceGuid string
	DefinitionId string
	// Healthy is true once the instance passed its first health check.
	Healthy bool
	// Stopping is true once Stop or Shutdown was called for it.
	Stopping  bool
	NetInfo   *models.NetInfo
	Pid       int
	StartedAt time.Time
}

// Executor runs instances as child processes of the rep. It is safe for
// concurrent use.
type Executor struct {
	cfg     ExecutorConfig
	logger  lager.Logger
	ports   *portAllocator
	events  *eventQueue
	workDir *workDirs
	assets  *assetCache
	memory  *memoryGuard
	iso     *isolation.Isolator
	// ctx ends when Shutdown begins, with errShuttingDown: starts that
	// are still downloading or running setup stop at once.
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu        sync.Mutex
	instances map[string]*instance // by instance guid, from Run until exit
	// endedTallies keeps the health checks of instances that ended since
	// the last TakeHealth, by instance.
	endedTallies map[instanceKey]healthTally
	shutDown     bool
	// starting counts Runs past reserve, so Shutdown can wait for them
	// and stop what they start.
	starting sync.WaitGroup
}

// NewExecutor checks cfg, fills in its defaults, makes DataDir/instances,
// and kills whatever a previous rep on the same data dir left running.
func NewExecutor(cfg ExecutorConfig) (*Executor, error) {
	if cfg.CellID == "" {
		return nil, errors.New("ExecutorConfig.CellID is required")
	}
	if cfg.DataDir == "" {
		return nil, errors.New("ExecutorConfig.DataDir is required")
	}
	if cfg.StopTimeout < 0 {
		return nil, fmt.Errorf("ExecutorConfig.StopTimeout must not be negative, got %s", cfg.StopTimeout)
	}
	if cfg.StartCheckInterval < 0 {
		return nil, fmt.Errorf("ExecutorConfig.StartCheckInterval must not be negative, got %s", cfg.StartCheckInterval)
	}
	if cfg.LogLimit < 0 {
		return nil, fmt.Errorf("ExecutorConfig.LogLimit must not be negative, got %d", cfg.LogLimit)
	}
	if cfg.AssetCacheBytes < 0 {
		return nil, fmt.Errorf("ExecutorConfig.AssetCacheBytes must not be negative, got %d", cfg.AssetCacheBytes)
	}
	for _, dir := range cfg.FileAssetDirs {
		if !filepath.IsAbs(dir) {
			return nil, fmt.Errorf("ExecutorConfig.FileAssetDirs must be absolute paths, got %q", dir)
		}
	}
	ports, err := newPortAllocator(cfg.PortMin, cfg.PortMax)
	if err != nil {
		return nil, err
	}
	if cfg.StopTimeout == 0 {
		cfg.StopTimeout = DefaultStopTimeout
	}
	if cfg.StartCheckInterval == 0 {
		cfg.StartCheckInterval = DefaultStartCheckInterval
	}
	if cfg.LogLimit == 0 {
		cfg.LogLimit = DefaultLogLimit
	}
	if cfg.AssetCacheBytes == 0 {
		cfg.AssetCacheBytes = DefaultAssetCacheBytes
	}
	if cfg.Address == "" {
		cfg.Address = DefaultAddress
	}
	if cfg.AppsDir == "" {
		cfg.AppsDir = "."
	}
	if cfg.AppsDir, err = filepath.Abs(cfg.AppsDir); err != nil {
		return nil, fmt.Errorf("ExecutorConfig.AppsDir: %w", err)
	}
	if cfg.DataDir, err = filepath.Abs(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("ExecutorConfig.DataDir: %w", err)
	}
	if cfg.AssetCacheDir == "" {
		cfg.AssetCacheDir = filepath.Join(cfg.DataDir, "assets")
	}
	if cfg.AssetCacheDir, err = filepath.Abs(cfg.AssetCacheDir); err != nil {
		return nil, fmt.Errorf("ExecutorConfig.AssetCacheDir: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = lager.NewLogger("rep")
	}
	logger := cfg.Logger.Session("executor")

	// The data dir holds every instance's directory and log, and the
	// asset cache: the rep's alone.
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("ExecutorConfig.DataDir: %w", err)
	}
	if err := os.Chmod(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("ExecutorConfig.DataDir: %w", err)
	}
	dirs, err := openWorkDirs(filepath.Join(cfg.DataDir, "instances"), logger)
	if err != nil {
		return nil, err
	}
	isoCfg := cfg.Isolation
	isoCfg.DataDir, isoCfg.AppsDir = cfg.DataDir, cfg.AppsDir
	isoCfg.InstancePorts = isolation.PortRange{First: cfg.PortMin, Last: cfg.PortMax}
	// The cache holds every app's downloads, not only the instance's.
	isoCfg.HideDirs = append(slices.Clone(isoCfg.HideDirs), cfg.AssetCacheDir)
	iso, err := isolation.New(isoCfg)
	if err != nil {
		return nil, err
	}
	if iso.Mode() == isolation.Full {
		logger.Info("instances-isolated", lager.Data{"processes": iso.PidsLimit(), "tcp_binds": iso.Binds()})
		if err := iso.BindsUnconfined(); err != nil {
			logger.Info("instance-binds-not-confined", lager.Data{"reason": err.Error(),
				"consequence": "an instance may listen on any free port of the cell's range, and so take the port the rep hands another instance next"})
		}
		// Instances run as uids of their own: an apps dir only the rep's
		// user may enter runs nothing.
		if info, err := os.Stat(cfg.AppsDir); err == nil && info.Mode().Perm()&0o005 != 0o005 {
			logger.Info("apps-dir-closed-to-instances", lager.Data{
				"apps_dir": cfg.AppsDir, "mode": info.Mode().Perm().String(),
				"consequence": "isolated instances cannot run what it holds: make it readable and searchable by others (o+rx)",
			})
		}
	} else {
		why := "isolation is \"none\""
		if err := iso.Unavailable(); err != nil {
			why = err.Error()
		}
		logger.Info("instances-not-isolated", lager.Data{"reason": why, "consequence": "instances run as the rep's own user and see what it sees"})
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	assets, err := openAssetCache(ctx, cfg.AssetCacheDir, cfg.AssetCacheBytes, cfg.AllowLinkLocal, cfg.FileAssetDirs, logger)
	if err != nil {
		cancel(nil)
		return nil, err
	}
	return &Executor{
		cfg:     cfg,
		logger:  logger,
		ports:   ports,
		events:  newEventQueue(),
		workDir: dirs,
		assets:  assets,
		memory: newMemoryGuard(memoryGuardConfig{
			Interval: cfg.MemoryCheckInterval, CgroupRoot: cfg.CgroupRoot, Logger: logger,
			MaxProcesses: iso.MaxProcesses(),
		}),
		iso:          iso,
		ctx:          ctx,
		cancel:       cancel,
		instances:    map[string]*instance{},
		endedTallies: map[instanceKey]healthTally{},
	}, nil
}

// Isolation is how the executor runs instances: isolation.Full or
// isolation.None.
func (e *Executor) Isolation() isolation.Mode {
	return e.iso.Mode()
}

// AssetCacheStats says what the cell's asset cache did and holds.
func (e *Executor) AssetCacheStats() AssetCacheStats {
	return e.assets.Stats()
}

// StopTimeout is how long Stop waits after SIGTERM before SIGKILL
// (ExecutorConfig.StopTimeout, its default filled in).
// SetMaxAssetDownloads sets how many asset downloads the cell runs at
// once (the board's max_asset_downloads_per_cell; 0: no limit). Downloads
// under way when it is lowered finish; the waiting ones begin as
// models.DownloadsToBegin allows.
func (e *Executor) SetMaxAssetDownloads(n int32) {
	e.assets.gate.setLimit(n)
}

func (e *Executor) StopTimeout() time.Duration {
	return e.cfg.StopTimeout
}

// Events delivers every instance's events in the order they happened. The
// agent must drain it; events queue up (without limit) until it does, so a
// slow reader never blocks Run, Stop or an instance's exit.
func (e *Executor) Events() <-chan Event {
	return e.events.out
}

// instanceGuidPattern keeps an instance guid usable as a directory name.
var instanceGuidPattern = regexp.MustCompile(`^[a-zA-Z0-9_-][a-zA-Z0-9_.-]{0,127}$`)

// Run allocates ports, makes the working dir, puts the definition's
// assets in it, runs its setup, starts the process, and health-checks it
// in the background until the definition's start timeout, which counts
// from Run's call (downloads and setup take their share of it), then
// keeps checking. It returns once the process started, with the net info
// the instance will answer on, or with an error naming what was wrong
// (bad spec, bad action path, no free port, a failed download, a failed
// setup, the start timeout passed while it prepared, CancelStart, ...);
// then nothing runs and nothing is held, and when the error came after
// the instance's log was opened the working dir and log are kept as an
// ended instance (see LastEnded). Running an instance guid the executor
// already runs is an error.
func (e *Executor) Run(spec InstanceSpec) (*models.NetInfo, error) {
	began := time.Now()
	if err := validateSpec(spec); err != nil {
		return nil, err
	}
	// Without assets the action is on the cell already: a bad path is
	// refused before anything is held. With assets it is looked for once
	// they are in place.
	path := ""
	if len(spec.Definition.GetAssets()) == 0 {
		var err error
		path, err = resolveExecutable("action.path", e.cfg.AppsDir, appsDirName, spec.Definition.GetAction().GetPath())
		if err != nil {
			return nil, err
		}
	}

	timeout := startTimeout(spec.Definition)
	// Downloads and setup end at the start timeout, on CancelStart, and
	// when the executor shuts down.
	startCtx, cancelStart := context.WithCancelCause(e.ctx)
	defer cancelStart(nil)
	ctx, cancelDeadline := context.WithDeadlineCause(startCtx, began.Add(timeout), startTimeoutError{timeout})
	defer cancelDeadline()
	inst := &instance{
		processGuid:  spec.ProcessGuid,
		index:        spec.Index,
		instanceGuid: spec.InstanceGuid,
		definitionId: spec.Definition.GetDefinitionId(),
		startBegan:   began,
		cancelStart:  cancelStart,
		monitorDone:  make(chan struct{}),
		exited:       make(chan struct{}),
		done:         make(chan struct{}),
	}
	if err := e.reserve(inst); err != nil {
		return nil, err
	}
	defer e.starting.Done()
	check, err := e.start(ctx, inst, spec, path)
	if err != nil {
		e.unreserve(inst)
		return nil, err
	}
	healthCtx, cancelHealth := context.WithCancel(context.Background())
	inst.cancelHealth = cancelHealth
	e.mu.Lock()
	inst.running = true
	e.mu.Unlock()

	logger := e.logger.Session("instance", lager.Data{
		"process_guid": spec.ProcessGuid, "index": spec.Index, "instance_guid": spec.InstanceGuid,
		"definition_id": inst.definitionId, "pid": inst.pid,
	})
	logger.Info("started", lager.Data{"path": inst.cmd.Path, "net_info": inst.netInfo.String()})
	go e.monitor(healthCtx, logger, inst, check, timeout)
	go e.wait(logger, inst)
	return cloneNetInfo(inst.netInfo), nil
}

// start gives inst its ports, working dir and log, then prepares and
// starts its process (see launch). An error before the log is open leaves
// nothing behind; one after it keeps the working dir and its log, as an
// ended instance, so that a person can read what went wrong.
func (e *Executor) start(ctx context.Context, inst *instance, spec InstanceSpec, path string) (check *healthCheck, err error) {
	var undo []func()
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
	}()
	def := spec.Definition

	inst.hostPorts, err = e.ports.allocate(len(def.GetPorts()))
	if err != nil {
		return nil, fmt.Errorf("instance %s: %w", spec.InstanceGuid, err)
	}
	undo = append(undo, func() { e.ports.release(inst.hostPorts) })
	inst.netInfo = netInfo(e.cfg.Address, def.GetPorts(), inst.hostPorts)

	check, err = newHealthCheck(def.GetHealthCheck(), e.cfg.Address, inst.netInfo.GetPorts())
	if err != nil {
		return nil, err
	}

	inst.dir, err = e.workDir.create(spec.InstanceGuid)
	if err != nil {
		return nil, err
	}
	undo = append(undo, func() { e.workDir.remove(spec.InstanceGuid) })
	inst.ident, err = e.iso.Acquire(spec.InstanceGuid, inst.dir, def.GetMemoryMb(), inst.hostPorts)
	if err != nil {
		return nil, fmt.Errorf("instance %s: %w", spec.InstanceGuid, err)
	}
	undo = append(undo, inst.ident.Release)
	processDir := ""
	if len(def.GetAssets()) == 0 {
		processDir, err = resolveDir("action.dir", e.cfg.AppsDir, inst.dir, def.GetAction().GetDir())
		if err != nil {
			return nil, err
		}
	}

	inst.log, err = openInstanceLog(inst.dir, e.cfg.LogLimit, e.logger)
	if err != nil {
		return nil, err
	}
	// From here on failStart cleans up, and keeps the log.
	undo = nil
	if err := e.launch(ctx, inst, spec, path, processDir); err != nil {
		e.failStart(inst, err)
		return nil, err
	}
	return check, nil
}

// launch puts the definition's assets in place, runs the setup, finds the
// action (in the instance's directory when there are assets, where setup
// may have made it), and starts the process. On an error nothing it
// started runs any more.
func (e *Executor) launch(ctx context.Context, inst *instance, spec InstanceSpec, path, processDir string) error {
	def := spec.Definition
	assets := len(def.GetAssets()) > 0
	base, baseName := e.cfg.AppsDir, appsDirName
	if assets {
		if err := e.fetchAssets(ctx, inst, def.GetAssets()); err != nil {
			return err
		}
		// The rep wrote them; the instance runs them, and may change them.
		if err := inst.ident.Own(); err != nil {
			return err
		}
		base, baseName = inst.dir, "the instance's directory"
	}
	instanceURL := ""
	if e.cfg.InstanceURL != nil {
		instanceURL = e.cfg.InstanceURL(spec.InstanceGuid)
	}
	if def.GetSetup() != nil {
		run := setupRun{spec: spec, base: base, baseName: baseName, instanceURL: instanceURL}
		if err := e.runSetup(ctx, inst, run); err != nil {
			return err
		}
	}
	if assets {
		var err error
		if path, err = resolveExecutable("action.path", base, baseName, def.GetAction().GetPath()); err != nil {
			return err
		}
		if processDir, err = resolveDir("action.dir", base, inst.dir, def.GetAction().GetDir()); err != nil {
			return err
		}
	}
	// A cancellation or a timeout that came after the last step still
	// counts: nothing runs yet.
	if ctx.Err() != nil {
		return interruption(ctx, "the start", "")
	}
	if assets || def.GetSetup() != nil {
		inst.preparation = time.Since(inst.startBegan)
	}

	var err error
	inst.output, err = newOutputPipe()
	if err != nil {
		return err
	}
	env := instanceEnv(envInputs{
		spec:        spec,
		cellID:      e.cfg.CellID,
		home:        inst.dir,
		instanceURL: instanceURL,
		ports:       inst.netInfo.GetPorts(),
	})
	newCmd := func() *exec.Cmd {
		cmd := exec.Command(path, def.GetAction().GetArgs()...)
		cmd.Dir = processDir
		cmd.Env = env
		// One pipe for both, which keeps their order (see outputPipe).
		cmd.Stdout = inst.output.w
		cmd.Stderr = inst.output.w
		cmd.SysProcAttr = childProcAttr()
		return cmd
	}
	// Written before the start so the app's first lines follow it.
	inst.log.repLine("starting " + path)
	if inst.ident != nil {
		return e.launchIsolated(inst, isolation.Action{Path: path, Args: def.GetAction().GetArgs(), Env: env, Dir: processDir}, def.GetMemoryMb())
	}
	cmd, err := startCommand(newCmd)
	if err != nil {
		inst.output.abort()
		return fmt.Errorf("instance %s: starting %s: %w", spec.InstanceGuid, path, err)
	}
	inst.output.start(inst.log)

	inst.cmd = cmd
	inst.pid = cmd.Process.Pid
	inst.startedAt = time.Now()
	writePidFile(inst.dir, inst.pid)
	e.limitMemory(inst, def.GetMemoryMb())
	return nil
}

// launchIsolated starts the action through the instance's init. The pid
// file and the memory limit are in place before the action starts, so
// the action and all it starts are under them from the first instruction.
func (e *Executor) launchIsolated(inst *instance, action isolation.Action, memoryMB int32) error {
	proc, err := inst.ident.Start(action, inst.output.w, inst.output.w, childProcAttr(), func(pid int) error {
		inst.pid = pid
		writePidFile(inst.dir, pid)
		e.limitMemory(inst, memoryMB)
		return nil
	})
	if err != nil {
		if inst.memory != nil {
			inst.memory.Stop()
			inst.memory = nil
		}
		removePidFile(inst.dir)
		inst.output.abort()
		return fmt.Errorf("instance %s: starting %s: %w", inst.instanceGuid, action.Path, err)
	}
	inst.output.start(inst.log)
	inst.proc = proc
	inst.cmd = proc.Cmd()
	inst.startedAt = time.Now()
	return nil
}

// limitMemory enforces memory_mb on the instance's process group from
// now on, and says in its log how. A limit that cannot be enforced (no
// /proc: not Linux) is logged, not fatal: the instance runs unlimited.
func (e *Executor) limitMemory(inst *instance, limitMB int32) {
	if limitMB <= 0 {
		return
	}
	watch, err := e.memory.Watch(inst.instanceGuid, inst.pid, limitMB)
	if err != nil {
		inst.logLine("memory limit of %d MB not enforced: %v", limitMB, err)
		e.logger.Error("memory-limit-not-enforced", err, lager.Data{"instance_guid": inst.instanceGuid})
		return
	}
	inst.memory = watch
	inst.logLine("memory limit %d MB, enforced by %s", limitMB, watch.Mechanism())
}

// failStart ends a start that failed after the instance's log was opened:
// the log says why, the ports go back, and the working dir is kept as an
// ended instance, "crashed: <why>" ("stopped: <why>" when the start was
// cancelled), so that GET /v1/logs still shows what happened.
func (e *Executor) failStart(inst *instance, err error) {
	inst.logLine("could not start: %v", err)
	inst.closeLog()
	e.ports.release(inst.hostPorts)
	inst.ident.Release()
	ending := "crashed: " + err.Error()
	if errors.Is(err, context.Canceled) {
		ending = "stopped: " + err.Error()
	}
	e.workDir.finished(EndedInstance{
		ProcessGuid: inst.processGuid, Index: inst.index, InstanceGuid: inst.instanceGuid,
		DefinitionId: inst.definitionId, EndedAt: time.Now(), Ending: ending,
	})
}

// CancelStart stops the start of an instance that is still preparing
// (downloading its assets or running its setup): its Run returns an error
// wrapping context.Canceled. It does nothing to an instance whose process
// started (Stop that) or that it does not know.
func (e *Executor) CancelStart(instanceGuid string) {
	e.mu.Lock()
	inst := e.instances[instanceGuid]
	preparing := inst != nil && !inst.running
	e.mu.Unlock()
	if preparing {
		inst.cancelStart(errStartCanceled)
	}
}

// Stop sends SIGTERM to the instance's process group, SIGKILL after
// StopTimeout, waits until the process is gone and its ports are free, and
// sends Exited. It does not wait a grace period or touch the board (the
// agent does those). Stopping an instance that is already stopping waits
// for it. An unknown instance, or one that exited on its own before Stop,
// gives an error wrapping ErrInstanceNotFound.
func (e *Executor) Stop(instanceGuid string) error {
	inst := e.lookup(instanceGuid)
	if inst == nil {
		return fmt.Errorf("stopping instance %s: %w", instanceGuid, ErrInstanceNotFound)
	}
	return e.stop(inst, e.cfg.StopTimeout)
}

// runningInstances lists the instances whose process has started and not
// yet been reaped, in no order.
func (e *Executor) runningInstances() []*instance {
	e.mu.Lock()
	defer e.mu.Unlock()
	list := make([]*instance, 0, len(e.instances))
	for _, inst := range e.instances {
		if inst.running {
			list = append(list, inst)
		}
	}
	return list
}

// Preparing returns the instance of (processGuid, index) whose start is
// still downloading its assets or running its setup, if there is one: its
// log already says how far it got.
func (e *Executor) Preparing(processGuid string, index int32) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for guid, inst := range e.instances {
		if !inst.running && inst.processGuid == processGuid && inst.index == index {
			return guid, true
		}
	}
	return "", false
}

// Instances lists the instances the executor runs, by process guid, then
// index, then instance guid.
func (e *Executor) Instances() []InstanceStatus {
	list := e.runningInstances()

	statuses := make([]InstanceStatus, 0, len(list))
	for _, inst := range list {
		statuses = append(statuses, inst.status())
	}
	sort.Slice(statuses, func(i, j int) bool {
		a, b := statuses[i], statuses[j]
		if a.ProcessGuid != b.ProcessGuid {
			return a.ProcessGuid < b.ProcessGuid
		}
		if a.Index != b.Index {
			return a.Index < b.Index
		}
		return a.InstanceGuid < b.InstanceGuid
	})
	return statuses
}

// LogTail returns the last lines of the instance's log (its stdout and
// stderr in one file, with lines from the rep marked "[rep]"), reading
// across a rotation: the rotated log, then the current one. It works for running
// instances and for finished ones whose working dir is still kept (the
// last to end of each index, see keepFinished). An unknown instance gives
// an error wrapping ErrInstanceNotFound.
func (e *Executor) LogTail(instanceGuid string, lines int) ([]byte, error) {
	if lines < 1 {
		return nil, fmt.Errorf("lines must be at least 1, got %d", lines)
	}
	if !instanceGuidPattern.MatchString(instanceGuid) {
		return nil, fmt.Errorf("log of instance %q: %w", instanceGuid, ErrInstanceNotFound)
	}
	tail, err := tailLines(e.workDir.path(instanceGuid), lines)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("log of instance %s: %w", instanceGuid, ErrInstanceNotFound)
	}
	return tail, err
}

// LastEnded returns the last instance of (processGuid, index) that ended
// on this cell, while its log is kept (see EndedInstance and LogTail).
func (e *Executor) LastEnded(processGuid string, index int32) (EndedInstance, bool) {
	return e.workDir.lastEnded(processGuid, index)
}

// Ended returns what is known of an instance that ended and whose log is
// kept; false for one that still runs, is unknown, or was left by an
// earlier rep on the data dir.
func (e *Executor) Ended(instanceGuid string) (EndedInstance, bool) {
	return e.workDir.ended(instanceGuid)
}

// Shutdown stops every instance at once: SIGTERM, SIGKILL after a short
// timeout (at most StopTimeout, at most 2s), and waits until all are gone.
// Their Exited events are queued like Stop's. Starts still downloading or
// running setup stop at once (their Run fails). Run fails afterwards.
// Used when the rep exits.
func (e *Executor) Shutdown() {
	e.mu.Lock()
	e.shutDown = true
	e.mu.Unlock()
	e.cancel(errShuttingDown)
	e.starting.Wait()

	list := e.runningInstances()

	timeout := min(e.cfg.StopTimeout, shutdownTimeout)
	var wg sync.WaitGroup
	for _, inst := range list {
		wg.Go(func() {
			// An instance that exited on its own has nothing to stop.
			_ = e.stop(inst, timeout)
		})
	}
	wg.Wait()
	e.memory.Close()
	e.logger.Info("shut-down", lager.Data{"instances": len(list)})
}

func validateSpec(spec InstanceSpec) error {
	if !instanceGuidPattern.MatchString(spec.InstanceGuid) {
		return fmt.Errorf("InstanceSpec.InstanceGuid must match %s, got %q", instanceGuidPattern, spec.InstanceGuid)
	}
	if spec.ProcessGuid == "" {
		return errors.New("InstanceSpec.ProcessGuid is required")
	}
	if spec.Index < 0 {
		return fmt.Errorf("InstanceSpec.Index must not be negative, got %d", spec.Index)
	}
	if spec.Definition == nil {
		return errors.New("InstanceSpec.Definition is required")
	}
	if err := spec.Definition.Validate(); err != nil {
		return fmt.Errorf("InstanceSpec.Definition: %w", err)
	}
	return nil
}

func startTimeout(def *models.LRPDefinition) time.Duration {
	if ms := def.GetStartTimeoutMs(); ms > 0 {
		return models.Millis(ms)
	}
	return DefaultStartTimeout
}

// reserve claims inst's guid so two Runs of one guid cannot race.
func (e *Executor) reserve(inst *instance) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.shutDown {
		return fmt.Errorf("instance %s: the executor is shut down", inst.instanceGuid)
	}
	if _, ok := e.instances[inst.instanceGuid]; ok {
		return fmt.Errorf("instance %s already runs on this cell", inst.instanceGuid)
	}
	e.instances[inst.instanceGuid] = inst
	e.starting.Add(1)
	return nil
}

func (e *Executor) unreserve(inst *instance) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.instances, inst.instanceGuid)
}

func (e *Executor) lookup(instanceGuid string) *instance {
	e.mu.Lock()
	defer e.mu.Unlock()
	inst := e.instances[instanceGuid]
	if inst == nil || !inst.running {
		return nil
	}
	return inst
}

func (e *Executor) stop(inst *instance, timeout time.Duration) error {
	if !inst.beginStop() {
		<-inst.done
		return fmt.Errorf("stopping instance %s: it exited before it was stopped: %w", inst.instanceGuid, ErrInstanceNotFound)
	}
	// An instance handling SIGTERM may well fail its health check; that
	// is no crash.
	inst.cancelHealth()
	inst.logLine("stopping: SIGTERM to process group %d", inst.pid)
	signalGroup(inst.pid, syscall.SIGTERM)
	select {
	case <-inst.exited:
	case <-time.After(timeout):
		inst.logLine("still running %s after SIGTERM: SIGKILL to process group %d", timeout, inst.pid)
		signalGroup(inst.pid, syscall.SIGKILL)
	}
	<-inst.done
	return nil
}

// monitor health-checks inst until it is healthy or its start timeout
// passes (then it kills the process; wait reports the crash with the
// reason set here), then keeps checking at the definition's interval
// until ctx ends or the check fails failure_threshold times in a row.
// Then it sends Unhealthy and stops checking; the process runs on.
func (e *Executor) monitor(ctx context.Context, logger lager.Logger, inst *instance, check *healthCheck, timeout time.Duration) {
	defer close(inst.monitorDone)
	if check == nil {
		// PROCESS: running is healthy.
		if inst.markHealthy(e.events) {
			logger.Info("healthy", lager.Data{"check": "process"})
		}
		return
	}

	// The start timeout covers downloads and setup too.
	deadline := inst.startBegan.Add(timeout)
	startInterval := min(e.cfg.StartCheckInterval, check.interval)
	for {
		began := time.Now()
		err := check.run(ctx)
		if ctx.Err() != nil {
			return
		}
		inst.noteCheck(began, err)
		if err == nil {
			break
		}
		if !time.Now().Before(deadline) {
			e.killUnhealthy(logger, inst, startTimeoutReason(timeout, inst.preparation, err))
			return
		}
		if !sleep(ctx, min(startInterval, time.Until(deadline))) {
			return
		}
	}
	if !inst.markHealthy(e.events) {
		return
	}
	logger.Info("healthy", lager.Data{"check": check.String()})

	failures := 0
	for sleep(ctx, check.interval) {
		began := time.Now()
		err := check.run(ctx)
		if ctx.Err() != nil {
			return
		}
		inst.recordCheck(time.Since(began), err != nil)
		inst.noteCheck(began, err)
		if err == nil {
			if failures > 0 {
				inst.logLine("health check passed again after %d failed", failures)
				logger.Info("healthy-again", lager.Data{"failed_checks": failures})
			}
			failures = 0
			continue
		}
		failures++
		if failures < check.threshold {
			inst.logLine("health check failed (%d of %d in a row before it is unhealthy): %v", failures, check.threshold, err)
			logger.Info("health-check-failed", lager.Data{"failures": failures, "threshold": check.threshold, "error": err.Error()})
			continue
		}
		reason := unhealthyReason(failures, err)
		if inst.markUnhealthy(e.events, reason) {
			inst.logLine("unhealthy: %s", reason)
			logger.Info("unhealthy", lager.Data{"reason": reason})
		}
		return
	}
}

// startTimeoutReason says why an instance that never became healthy was
// killed, and how much of its start timeout went to downloads and setup,
// if it had any: "did not become healthy within 30s (downloads and setup
// took 21.5s of it): GET /health on port 8080: 503".
func startTimeoutReason(timeout, preparation time.Duration, last error) string {
	if preparation > 0 {
		return fmt.Sprintf("%s%s (downloads and setup took %s of it): %v", models.CrashNeverHealthy, timeout, formatDuration(preparation), last)
	}
	return fmt.Sprintf("%s%s: %v", models.CrashNeverHealthy, timeout, last)
}

// unhealthyReason says why a healthy instance was judged unhealthy, with
// the last check's failure.
func unhealthyReason(failures int, last error) string {
	if failures == 1 {
		return models.CrashHealthCheckFailed + ": " + last.Error()
	}
	return fmt.Sprintf("%s %d times in a row: %v", models.CrashHealthCheckFailed, failures, last)
}

// killUnhealthy kills an instance that never became healthy. It was never
// routable, so nothing needs to learn of it first.
func (e *Executor) killUnhealthy(logger lager.Logger, inst *instance, reason string) {
	if !inst.setCrashReason(reason) {
		return
	}
	logger.Info("unhealthy", lager.Data{"reason": reason})
	inst.logLine("%s: SIGKILL to process group %d", reason, inst.pid)
	signalGroup(inst.pid, syscall.SIGKILL)
}

// wait reaps the process, cleans up after it and sends its last event.
func (e *Executor) wait(logger lager.Logger, inst *instance) {
	waitErr := inst.cmd.Wait()
	// Whatever the leader left behind in its group goes with it.
	signalGroup(inst.pid, syscall.SIGKILL)
	// The rep's last lines about the instance come after all it wrote.
	if inst.output.drain(outputDrainTimeout) {
		inst.logLine("output still held open %s after the process group died, by a process that left it: closed the rep's end", outputDrainTimeout)
		logger.Info("output-pipe-held-open", lager.Data{"waited": outputDrainTimeout.String()})
	}
	removePidFile(inst.dir)
	exitReason := describeExit(inst.cmd.ProcessState, waitErr)
	if inst.proc != nil {
		// The init reports how the action ended; killed itself, it
		// took the action with it and describeExit says how.
		if reason, ok := inst.proc.Exit(); ok {
			exitReason = reason
		}
	}
	stopping, crashReason, unhealthyReason := inst.markExited()
	if inst.memory != nil {
		// Killed for its memory, it says so rather than "killed by
		// signal 9".
		if reason, exceeded := inst.memory.Exceeded(); exceeded && crashReason == "" {
			crashReason = reason
		}
		inst.memory.Stop()
	}
	inst.ident.Release()
	close(inst.exited)

	inst.cancelHealth()
	<-inst.monitorDone
	e.ports.release(inst.hostPorts)

	ev := Event{InstanceGuid: inst.instanceGuid, ProcessGuid: inst.processGuid, Index: inst.index}
	ended := EndedInstance{
		ProcessGuid: inst.processGuid, Index: inst.index, InstanceGuid: inst.instanceGuid,
		DefinitionId: inst.definitionId,
	}
	switch {
	case stopping:
		ev.Kind = Exited
		ended.Ending = "stopped: " + exitReason
		if unhealthyReason != "" {
			ended.Ending = "unhealthy, then stopped: " + unhealthyReason
		}
		inst.logLine("stopped: %s", exitReason)
		logger.Info("exited", lager.Data{"exit": exitReason})
	case crashReason != "":
		ev.Kind, ev.Reason = Crashed, crashReason
		ended.Ending = "crashed: " + crashReason
		inst.logLine("crashed: %s (%s)", crashReason, exitReason)
		logger.Info("crashed", lager.Data{"reason": crashReason, "exit": exitReason})
	default:
		ev.Kind, ev.Reason = Crashed, exitReason
		ended.Ending = "crashed: " + exitReason
		inst.logLine("crashed: %s", exitReason)
		logger.Info("crashed", lager.Data{"reason": exitReason})
	}
	inst.closeLog()

	e.mu.Lock()
	delete(e.instances, inst.instanceGuid)
	e.keepEndedTallyLocked(inst)
	e.mu.Unlock()
	ended.EndedAt = time.Now()
	e.workDir.finished(ended)

	e.events.push(ev)
	close(inst.done)
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
