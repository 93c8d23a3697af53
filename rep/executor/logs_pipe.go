package executor

import (
	"fmt"
	"os"
	"time"
)

// outputDrainTimeout is how long, after an instance's process group is
// dead, the rep waits for its output pipe to close. Only a process that
// left the group (setsid) and kept the pipe can hold it open longer; the
// rep then closes its end, and that process gets EPIPE (or SIGPIPE) on its
// next write instead of the rep waiting on it.
const outputDrainTimeout = 2 * time.Second

// outputBufferSize is how much the copy reads from the pipe at once.
const outputBufferSize = 32 << 10

// outputPipe carries an instance's stdout and stderr to its log. Both are
// the same pipe, so the kernel keeps the order the instance wrote in, as
// with one file. The rep reads it all the time, whatever the log does with
// the bytes, so the instance never blocks on it for long; a rep that dies
// closes its end, so no instance blocks on it forever either.
type outputPipe struct {
	r *os.File
	// w is the instance's end: its stdout and stderr. The rep closes its
	// copy once the process started, so the pipe ends (EOF) when the last
	// process holding it is gone.
	w    *os.File
	done chan struct{} // closed when the copy returns
}

func newOutputPipe() (*outputPipe, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("making the output pipe: %w", err)
	}
	return &outputPipe{r: r, w: w, done: make(chan struct{})}, nil
}

// start closes the rep's copy of the instance's end and copies what the
// instance writes to log until the pipe ends or drain closes it. Call it
// once the process started.
func (p *outputPipe) start(log *instanceLog) {
	p.w.Close()
	go p.copyTo(log)
}

func (p *outputPipe) copyTo(log *instanceLog) {
	defer close(p.done)
	buf := make([]byte, outputBufferSize)
	for {
		n, err := p.r.Read(buf)
		if n > 0 {
			_, _ = log.Write(buf[:n])
		}
		if err != nil {
			// EOF, or drain closed the pipe.
			return
		}
	}
}

// drain waits until the copy has everything the instance wrote: until the
// pipe ends, at most timeout. Then it closes the rep's end and waits for
// the copy to return. It reports whether the pipe was still held open.
// Call it after the instance's process group is dead.
func (p *outputPipe) drain(timeout time.Duration) (heldOpen bool) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		heldOpen = true
	}
	p.r.Close()
	<-p.done
	return heldOpen
}

// abort closes both ends, for a process that never started.
func (p *outputPipe) abort() {
	p.r.Close()
	p.w.Close()
}
