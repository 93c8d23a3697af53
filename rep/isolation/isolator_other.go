//go:build !linux

package isolation

import (
	"errors"
	"io"
	"os/exec"
	"syscall"
	"time"
)

// Elsewhere than Linux there is no isolation: Auto runs instances as the
// rep's user, Full refuses.

type Isolator struct {
	mode        Mode
	unavailable error
}

var errNotLinux = errors.New("isolating instances needs Linux namespaces")

func New(cfg Config) (*Isolator, error) {
	mode, err := Resolve(cfg.Mode, func() error { return errNotLinux })
	if err != nil {
		return nil, err
	}
	iso := &Isolator{mode: mode}
	if cfg.Mode != None {
		iso.unavailable = errNotLinux
	}
	return iso, nil
}

func (iso *Isolator) Unavailable() error { return iso.unavailable }

func (iso *Isolator) Mode() Mode        { return iso.mode }
func (iso *Isolator) PidsLimit() string { return "none" }

func (iso *Isolator) MaxProcesses() uint64 { return 0 }

type Identity struct{ UID, GID uint32 }

func (iso *Isolator) Acquire(string, string, int32, []uint32) (*Identity, error) { return nil, nil }
func (ident *Identity) Own() error                                               { return nil }
func (ident *Identity) Release()                                                 {}
func (iso *Isolator) Binds() string                                              { return "any port" }
func (iso *Isolator) BindsUnconfined() error                                     { return nil }

type Action struct {
	Path      string
	Args      []string
	Env       []string
	Dir       string
	WaitDelay time.Duration
}

type Process struct{ cmd *exec.Cmd }

func (p *Process) Cmd() *exec.Cmd       { return p.cmd }
func (p *Process) Exit() (string, bool) { return "", false }

func (ident *Identity) Start(Action, io.Writer, io.Writer, *syscall.SysProcAttr, func(int) error) (*Process, error) {
	return nil, errNotLinux
}

func OpenFilesLimit(configured uint64) uint64 { return configured }
