package isolation

import (
	"fmt"
	"runtime"
	"syscall"
	"unsafe"
)

// Landlock's TCP rules (confineNetwork) govern TCP sockets alone, and a
// Multipath TCP socket — socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP),
// which Go 1.24's net.Listen opens by default where the kernel has it
// (net.mptcp.enabled, on by default) — binds any port whatever the rules
// say. So an instance whose binds are confined may not open one: a
// seccomp filter answers socket(2) with IPPROTO_MPTCP EPROTONOSUPPORT,
// what a kernel without MPTCP answers, and programs that try MPTCP first
// (Go's listeners and dialers) fall back to plain TCP, which Landlock
// confines.
//
// The filter sees the native system call table of the rep's architecture
// (and, on amd64, its x32 numbers). A 32-bit program on an amd64 cell
// with IA-32 emulation reaches socket(2) through socketcall(2) too, whose
// protocol argument is in memory a filter cannot read; such a program is
// not confined by this filter (docs/security.md).
const (
	ipprotoMPTCP = 262 // IPPROTO_MPTCP

	seccompSetModeFilter = 1 // SECCOMP_SET_MODE_FILTER

	seccompRetAllow = 0x7fff0000
	seccompRetErrno = 0x00050000

	bpfLdWAbs = 0x20 // BPF_LD | BPF_W | BPF_ABS
	bpfJeqK   = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
	bpfRetK   = 0x06 // BPF_RET | BPF_K

	x32SyscallBit = 0x40000000
)

// seccompData offsets (struct seccomp_data): nr, arch, then the
// arguments, 8 bytes each; a little-endian argument's low word is first.
const (
	offsetNr    = 0
	offsetArch  = 4
	offsetArg2  = 16 + 2*8
	auditArch64 = 0x80000000 | 0x40000000 // __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE
)

type sockFilter struct {
	code uint16
	jt   uint8
	jf   uint8
	k    uint32
}

type sockFprog struct {
	len    uint16
	filter *sockFilter
}

// nativeArch is the AUDIT_ARCH_ value of the rep's architecture, its
// socket(2) number and its seccomp(2) number; ok is false where this
// package knows none of them.
func nativeArch() (arch, socketNr uint32, seccompNr uintptr, ok bool) {
	switch runtime.GOARCH {
	case "amd64":
		return auditArch64 | 62, 41, 317, true // AUDIT_ARCH_X86_64 (EM_X86_64)
	case "arm64":
		return auditArch64 | 183, 198, 277, true // AUDIT_ARCH_AARCH64 (EM_AARCH64)
	}
	return 0, 0, 0, false
}

// mptcpFilter is the BPF program: socket(2) of the native table (and, on
// amd64, of x32) with protocol IPPROTO_MPTCP fails with EPROTONOSUPPORT;
// every other call is allowed.
func mptcpFilter(arch, socketNr uint32) []sockFilter {
	deny := uint32(seccompRetErrno | uint32(syscall.EPROTONOSUPPORT))
	x32Socket := socketNr | x32SyscallBit
	if runtime.GOARCH != "amd64" {
		x32Socket = socketNr // the same test twice: no x32 table
	}
	return []sockFilter{
		{code: bpfLdWAbs, k: offsetArch},
		{code: bpfJeqK, jt: 0, jf: 6, k: arch}, // another table: allow
		{code: bpfLdWAbs, k: offsetNr},
		{code: bpfJeqK, jt: 1, jf: 0, k: socketNr},
		{code: bpfJeqK, jt: 0, jf: 3, k: x32Socket}, // not socket(2): allow
		{code: bpfLdWAbs, k: offsetArg2},
		{code: bpfJeqK, jt: 0, jf: 1, k: ipprotoMPTCP},
		{code: bpfRetK, k: deny},
		{code: bpfRetK, k: seccompRetAllow},
	}
}

// refuseMPTCP installs mptcpFilter on this thread, which every process it
// starts inherits. It needs no_new_privs first.
func refuseMPTCP() error {
	arch, socketNr, seccompNr, ok := nativeArch()
	if !ok {
		return fmt.Errorf("refusing Multipath TCP sockets: no seccomp filter for %s", runtime.GOARCH)
	}
	filter := mptcpFilter(arch, socketNr)
	prog := sockFprog{len: uint16(len(filter)), filter: &filter[0]}
	if _, _, errno := syscall.Syscall(seccompNr, seccompSetModeFilter, 0, uintptr(unsafe.Pointer(&prog))); errno != 0 {
		return fmt.Errorf("refusing Multipath TCP sockets: seccomp: %w", errno)
	}
	return nil
}
