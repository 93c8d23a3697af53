package isolation

// Config configures an Isolator.
type Config struct {
	// Mode is the configured mode; "" is Auto.
	Mode Mode
	// UIDs is the range instances' uids and gids come from; zero is
	// DefaultUIDFirst, DefaultUIDCount.
	UIDs UIDRange
	// DataDir is the rep's data dir: hidden from instances; the init
	// builds roots under DataDir/isolation.
	DataDir string
	// AppsDir is shown to instances read-only.
	AppsDir string
	// HideFiles and HideDirs are more of the rep's paths (config,
	// certificate, key, CA, logs) that instances must not see.
	HideFiles []string
	HideDirs  []string
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
