package migrations

// addStopRequested is migration 0005's Go half: it adds
// actual_lrps.stop_requested where the column is missing (see addColumn).
var addStopRequested = addColumn("add_actual_lrps_stop_requested", 1, "actual_lrps", "stop_requested", driver.booleanFalse)
