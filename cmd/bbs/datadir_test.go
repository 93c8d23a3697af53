package main

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the data dir", func() {
	mode := func(dir string) os.FileMode {
		GinkgoHelper()
		info, err := os.Stat(dir)
		Expect(err).NotTo(HaveOccurred())
		return info.Mode().Perm()
	}

	It("is made 0700", func() {
		dir := filepath.Join(GinkgoT().TempDir(), "a", "data")
		Expect(prepareDataDir(dir)).To(Succeed())
		Expect(mode(dir)).To(Equal(os.FileMode(0o700)))
	})

	It("is tightened to 0700 when it was looser, its contents left alone", func() {
		dir := filepath.Join(GinkgoT().TempDir(), "data")
		Expect(os.Mkdir(dir, 0o755)).To(Succeed())
		Expect(os.Chmod(dir, 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "note"), []byte("kept"), 0o644)).To(Succeed())
		Expect(prepareDataDir(dir)).To(Succeed())
		Expect(mode(dir)).To(Equal(os.FileMode(0o700)))
		Expect(os.ReadFile(filepath.Join(dir, "note"))).To(Equal([]byte("kept")))
	})

	It("is nothing to do without one (a board on Postgres or MySQL)", func() {
		Expect(prepareDataDir("")).To(Succeed())
	})
})
