package models_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// doc.go's "Words" promises one meaning per word across the code, the docs
// and the README. This spec reads the tree for the phrases that gave a word
// its second meaning before the glossary, so that none comes back.
var _ = Describe("The glossary's words", func() {
	misuses := []struct {
		phrase *regexp.Regexp
		word   string
	}{
		{regexp.MustCompile(`(?i)\blease[- ]holders?\b`), "owner: a lease has an owner"},
		{regexp.MustCompile(`(?i)\b(holds|held|holding) (the |a |its )?(convergence )?lease\b`), "owner: a board owns a lease"},
		{regexp.MustCompile(`(?i)\b(index|indices) (is |are )?held\b|\bheld (index|indices)\b`), "cover: a stand-in covers an index"},
		{regexp.MustCompile(`(?i)\bheld by (the )?(window|occupied)\b`), "cover/keep: the window keeps a count"},
		{regexp.MustCompile(`(?i)\b(retire|retired|retiring) (the )?(extra|undesired)\b`), "retire: extras are deleted"},
		{regexp.MustCompile(`(?i)\bmirror'?s? epoch\b`), "epoch: the placement epoch alone"},
		{regexp.MustCompile(`(?i)\bmigration plan\b`), "plan: bbs-migrate prints a preview"},
		{regexp.MustCompile(`(?i)\bedit(s|ed|ing)? (the |a |its )?(active |new )?definition'?s?\b`), "edit: a rollout's limits; a definition is never edited"},
	}
	// Files of the project's own text: Go, protobuf and shell sources, the
	// Makefile and the Markdown docs. Generated code follows the .proto.
	text := regexp.MustCompile(`(\.go|\.proto|\.md|\.sh|/Makefile)$`)
	skip := map[string]bool{".git": true, "node_modules": true, ".data": true, "bin": true}

	It("keeps each word to its one meaning everywhere in the tree", func() {
		root, err := filepath.Abs("..")
		Expect(err).NotTo(HaveOccurred())
		self, err := filepath.Abs("words_test.go")
		Expect(err).NotTo(HaveOccurred())
		var found []string
		files := 0
		err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if skip[d.Name()] {
					return filepath.SkipDir
				}
				return nil
			}
			if !text.MatchString(path) || path == self {
				return nil
			}
			files++
			content, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for n, line := range strings.Split(string(content), "\n") {
				for _, m := range misuses {
					if m.phrase.MatchString(line) {
						rel, _ := filepath.Rel(root, path)
						found = append(found, rel+":"+strconv.Itoa(n+1)+": "+strings.TrimSpace(line)+"  ("+m.word+")")
					}
				}
			}
			return nil
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(files).To(BeNumerically(">", 100), "the walk reads the project's tree")
		Expect(found).To(BeEmpty())
	})

	It("finds each misuse it looks for", func() {
		for _, line := range []string{
			"the lease holder converges", "while it holds the convergence lease", "index 3 is held by occupied index 5",
			"scale-down held by the window", "retire extra instances first", "the mirror's epoch is 0",
			"print the migration plan", "edit the active definition's JSON",
		} {
			hit := false
			for _, m := range misuses {
				hit = hit || m.phrase.MatchString(line)
			}
			Expect(hit).To(BeTrue(), line)
		}
	})
})
