package isolation

// Config configures an Isolator.
type Config struct {
	// Mode is the configured mode; "" is Auto.
	Mode Mode
	// UIDs is the range instances' uids and gids come from; zero is
	// DefaultUIDFirst, DefaultUIDCount.
	UIDs UIDRange
	// UIDClaimDir is where the rep claims the uids it hands out, so that
	// no other rep on the host hands out the same (UIDPool); "" is
	// DefaultUIDClaimDir.
	UIDClaimDir string
	// DataDir is the rep's data dir: hidden from instances; the init
	// builds roots under DataDir/isolation.
	DataDir string
	// AppsDir is shown to instances read-only.
	AppsDir string
	// HideFiles and HideDirs are more of the rep's paths (config,
	// certificate, key, CA, logs) that instances must not see.
	HideFiles []string
	HideDirs  []string
	// InstancePorts is the range of host ports the rep hands to
	// instances (BindablePorts); the zero range is unknown.
	InstancePorts PortRange
	// MaxProcesses bounds the processes (and threads) of one instance:
	// RLIMIT_NPROC of its uid, and pids.max where the pids controller
	// exists. Zero means DefaultMaxProcesses.
	MaxProcesses uint64
	// MaxOpenFiles is each process's RLIMIT_NOFILE, at most the rep's own
	// hard limit. Zero means DefaultMaxOpenFiles.
	MaxOpenFiles uint64
}

// Defaults of Config.
const (
	DefaultMaxProcesses = 1024
	DefaultMaxOpenFiles = 65536
)

// WithDefaults is c with each zero field that has a default given it: the
// one home of those defaults, used by New and by the rep's config (whose
// reference shows them).
func (c Config) WithDefaults() Config {
	if c.Mode == "" {
		c.Mode = Auto
	}
	if c.UIDs == (UIDRange{}) {
		c.UIDs = UIDRange{First: DefaultUIDFirst, Count: DefaultUIDCount}
	}
	if c.UIDClaimDir == "" {
		c.UIDClaimDir = DefaultUIDClaimDir
	}
	if c.MaxProcesses == 0 {
		c.MaxProcesses = DefaultMaxProcesses
	}
	if c.MaxOpenFiles == 0 {
		c.MaxOpenFiles = DefaultMaxOpenFiles
	}
	return c
}
