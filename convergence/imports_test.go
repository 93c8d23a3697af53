package convergence_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// linkedPackage is one package of `go list -deps`.
type linkedPackage struct {
	ImportPath string
	Standard   bool
	Imports    []string
}

// The planner does no I/O: it reads a snapshot and returns a plan. The
// compiler would let anything in; these specs keep out what would talk to
// a database, the network or a metrics registry, and the runner package
// that does all of that (convergence/runner).
var _ = Describe("The planner's imports", func() {
	DescribeTable("link nothing that does I/O, directly or through another package",
		func(forbidden string) {
			linked := plannerDeps()
			for _, p := range linked {
				Expect(within(p.ImportPath, forbidden)).To(BeFalse(),
					"convergence links %s, imported by %s", p.ImportPath, importersOf(linked, p.ImportPath))
			}
		},
		Entry(nil, "database/sql"),
		Entry(nil, "net/http"),
		Entry(nil, "github.com/prometheus"),
		Entry(nil, "github.com/corkboard/corkboard/db"),
		Entry(nil, "github.com/corkboard/corkboard/convergence/runner"),
	)

	// The standard library's net takes a context (models links it through
	// crypto/x509, for certificate identities): that is the library's own
	// business. No package of this module nor of a third party that the
	// planner links may import context.
	It("takes no context, nor does any non-standard package it links", func() {
		linked := plannerDeps()
		Expect(linked).To(ContainElement(HaveField("ImportPath", "github.com/corkboard/corkboard/models")),
			"the list is the planner's dependencies")
		for _, p := range linked {
			if p.Standard {
				continue
			}
			Expect(p.Imports).NotTo(ContainElement("context"), "%s imports context", p.ImportPath)
		}
	})
})

// plannerDeps lists the planner package and every package it links (its
// tests' imports excluded), once for all specs.
func plannerDeps() []linkedPackage {
	GinkgoHelper()
	linked, err := listPlannerDeps()
	Expect(err).NotTo(HaveOccurred())
	Expect(linked).To(ContainElement(HaveField("ImportPath", "github.com/corkboard/corkboard/convergence")))
	return linked
}

var listPlannerDeps = sync.OnceValues(func() ([]linkedPackage, error) {
	return goListDeps("github.com/corkboard/corkboard/convergence")
})

// goListDeps lists pkg and every package it links, as the go command
// sees them.
func goListDeps(pkg string) ([]linkedPackage, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Standard,Imports", pkg)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, stderr.String())
	}
	var linked []linkedPackage
	decoder := json.NewDecoder(&stdout)
	for {
		var p linkedPackage
		err := decoder.Decode(&p)
		if errors.Is(err, io.EOF) {
			return linked, nil
		}
		if err != nil {
			return nil, err
		}
		linked = append(linked, p)
	}
}

// within reports whether path is the package prefix or one under it.
func within(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// importersOf names the linked packages that import path, for a failure
// message that shows where a forbidden package came in.
func importersOf(linked []linkedPackage, path string) []string {
	var importers []string
	for _, p := range linked {
		for _, imported := range p.Imports {
			if imported == path {
				importers = append(importers, p.ImportPath)
			}
		}
	}
	return importers
}
