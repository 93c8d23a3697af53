// Package e2e holds the end-to-end tests of a whole local cluster: the
// built bbs, rep, cork and hello binaries, a board on SQLite and two reps
// in two zones running real processes. It has no code of its own; see
// the _test.go files. They run under plain `go test ./...`.
package e2e
