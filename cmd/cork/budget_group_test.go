package main_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("cork budget-group", func() {
	var board string

	BeforeEach(func() {
		board = startBoard()
	})

	succeed := func(args ...string) result {
		GinkgoHelper()
		r := runCork(board, "", args...)
		Expect(r.code).To(Equal(0), "cork %v: stderr %q", args, r.stderr)
		Expect(r.stderr).To(BeEmpty())
		return r
	}
	describeLine := func(prefix string) string {
		GinkgoHelper()
		for _, line := range succeed("describe", "hello", "-o", "table").lines() {
			if strings.HasPrefix(line, prefix) {
				return strings.Join(strings.Fields(strings.TrimPrefix(line, prefix)), " ")
			}
		}
		Fail("no line " + prefix)
		return ""
	}

	It("sets, lists, replaces and removes groups", func() {
		var set models.BudgetGroup
		parseLines(succeed("budget-group", "set", "checkout", "--max-unavailable", "2"), &set)
		Expect(set.GetName()).To(Equal("checkout"))
		Expect(set.GetMaxUnavailable()).To(Equal("2"))
		Expect(set.GetUpdatedAt()).NotTo(BeZero())
		succeed("budget-group", "set", "search", "--max-unavailable", "10%")
		succeed("budget-group", "set", "checkout", "--max-unavailable", "25%")

		var first, second models.BudgetGroup
		parseLines(succeed("budget-group", "list"), &first, &second)
		Expect(first.GetName()).To(Equal("checkout"))
		Expect(first.GetMaxUnavailable()).To(Equal("25%"))
		Expect(second.GetName()).To(Equal("search"))

		lines := succeed("budget-group", "list", "-o", "table").lines()
		Expect(lines).To(HaveLen(3))
		Expect(strings.Fields(lines[0])).To(Equal([]string{"NAME", "MAX_UNAVAILABLE", "UPDATED", "BY"}))
		Expect(strings.Fields(lines[2])[:2]).To(Equal([]string{"search", "10%"}))

		Expect(succeed("budget-group", "remove", "search").stdout).To(BeEmpty())
		Expect(succeed("budget-group", "list").lines()).To(HaveLen(1))
		r := runCork(board, "", "budget-group", "remove", "search")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(ContainSubstring("ResourceNotFound"))
	})

	It("puts an LRP in a group that describe shows, undefined or not, and keeps its own budget", func() {
		succeed("desire", fixture("hello-local.json"))
		succeed("update", "hello", "--disruption-budget", "1")
		Expect(describeLine("Budget group:")).To(Equal("-"))

		succeed("update", "hello", "--budget-group", "checkout")
		Expect(describeLine("Budget group:")).To(Equal("group checkout (undefined)"))
		Expect(describeLine("Budget:")).To(Equal("1"), "--budget-group keeps the LRP's own budget")

		succeed("budget-group", "set", "checkout", "--max-unavailable", "10%")
		Expect(describeLine("Budget group:")).To(Equal("group checkout (max_unavailable 10% across its LRPs)"))

		succeed("update", "hello", "--disruption-budget", "25%")
		Expect(describeLine("Budget group:")).To(HavePrefix("group checkout "), "--disruption-budget keeps the group")
		succeed("update", "hello", "--budget-group", "")
		Expect(describeLine("Budget group:")).To(Equal("-"))
	})

	It("passes the board's refusal of a bad group, naming the field", func() {
		r := runCork(board, "", "budget-group", "set", "checkout", "--max-unavailable", "two")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(ContainSubstring(`group.max_unavailable: must be a count like "2" or a percent like "25%" (0-100%), got "two"`))
	})

	DescribeTable("refuses what does not go together as a usage error",
		func(want string, args ...string) {
			r := runCork(board, "", args...)
			Expect(r.code).To(Equal(2), r.stderr)
			Expect(r.stderr).To(ContainSubstring(want))
		},
		Entry("no subcommand", "budget-group wants a subcommand", "budget-group"),
		Entry("no --max-unavailable", "set needs --max-unavailable", "budget-group", "set", "checkout"),
		Entry("no name", "", "budget-group", "remove"),
	)
})
