package main_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("cork cell drain", func() {
	var board string

	BeforeEach(func() {
		var store *sqldb.SQLDB
		board, store = startBoardWithStore(nil)
		Expect(store.RegisterCell(context.Background(), &models.Cell{
			CellId: "cell-a", RepUrl: "http://10.0.0.5:1800", Zone: "z1",
			Capacity: &models.CellCapacity{MemoryMb: 1024, DiskMb: 1024, Instances: 10},
		}, time.Minute)).To(Succeed())
	})

	It("drains the cell, prints nothing, and cork cells shows it draining", func() {
		r := runCork(board, "", "cell", "drain", "cell-a")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(r.stdout).To(BeEmpty())

		r = runCork(board, "", "cells", "-o", "table")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(r.lines()).To(HaveLen(2))
		Expect(strings.Fields(r.lines()[1])[:4]).To(Equal([]string{"cell-a", "z1", "yes", "yes"}))

		r = runCork(board, "", "cells")
		Expect(r.code).To(Equal(0), r.stderr)
		Expect(r.stdout).To(ContainSubstring(`"draining":true`))
	})

	It("fails with ResourceNotFound for an unknown cell", func() {
		r := runCork(board, "", "cell", "drain", "cell-nope")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(ContainSubstring("ResourceNotFound"))
		Expect(r.stderr).To(ContainSubstring("cell-nope"))
	})

	It("refuses a missing cell id or subcommand as a usage error", func() {
		Expect(runCork(board, "", "cell", "drain").code).To(Equal(2))
		Expect(runCork(board, "", "cell").code).To(Equal(2))
	})
})
