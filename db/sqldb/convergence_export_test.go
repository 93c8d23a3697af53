package sqldb

// SetSnapshotParts makes ConvergenceSnapshot read in the given number of
// parallel parts once there are minLRPs desired LRPs; restore undoes it.
func SetSnapshotParts(minLRPs, parts int) (restore func()) {
	oldLRPs, oldParts := snapshotPartLRPs, snapshotParts
	snapshotPartLRPs, snapshotParts = minLRPs, func() int { return parts }
	return func() { snapshotPartLRPs, snapshotParts = oldLRPs, oldParts }
}
