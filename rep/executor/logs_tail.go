package executor

import (
	"bytes"
	"errors"
	"io"
	"os"
)

// maxTailBytes bounds how much of a log LogTail reads, whatever the
// number of lines asked for.
const maxTailBytes = 1 << 20

// tailAttempts is how often tailLines reads again when a rotation
// happened while it read.
const tailAttempts = 3

// tailLines returns the last n lines of the log of the instance whose
// working directory is dir (each with its newline; an unfinished last
// line counts as one), reading at most maxTailBytes from its end. The log
// is the rotated file (.log.1) followed by the current one (.log), so the
// lines are right just after a rotation too, and a line the rotation cut
// in two comes back whole.
func tailLines(dir string, n int) ([]byte, error) {
	path := instanceLogPath(dir)
	for attempt := 1; ; attempt++ {
		buf, cut, stable, err := readLogEnd(path, n)
		if err != nil {
			return nil, err
		}
		if stable || attempt == tailAttempts {
			return lastLines(buf, cut, n), nil
		}
	}
}

// readLogEnd reads the end of the log at path and, when that holds fewer
// than n whole lines, the end of the rotated one before it, at most maxTailBytes
// in all. cut says whether the log goes on before what was read. stable
// is false when the log rotated while it read: what was read may then
// have a gap or a part twice, and the caller reads again.
func readLogEnd(path string, n int) (buf []byte, cut bool, stable bool, err error) {
	rotatedPath := path + rotatedLogSuffix
	// The older file first: a rotation renames the current log onto it, which
	// the check at the end sees.
	rotated, err := os.Open(rotatedPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, false, false, err
	}
	if rotated != nil {
		defer rotated.Close()
	}
	current, err := os.Open(path)
	switch {
	case err == nil:
		defer current.Close()
	case errors.Is(err, os.ErrNotExist) && rotated != nil:
		// Between the rename and the fresh file of a rotation: the
		// current log is empty.
	default:
		return nil, false, false, err
	}

	if current != nil {
		if buf, cut, err = readEnd(current, maxTailBytes); err != nil {
			return nil, false, false, err
		}
	}
	if rotated != nil && !cut && bytes.Count(buf, []byte("\n")) <= n && len(buf) < maxTailBytes {
		older, olderCut, err := readEnd(rotated, maxTailBytes-int64(len(buf)))
		if err != nil {
			return nil, false, false, err
		}
		buf, cut = append(older, buf...), olderCut
	}
	return buf, cut, sameFileAt(rotatedPath, rotated), nil
}

// readEnd reads the last (at most) limit bytes of f and says whether f
// has more before them.
func readEnd(f *os.File, limit int64) ([]byte, bool, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	size := info.Size()
	from := max(0, size-limit)
	buf := make([]byte, size-from)
	n, err := f.ReadAt(buf, from)
	if err != nil && err != io.EOF {
		return nil, false, err
	}
	return buf[:n], from > 0, nil
}

// sameFileAt reports whether path still names f (or, with f nil, still
// names nothing).
func sameFileAt(path string, f *os.File) bool {
	info, err := os.Stat(path)
	if f == nil {
		return errors.Is(err, os.ErrNotExist)
	}
	if err != nil {
		return false
	}
	opened, err := f.Stat()
	return err == nil && os.SameFile(info, opened)
}

// lastLines returns the last n lines of buf. When cut, the first line in
// buf is the cut-off end of a longer one and is left out.
func lastLines(buf []byte, cut bool, n int) []byte {
	lines := bytes.SplitAfter(buf, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if cut && len(lines) > 1 {
		lines = lines[1:]
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return bytes.Join(lines, nil)
}
