// Package executor runs a cell's instances as real processes and tells
// whoever runs it (the agent, package rep, through its Executor
// interface) what becomes of them. It knows nothing of the board.
//
// # The executor
//
// An Executor runs each instance as a child process of the rep:
//
//	exec, err := executor.NewExecutor(executor.ExecutorConfig{CellID: "cell-1", DataDir: dir, PortMin: 61000, PortMax: 61999})
//	netInfo, err := exec.Run(executor.InstanceSpec{ProcessGuid: "hello", Index: 0, InstanceGuid: guid, Definition: def})
//	for ev := range exec.Events() { ... } // Healthy, maybe Unhealthy, then Crashed or Exited
//	err = exec.Stop(guid)
//
// Each instance gets:
//
//   - a working directory, DataDir/instances/<instance_guid>/, which is
//     also its HOME and, unless the action names a dir, where it starts;
//   - one host port per definition port, from the cell's range, skipping
//     ports other processes listen on and going round the range rather
//     than reusing a just-freed port at once;
//   - its environment (see instanceEnv): PORT, PORT_<container port>,
//     INSTANCE_INDEX, INSTANCE_GUID, PROCESS_GUID, DEFINITION_ID, CELL_ID,
//     CORK_INSTANCE_URL, the definition's env (which cannot override those
//     names), and a minimal PATH and HOME (which it can);
//   - a log, DataDir/instances/.<instance_guid>.log, beside its working
//     directory and out of the instance's reach (see Logs). When an
//     instance ends, its directory is kept with its log, in place of the
//     one kept for an earlier instance of the same (process guid, index);
//     at most 32 are kept, the oldest going first (see Kept logs).
//
// The action path resolves this way: absolute as is; with a slash, under
// AppsDir; a bare name under AppsDir, else in the instance's PATH. For a
// definition with assets, the instance's directory takes AppsDir's place
// ("./hello" and "app/hello" are what the assets put there; a bare name
// is looked for there first, then in PATH), for the run action and the
// setup alike, and a relative action dir resolves there too; the run
// action is looked for once setup is done, so setup may make it.
//
// # Assets and setup
//
// Before anything of an instance runs, Run puts the definition's assets
// in its working directory, in order: each is fetched from its URL (http,
// https, or file for a file on the cell), its SHA-256 checked against the
// definition's, and then an archive (a URL path ending .tgz, .tar.gz or
// .zip) is unpacked into its destination, a directory, while anything
// else is written as the file destination, mode 0755. Unpacking keeps
// file modes (not set-id bits) and refuses an archive with an entry that
// would land outside the destination: an absolute name, "..", a symlink
// leading outside, or a path through such a symlink. Then the setup
// action, if any, runs to completion in the working directory with the
// instance's environment (its own env in place of the run action's) and
// its output in the instance's log, in its own process group; then the
// run action starts.
//
// A failure is never a start. Run returns an error that the agent reports
// as the crash reason ("could not start: " and the error):
//
//	asset http://host/hello-v2.tgz: checksum mismatch: the definition names sha256 3f2a..., the download has 9c1b...
//	asset http://host/hello-v2.tgz: download failed: GET http://host/hello-v2.tgz: connection refused
//	asset http://host/hello-v2.tgz: HTTP 404 Not Found
//	asset http://host/hello-v2.tgz: not a valid .tgz archive: gzip: invalid header
//	asset http://host/hello-v2.tgz: download did not finish within the start timeout of 1m0s (1.2 MB of 6.1 MB)
//	setup exited with code 2: <its last lines, at most 5 and 1 KiB, joined by " | ">
//	setup did not finish within 30s: <its last lines>
//
// The working directory and its log are then kept as an ended instance
// ("crashed: <the error>", see Kept logs), so the download and setup lines
// can still be read. The log tells how preparation goes: "downloading
// asset <url> (sha256 <sum>)", the bytes so far about once a second while
// a download lasts, "asset <url> ready in 1.3s (downloaded 6.1 MB)" or
// "... ready in 2ms (from the cell's cache)", "running setup ...",
// "setup finished in 1.1s", or "could not start: <the error>".
//
// The definition's start timeout covers the whole start: downloads,
// setup (which setup_timeout_ms may bound further) and health checks
// until the first passes all count from Run's call; an instance that
// then does not become healthy in time crashes with "did not become
// healthy within 30s (downloads and setup took 21.5s of it): ...".
// Downloads and setup also stop when the executor shuts down, and on
// CancelStart (the agent calls it for an instance the board wants stopped
// before it started): Run's error then wraps context.Canceled ("asset
// <url>: download stopped (1.2 MB of 6.1 MB): the start was cancelled",
// "setup stopped: the executor is shutting down"), and the kept log's
// ending is "stopped: ...".
//
// A file just written (an asset, or what setup made) can be "busy" for a
// moment when a process forked for another instance still holds the
// descriptor it was written through; starting it is tried again for up
// to about 0.6s rather than fail the start.
//
// # The asset cache
//
// Verified downloads are kept per cell in AssetCacheDir (DataDir/assets),
// one file per checksum named by it; archives are kept as downloaded and
// unpacked anew for each instance, files copied (never linked: an
// instance may change its copy). An asset is looked up by its checksum
// alone, so definitions that name the same bytes at different URLs share
// an entry. Starts that need a checksum being downloaded wait for that
// download rather than start their own; when it fails, each of them gets
// its error, and nothing is kept. A download goes to a temporary file
// that gets its checksum as a name only once verified and synced, so a
// crash never leaves a file whose name lies; such temporary files are
// removed when an executor opens the cache.
//
// Past AssetCacheBytes (1 GiB by default) the least recently used entries
// go, except those a start is using at that moment; an asset larger than
// the whole cache is used and then removed. A rep restarted on the same
// data dir reuses the entries it finds, in the order of their last use
// (their modification time), but does not trust them by name: each is
// hashed again on its first use, and downloaded again if it no longer
// matches (a disk may lose or damage what was written before a crash).
// AssetCacheStats counts downloads, failures, hits and evictions.
//
// # Memory
//
// A definition's memory_mb is enforced on the instance's whole process
// group (see memoryGuard): by a cgroup v2 child with memory.max when the
// rep's own cgroup lets it make one, otherwise by one watchdog goroutine
// per executor that reads /proc every MemoryCheckInterval (250ms), sums
// the resident memory of each watched group and kills a group over its
// limit with SIGKILL. The instance's log says which ("memory limit 64 MB,
// enforced by watchdog: RSS of the process group every 250ms"), and an
// instance killed for its memory crashes with "exceeded its memory limit
// of 64 MB (resident 66.4 MB in 2 processes)" rather than "killed by
// signal 9". memory_mb 0 means no limit.
//
// # Logs
//
// An instance's stdout and stderr are one pipe, which the rep copies into
// its log, .<instance_guid>.log beside its working directory: one pipe
// keeps the order the instance wrote in. Beside, not in: an isolated
// instance owns its directory and could swap a file there for a link
// that the rep would then read or write as root. The rep adds lines of
// its own, "[rep <time>] ...", saying what it did (started, SIGTERM,
// SIGKILL, how it ended); the last of them follows everything the
// instance wrote.
//
// The log is capped at ExecutorConfig.LogLimit (10 MiB by default): when
// it would grow past it, it becomes .<instance_guid>.log.1, replacing
// the one before, and a fresh log starts. So an instance's logs never
// take more than twice the limit, however much it writes, and its oldest
// lines go first. A rotation cuts after the last whole line that fits,
// unless a single line is longer than the limit. LogTail reads the
// rotated log then the current one, at most the last MiB of them, so the
// last lines are right just after a rotation too.
//
// The rep reads the pipe all the time, also while it stops an instance,
// and drops what it cannot write (a full disk), so an instance never waits
// on it for long. A rep that dies closes its end: a process still writing
// gets SIGPIPE rather than blocking. Once an instance's process group is
// dead the rep waits for the pipe to end, at most 2s: only a process that
// left the group can hold it open longer, and the rep then closes its end
// and says so in the log.
//
// # Health
//
// Health checks follow the definition: PROCESS (healthy once started), TCP
// (a connection to the port is accepted) or HTTP (GET path answers 2xx,
// redirects not followed). The check's port is a container port and is
// checked on the host port it maps to, at Address. Each check has the
// definition's health_check.timeout_ms (2s when unset).
//
// While an instance starts, the executor checks every StartCheckInterval
// (500ms; the definition's interval when that is shorter) until the first
// success (Healthy, with the net info) or until the definition's start
// timeout (60s when unset) passes; then it kills the process group with
// SIGKILL and the instance crashes. It was never routable, so nothing has
// to learn of it first.
//
// Once healthy, it checks every health_check.interval_ms (2s when unset).
// A failed check is written to the instance's log and counted; a passing
// one resets the count. After failure_threshold failures in a row (3 when
// unset) the executor sends Unhealthy, with a reason like "health check
// failed 3 times in a row: GET /health on port 8080: 503", and checks no
// more. It leaves the process running: routers may still send it
// requests, so the agent first marks it unroutable on the board, waits
// its stop grace period, stops it, and then reports the crash with that
// reason.
//
// # Endings
//
// Every started instance ends with exactly one event: Exited when Stop or
// Shutdown asked for it, Crashed otherwise, with a reason for a person:
// "exited with code 3", "killed by signal 9", "did not become healthy
// within 30s: TCP connect to port 8080: connection refused". When the
// event arrives the process is reaped, whatever else it left in its
// process group is killed, and its ports are free.
//
// # Kept logs
//
// The executor keeps the working directory, log included, of the last
// instance of each (process guid, index) that ended on the cell, and what
// it knows of its end (EndedInstance: when, and "crashed: exited with code
// 3", "stopped: exited with code 0" or "unhealthy, then stopped: ..."). A
// newer instance of the index that ends replaces it; beyond 32 indices
// the oldest go. So a crashed instance's output can still be read after
// its row on the board, which names no cell once CRASHED, has moved on:
// the rep's GET /v1/logs serves it by process guid and index, headed by a
// line saying which instance it was and how it ended. The log is capped
// like a live one, so kept logs take at most 32 × 2 × LogLimit (besides
// whatever the instances left in their working directories). A rep
// restarted on the same data dir keeps what its predecessor left only by
// instance guid (nothing on disk says which index it ran).
//
// # No orphans
//
// Instances run in their own process group (Stop signals the whole group)
// and, on Linux, with Pdeathsig SIGKILL, so a rep that dies, even by
// SIGKILL, takes its instances with it. Grandchildren are not covered by
// Pdeathsig; a pid file in each working directory lets the next executor
// on the same data dir kill any group left over.
package executor
