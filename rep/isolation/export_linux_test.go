package isolation

import (
	"runtime"
	"syscall"
)

// SocketsOnFilteredThread opens a socket(AF_INET, SOCK_STREAM, protocol)
// for each protocol on a thread of its own that has set no_new_privs and
// installed the init's Multipath TCP filter (refuseMPTCP), and returns
// each socket's error; the thread ends with the call, filter and all.
func SocketsOnFilteredThread(protocols ...int) ([]error, error) {
	type result struct {
		errs []error
		err  error
	}
	done := make(chan result)
	go func() {
		// Never unlocked: the thread goes away with this goroutine.
		runtime.LockOSThread()
		if err := prctl(prSetNoNewPrivs, 1); err != nil {
			done <- result{err: err}
			return
		}
		if err := refuseMPTCP(); err != nil {
			done <- result{err: err}
			return
		}
		var errs []error
		for _, protocol := range protocols {
			fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, protocol)
			if err == nil {
				syscall.Close(fd)
			}
			errs = append(errs, err)
		}
		done <- result{errs: errs}
	}()
	r := <-done
	return r.errs, r.err
}
