// Package isolation runs a rep's instances apart from the rep and from
// each other (Linux, as root): each in its own PID, mount and IPC
// namespace, under a fresh root that shows the system directories and the
// apps dir read-only, the instance's own directory read-write and a
// private /tmp, and nothing of the rep (data dir, config, certificate,
// key, logs) nor of any other instance; as an unprivileged uid/gid of its
// own, with no_new_privs, an empty capability bounding set, rlimits,
// where the controller exists, a pids cgroup, and, where the kernel has
// Landlock's network rules, TCP binds confined to the instance's own
// ports (BindablePorts).
//
// The rep starts each instance through an init: the rep's own binary
// re-executed (see Command) with a marker argv[0]. This package's init()
// recognises the marker, builds the namespace's root, starts the action as
// the instance's uid and stays its PID 1 until the action ends. Any binary
// that links this package (the rep, and test binaries that link the rep)
// can serve as the init.
package isolation

import (
	"fmt"
)

// Mode is the rep's isolation setting (the rep config's "isolation").
type Mode string

const (
	// Auto isolates instances when the rep can, and otherwise runs them
	// as the rep's own user (and says so).
	Auto Mode = "auto"
	// Full isolates instances, or the rep refuses to start.
	Full Mode = "full"
	// None runs instances as plain child processes with the rep's uid.
	None Mode = "none"
)

// ParseMode reads a configured mode; "" is Auto.
func ParseMode(value string) (Mode, error) {
	switch Mode(value) {
	case "":
		return Auto, nil
	case Auto, Full, None:
		return Mode(value), nil
	}
	return "", fmt.Errorf("must be %q, %q or %q, got %q", Auto, Full, None, value)
}

// Resolve decides whether instances are isolated: configured is the
// rep's mode, unavailable is why this host cannot isolate (nil when it
// can; only asked for when it matters). It returns Full or None, or an
// error naming what is missing when Full was asked for and is not
// possible.
func Resolve(configured Mode, unavailable func() error) (Mode, error) {
	switch configured {
	case None:
		return None, nil
	case Auto, "":
		if unavailable() != nil {
			return None, nil
		}
		return Full, nil
	case Full:
		if err := unavailable(); err != nil {
			return "", fmt.Errorf("isolation \"full\" is not possible here: %w", err)
		}
		return Full, nil
	}
	return "", fmt.Errorf("unknown isolation mode %q", configured)
}
