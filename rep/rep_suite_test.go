package rep_test

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

func TestRep(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Rep Suite")
}

var (
	// appsDir holds the built hello app, as "hello".
	appsDir string
	// testParentPath is the built rep/internal/testparent.
	testParentPath string
)

var _ = BeforeSuite(func() {
	// Processes start, answer and die on their own clock; a loaded machine
	// may be slow, and none of these waits is a measure of speed.
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)

	hello, err := gexec.Build("github.com/corkboard/corkboard/fixtures/apps/hello")
	Expect(err).NotTo(HaveOccurred())
	appsDir = filepath.Dir(hello)
	Expect(filepath.Base(hello)).To(Equal("hello"))
	// Isolated instances run as uids of their own: the apps dir must let
	// them in, as an operator's must.
	Expect(os.Chmod(appsDir, 0o755)).To(Succeed())

	testParentPath, err = gexec.Build("github.com/corkboard/corkboard/rep/internal/testparent")
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	gexec.CleanupBuildArtifacts()
})

// freePortRange finds n consecutive ports nobody listens on right now,
// below Linux's usual ephemeral range (32768-60999) so that no outgoing
// connection takes one of them in the meantime.
func freePortRange(n int) (uint32, uint32) {
	for range 1000 {
		first := 20000 + rand.IntN(12000-n)
		ok := true
		for port := first; port < first+n; port++ {
			if !portFree(uint32(port)) {
				ok = false
				break
			}
		}
		if ok {
			return uint32(first), uint32(first + n - 1)
		}
	}
	Fail(fmt.Sprintf("no %d consecutive free ports", n))
	return 0, 0
}

func portFree(port uint32) bool {
	l, err := net.Listen("tcp", ":"+strconv.FormatUint(uint64(port), 10))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// processGone reports whether pid no longer runs: no such process, or a
// zombie nobody reaped yet.
func processGone(pid int) bool {
	state, _, ok := procStat(pid)
	return !ok || state == "Z"
}

// groupGone reports whether no live process is left in the process group.
func groupGone(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	Expect(err).NotTo(HaveOccurred())
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		state, group, ok := procStat(pid)
		if ok && group == pgid && state != "Z" {
			return false
		}
	}
	return true
}

// procStat reads a process's state and process group from /proc.
func procStat(pid int) (state string, pgid int, ok bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	// Fields after the parenthesised command name: state, ppid, pgrp, ...
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 3 {
		return "", 0, false
	}
	pgid, _ = strconv.Atoi(fields[2])
	return fields[0], pgid, true
}
