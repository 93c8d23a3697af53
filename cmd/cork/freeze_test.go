package main_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("cork freeze", func() {
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

	It("adds a one-off and a recurring window, lists them with the active one, and removes them", func() {
		until := time.Now().Add(time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
		from := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
		var added models.FreezeWindow
		parseLines(succeed("freeze", "add", "release", "--from", from, "--until", until), &added)
		Expect(added.GetName()).To(Equal("release"))
		Expect(added.GetCreatedAt()).NotTo(BeZero())
		// New Year's first millisecond in Berlin: never active while the
		// spec runs, whatever the day.
		parseLines(succeed("freeze", "add", "new-year", "--schedule", "0 0 1 1 *", "--duration", "1ms", "--time-zone", "Europe/Berlin"), &added)
		Expect(added.GetDurationMs()).To(Equal(int64(1)))

		var list models.FreezeWindowsResponse
		parseLines(succeed("freeze", "list"), &list)
		Expect(list.GetWindows()).To(HaveLen(2))
		Expect(list.GetActive()).To(Equal("release"))

		lines := succeed("freeze", "list", "-o", "table").lines()
		Expect(lines).To(HaveLen(3))
		Expect(strings.Fields(lines[0])).To(Equal([]string{"NAME", "WHEN", "DURATION", "TIME", "ZONE", "ACTIVE"}))
		Expect(lines[1]).To(HavePrefix("new-year"))
		Expect(lines[1]).To(ContainSubstring("0 0 1 1 *"))
		Expect(lines[1]).To(ContainSubstring("Europe/Berlin"))
		Expect(lines[1]).To(HaveSuffix("no"))
		Expect(lines[2]).To(HavePrefix("release"))
		Expect(lines[2]).To(HaveSuffix("until " + until))

		Expect(succeed("freeze", "remove", "release").stdout).To(BeEmpty())
		parseLines(succeed("freeze", "list"), &list)
		Expect(list.GetWindows()).To(HaveLen(1))
		Expect(list.GetActive()).To(BeEmpty())

		r := runCork(board, "", "freeze", "remove", "release")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(ContainSubstring("ResourceNotFound"))
	})

	It("passes the board's refusal of a bad window, naming the field", func() {
		r := runCork(board, "", "freeze", "add", "x", "--schedule", "0 18 * * 9", "--duration", "1h")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(ContainSubstring(`window.schedule: day-of-week field "9": "9" is outside 0-7`))
	})

	DescribeTable("refuses flags that do not go together as a usage error",
		func(want string, args ...string) {
			r := runCork(board, "", args...)
			Expect(r.code).To(Equal(2), r.stderr)
			Expect(r.stderr).To(ContainSubstring(want))
		},
		Entry("no subcommand", "freeze wants a subcommand", "freeze"),
		Entry("no name", "", "freeze", "add", "--from", "2026-01-01T00:00:00Z", "--until", "2026-01-02T00:00:00Z"),
		Entry("neither kind", "add needs --schedule and --duration, or --from and --until", "freeze", "add", "x"),
		Entry("both kinds", "not both", "freeze", "add", "x", "--schedule", "0 0 * * *", "--duration", "1h", "--from", "2026-01-01T00:00:00Z"),
		Entry("a schedule without a duration", "needs both --schedule and --duration", "freeze", "add", "x", "--schedule", "0 0 * * *"),
		Entry("from without until", "needs both --from and --until", "freeze", "add", "x", "--from", "2026-01-01T00:00:00Z"),
		Entry("a negative duration", "--duration must be a positive", "freeze", "add", "x", "--schedule", "0 0 * * *", "--duration", "-1h"),
		Entry("an override without a reason", "--override-freeze needs --reason", "update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--override-freeze"),
		Entry("a reason without an override", "--reason says why a freeze is overridden; it needs --override-freeze", "update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--reason", "x"),
		Entry("an override without a definition", "it needs --definition", "update", "hello", "--instances", "2", "--override-freeze", "--reason", "x"),
	)

	It("updates with --override-freeze --reason, which the rollout and the operation record", func() {
		r := runCork(board, "", "desire", fixture("hello-local.json"))
		Expect(r.code).To(Equal(0), r.stderr)
		r = runCork(board, "", "update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--id", "v2",
			"--override-freeze", "--reason", "hotfix for INC-42", "-o", "table")
		Expect(r.code).To(Equal(0), r.stderr)
		lines := r.lines()
		operationID := strings.Fields(lines[len(lines)-1])[len(strings.Fields(lines[len(lines)-1]))-1]

		var status models.RolloutStatus
		parseLines(succeed("rollout", "status", "hello"), &status)
		Expect(status.GetFreezeExemption()).To(Equal(models.FreezeExemptOverride))

		var op models.Operation
		parseLines(succeed("operation", operationID), &op)
		var request models.UpdateDesiredLRPRequest
		Expect(op.GetParameters().UnmarshalTo(&request)).To(Succeed())
		Expect(request.GetUpdate().GetOverrideReason()).To(Equal("hotfix for INC-42"))
		Expect(op.GetHistory()[0].GetMessage()).To(ContainSubstring("overrides any freeze window: hotfix for INC-42"))
	})
})
