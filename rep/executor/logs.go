package executor

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"code.cloudfoundry.org/lager/v3"
)

// An instance's log takes both its stdout and its stderr, in the order
// the instance wrote them, plus the rep's own lines about it (prefixed
// "[rep <time>]"). One file keeps that order for `cork logs`; two files
// would lose it.
//
// The file is capped (ExecutorConfig.LogLimit): when it would grow past
// the limit it is renamed to its name+".1", replacing the one before, and
// a fresh one is started. So an instance's logs never take more than
// twice the limit, however much it writes.
//
// It is beside the instance's working directory, not in it, as the pid
// file is: DataDir/instances/.<instance_guid>.log (and .log.1). An
// isolated instance owns its directory and everything in it, so a log
// there could be renamed by the instance and replaced with a symbolic
// link, a FIFO or a directory — and the rep, as root, would then read
// another file to a client as the instance's log, block opening it, or
// write the instance's output into it when it rotates. Beside the
// directory it is in the rep's data dir, which no isolated instance sees.
// (Instance guids never start with a dot, so no directory is named so.)
const instanceLogSuffix = ".log"

// rotatedLogSuffix names the previous log of an instance: .<guid>.log.1.
const rotatedLogSuffix = ".1"

// instanceLogPath is the log of the instance whose working directory is
// dir.
func instanceLogPath(dir string) string {
	return filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+instanceLogSuffix)
}

// removeInstanceLog deletes the log of the instance whose working
// directory is dir, and the one its last rotation left.
func removeInstanceLog(dir string) error {
	path := instanceLogPath(dir)
	err := os.Remove(path)
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	if rotatedErr := os.Remove(path + rotatedLogSuffix); rotatedErr != nil && !errors.Is(rotatedErr, os.ErrNotExist) && err == nil {
		err = rotatedErr
	}
	return err
}

// instanceLog writes an instance's log: what the copy from its output
// pipe brings (Write) and the rep's own lines (repLine), one at a time,
// rotating the file at the limit. It is safe for concurrent use.
type instanceLog struct {
	path   string
	limit  int64
	logger lager.Logger

	mu     sync.Mutex
	file   *os.File // nil after a failed reopen: output is dropped until one works
	size   int64    // of file, counted rather than asked for
	closed bool
	// midLine is true when the last byte written was not a newline: the
	// app left a line unfinished, and a rep line must not be glued to it.
	// It belongs to the stream, not the file, so it outlives a rotation.
	midLine bool
	// failing is true from a failed write, rename or open to the next one
	// that works, so a full disk is logged once rather than per write.
	failing bool
}

// openInstanceLog opens (or creates) the log of the instance whose
// working directory is dir (instanceLogPath). A log kept from an
// earlier instance with the same guid is appended to; if it is already
// past the limit, the first write rotates it.
func openInstanceLog(dir string, limit int64, logger lager.Logger) (*instanceLog, error) {
	path := instanceLogPath(dir)
	// Read-write, to look at the last byte of a log kept from before.
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening instance log: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("opening instance log: %w", err)
	}
	l := &instanceLog{path: path, limit: limit, logger: logger, file: f, size: info.Size()}
	if l.size > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, l.size-1); err == nil {
			l.midLine = last[0] != '\n'
		}
	}
	return l, nil
}

// Write appends the instance's output. It never fails: what cannot be
// written is dropped (and the failure logged), so the copy from the pipe
// goes on and the instance is never left blocked on a full pipe.
func (l *instanceLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.write(p)
	return len(p), nil
}

// repLine writes a line of the rep's own, so a person reading the log sees
// what happened to the process. When the app left a line unfinished, the
// rep's line starts on a new one rather than in the middle of the app's.
func (l *instanceLog) repLine(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	prefix := ""
	if l.midLine {
		prefix = "\n"
	}
	l.write(fmt.Appendf(nil, "%s[rep %s] %s\n", prefix, time.Now().UTC().Format(time.RFC3339), line))
}

// Close closes the file; later writes are dropped.
func (l *instanceLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.file == nil {
		return nil
	}
	err := l.file.Close()
	l.file = nil
	return err
}

// write needs l.mu held. It fills the file up to the limit and rotates,
// as often as p needs. A rotation cuts after the last whole line that
// fits, so that lines stay whole in each file, unless no line ends within
// the limit (a huge line); then the file is filled to the brim.
func (l *instanceLog) write(p []byte) {
	if l.closed || len(p) == 0 {
		return
	}
	l.midLine = p[len(p)-1] != '\n'
	for {
		room := l.limit - l.size
		if int64(len(p)) <= room {
			l.append(p)
			return
		}
		n := 0
		if room > 0 {
			if i := bytes.LastIndexByte(p[:room], '\n'); i >= 0 {
				n = i + 1
			} else if l.size == 0 {
				n = int(room)
			}
		}
		l.append(p[:n])
		p = p[n:]
		// Progress is certain: after a rotation size is 0, so the next
		// round either writes all of p or at least one byte of it.
		l.rotate()
	}
}

// append needs l.mu held.
func (l *instanceLog) append(p []byte) {
	if len(p) == 0 {
		return
	}
	if l.file == nil {
		l.openFresh()
		if l.file == nil {
			return
		}
	}
	n, err := l.file.Write(p)
	l.size += int64(n)
	l.noteResult("writing", err)
}

// rotate needs l.mu held. It renames the log to its ".1" and starts a
// fresh one. Should the rename fail, opening the fresh one truncates the
// log instead: its lines are lost, the cap holds.
func (l *instanceLog) rotate() {
	if l.file != nil {
		l.file.Close()
		l.file = nil
	}
	l.size = 0
	if err := os.Rename(l.path, l.path+rotatedLogSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
		l.noteResult("rotating", err)
	}
	l.openFresh()
}

// openFresh needs l.mu held; on an error l.file stays nil.
func (l *instanceLog) openFresh() {
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_TRUNC, 0o600)
	l.noteResult("opening", err)
	if err == nil {
		l.file = f
		l.size = 0
	}
}

// noteResult needs l.mu held; it logs the first error of a streak.
func (l *instanceLog) noteResult(what string, err error) {
	if err == nil {
		l.failing = false
		return
	}
	if !l.failing {
		l.logger.Error("instance-log-"+what+"-failed", err, lager.Data{"path": l.path})
	}
	l.failing = true
}
