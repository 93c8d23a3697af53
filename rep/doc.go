// Package rep is the cell agent library: it runs a cell's instances as
// real processes and tells the agent what becomes of them.
//
// # The executor
//
// An Executor runs each instance as a child process of the rep:
//
//	exec, err := rep.NewExecutor(rep.ExecutorConfig{CellID: "cell-1", DataDir: dir, PortMin: 61000, PortMax: 61999})
//	netInfo, err := exec.Run(rep.InstanceSpec{ProcessGuid: "hello", Index: 0, InstanceGuid: guid, Definition: def})
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
//   - a log, output.log in its working directory (see Logs). When an
//     instance ends, its directory is kept for its log, in place of the
//     one kept for an earlier instance of the same (process guid, index);
//     at most 32 are kept, the oldest going first (see Kept logs).
//
// The action path resolves this way: absolute as is; with a slash, under
// AppsDir; a bare name under AppsDir, else in the instance's PATH.
//
// # Logs
//
// An instance's stdout and stderr are one pipe, which the rep copies into
// output.log in its working directory: one pipe keeps the order the
// instance wrote in. The rep adds lines of its own, "[rep <time>] ...",
// saying what it did (started, SIGTERM, SIGKILL, how it ended); the last
// of them follows everything the instance wrote.
//
// The log is capped at ExecutorConfig.LogLimit (10 MiB by default): when
// output.log would grow past it, it becomes output.log.1, replacing the
// one before, and a fresh output.log starts. So an instance's logs never
// take more than twice the limit, however much it writes, and its oldest
// lines go first. A rotation cuts after the last whole line that fits,
// unless a single line is longer than the limit. LogTail reads
// output.log.1 then output.log, at most the last MiB of them, so the
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
package rep
