package convergence

// Pure helpers, exported for the table tests in package convergence_test.
var (
	NormalizeTags = normalizeTags
	IncludesAll   = includesAll
	JoinWithAnd   = joinWithAnd
)
