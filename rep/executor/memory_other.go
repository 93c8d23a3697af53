//go:build !linux

package executor

import "errors"

// Cgroups are Linux's. Elsewhere the guard has no mechanism at all, and
// Watch says so for any limit it is asked to enforce.

var errNoCgroups = errors.New("cgroups are Linux only")

func detectMemoryCgroup(root, selfCgroupFile string) (string, error) {
	return "", errNoCgroups
}

func cgroupControllerEnabled(dir, controller string) bool { return false }

func createInstanceCgroup(parent, instanceGuid string, pgid int, limitBytes int64, maxProcesses uint64) (string, error) {
	return "", errNoCgroups
}

func cgroupOOMKills(dir string) (int64, error) {
	return 0, errNoCgroups
}

func removeInstanceCgroup(dir string) error {
	return nil
}

func cgroupMemoryCurrent(dir string) (int64, error) {
	return 0, errNoCgroups
}
