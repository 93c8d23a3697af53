package executor_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/rep/internal/reptest"
)

func TestExecutor(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Executor Suite")
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

	appsDir = reptest.BuildHello()

	var err error
	testParentPath, err = gexec.Build("github.com/corkboard/corkboard/rep/internal/testparent")
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	gexec.CleanupBuildArtifacts()
})

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
