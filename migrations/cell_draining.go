package migrations

// addCellDraining is migration 0004's Go half: it adds cells.draining
// where the column is missing (see addColumn).
var addCellDraining = addColumn("add_cells_draining", 1, "cells", "draining", driver.booleanFalse)
