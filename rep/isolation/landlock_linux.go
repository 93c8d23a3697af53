package isolation

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"
)

// Landlock (Linux 5.13 and later) lets an unprivileged process give up
// rights for itself and every process it starts, for good. An instance's
// init uses it to confine the action's TCP binds to the instance's own
// ports (ABI 4, Linux 6.7) and, where the kernel has it, to keep the
// action's abstract unix sockets to itself (ABI 6, Linux 6.12): the host's
// network, which instances share, has one abstract namespace, where the
// rep and the host's services may listen.
const (
	sysLandlockCreateRuleset = 444 // the same number on every architecture
	sysLandlockAddRule       = 445
	sysLandlockRestrictSelf  = 446

	landlockCreateRulesetVersion = 1 << 0 // LANDLOCK_CREATE_RULESET_VERSION
	landlockRuleNetPort          = 2      // LANDLOCK_RULE_NET_PORT
	landlockAccessNetBindTCP     = 1 << 0 // LANDLOCK_ACCESS_NET_BIND_TCP
	landlockScopeAbstractUnix    = 1 << 0 // LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET

	// landlockBindABI is the first ABI that can confine TCP binds;
	// landlockScopeABI the first that can scope abstract unix sockets.
	landlockBindABI  = 4
	landlockScopeABI = 6
)

// landlockRulesetAttr is struct landlock_ruleset_attr (ABI 6's size; an
// older kernel takes it as long as what it does not know is zero).
type landlockRulesetAttr struct {
	handledAccessFS, handledAccessNet, scoped uint64
}

// landlockNetPortAttr is struct landlock_net_port_attr.
type landlockNetPortAttr struct {
	allowedAccess, port uint64
}

// landlockABI is the kernel's Landlock ABI version, or an error saying why
// there is none.
func landlockABI() (int, error) {
	v, _, errno := syscall.Syscall(sysLandlockCreateRuleset, 0, 0, landlockCreateRulesetVersion)
	switch {
	case errno == syscall.ENOSYS:
		return 0, errors.New("the kernel has no Landlock (Linux 5.13 or later, CONFIG_SECURITY_LANDLOCK)")
	case errno == syscall.EOPNOTSUPP:
		return 0, errors.New("Landlock is not enabled in this kernel (boot with lsm=...,landlock)")
	case errno != 0:
		return 0, fmt.Errorf("asking the kernel's Landlock ABI: %w", errno)
	}
	return int(v), nil
}

// bindConfinement says why the kernel cannot confine instances' TCP binds
// to their ports; nil when it can.
func bindConfinement(abi int, abiErr error) error {
	if abiErr != nil {
		return abiErr
	}
	if abi < landlockBindABI {
		return fmt.Errorf("the kernel's Landlock is ABI %d; confining TCP binds needs ABI %d (Linux 6.7)", abi, landlockBindABI)
	}
	return nil
}

// confineNetwork has this thread, and every process it starts from now
// on, bind TCP ports in ports alone and, from ABI 6, connect to no
// abstract unix socket but its own processes'. It needs no_new_privs
// first. abi is the kernel's Landlock ABI, at least landlockBindABI.
func confineNetwork(abi int, ports []uint32) error {
	attr := landlockRulesetAttr{handledAccessNet: landlockAccessNetBindTCP}
	if abi >= landlockScopeABI {
		attr.scoped = landlockScopeAbstractUnix
	}
	fd, _, errno := syscall.Syscall(sysLandlockCreateRuleset, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return fmt.Errorf("creating a Landlock ruleset: %w", errno)
	}
	defer syscall.Close(int(fd))
	for _, port := range ports {
		rule := landlockNetPortAttr{allowedAccess: landlockAccessNetBindTCP, port: uint64(port)}
		if _, _, errno := syscall.Syscall6(sysLandlockAddRule, fd, landlockRuleNetPort, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
			return fmt.Errorf("letting the instance bind port %d: %w", port, errno)
		}
	}
	if _, _, errno := syscall.Syscall(sysLandlockRestrictSelf, fd, 0, 0); errno != 0 {
		return fmt.Errorf("confining the instance's binds: %w", errno)
	}
	return nil
}
