// Package rep is the cell agent library: it runs a cell's instances as
// real processes and tells the agent what becomes of them.
//
// # The executor
//
// An Executor runs each instance as a child process of the rep:
//
//	exec, err := rep.NewExecutor(rep.ExecutorConfig{CellID: "cell-1", DataDir: dir, PortMin: 61000, PortMax: 61999})
//	netInfo, err := exec.Run(rep.InstanceSpec{ProcessGuid: "hello", Index: 0, InstanceGuid: guid, Definition: def})
//	for ev := range exec.Events() { ... } // Healthy, then Crashed or Exited
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
//   - a log, output.log in its working directory (see Logs). The
//     directories of the last 32 finished instances are kept for their
//     logs.
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
// checked on the host port it maps to, at Address. Each check has 2s. The
// executor checks every HealthInterval until the first success (Healthy,
// with the net info) or until the definition's start timeout (60s when
// unset) passes; then it keeps checking, and the first failure after
// healthy is a crash. Either failure kills the process group with SIGKILL.
//
// # Endings
//
// Every started instance ends with exactly one event: Exited when Stop or
// Shutdown asked for it, Crashed otherwise, with a reason for a person:
// "exited with code 3", "killed by signal 9", "health check failed: GET
// /health on port 8080: 503", "did not become healthy within 30s: TCP
// connect to port 8080: connection refused". When the event arrives the
// process is reaped, whatever else it left in its process group is
// killed, and its ports are free.
//
// # No orphans
//
// Instances run in their own process group (Stop signals the whole group)
// and, on Linux, with Pdeathsig SIGKILL, so a rep that dies, even by
// SIGKILL, takes its instances with it. Grandchildren are not covered by
// Pdeathsig; a pid file in each working directory lets the next executor
// on the same data dir kill any group left over.
package rep
