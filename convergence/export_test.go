package convergence

// Pure helpers, exported for the table tests in package convergence_test.
var (
	NormalizeTags = normalizeTags
	IncludesAll   = includesAll
	JoinWithAnd   = joinWithAnd
)

// SpliceGuids is spliceRuns over rows that are their own guids.
func SpliceGuids(rows, fresh, changed []string) []string {
	return spliceRuns(rows, fresh, changed, func(s *string) string { return *s })
}
