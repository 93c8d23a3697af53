package main_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/events"
	"github.com/corkboard/corkboard/models"
)

// operationsOf decodes cork's JSON lines as operations.
func operationsOf(r result) []*models.Operation {
	GinkgoHelper()
	Expect(r.code).To(Equal(0), "stderr %q", r.stderr)
	var operations []*models.Operation
	for _, line := range r.lines() {
		op := &models.Operation{}
		Expect(protojson.Unmarshal([]byte(line), op)).To(Succeed(), line)
		operations = append(operations, op)
	}
	return operations
}

func sequencesOf(operations []*models.Operation) []int64 {
	out := make([]int64, 0, len(operations))
	for _, op := range operations {
		out = append(out, op.GetSequence())
	}
	return out
}

// operationLine is the line cork prints after the table of a write.
var operationLine = regexp.MustCompile(`^operation: ([0-9a-f]{24})$`)

// corkCaller is how the board records cork's requests: cork, its user
// and host, then the address the request came from.
var corkCaller = regexp.MustCompile(`^cork \(\S+@\S+\) from 127\.0\.0\.1:\d+$`)

var _ = Describe("cork operations", func() {
	var (
		board string
		hub   *events.Hub
	)

	BeforeEach(func() {
		board, _, hub = startBoardWithEventLog()
	})

	cork := func(args ...string) result { return runCork(board, "", args...) }
	succeed := func(args ...string) result {
		GinkgoHelper()
		r := cork(args...)
		Expect(r.code).To(Equal(0), "cork %v: stderr %q", args, r.stderr)
		Expect(r.stderr).To(BeEmpty())
		return r
	}
	fail := func(code int, args ...string) result {
		GinkgoHelper()
		r := cork(args...)
		Expect(r.code).To(Equal(code), "cork %v: stdout %q stderr %q", args, r.stdout, r.stderr)
		Expect(r.stderr).To(HavePrefix("cork: "))
		return r
	}
	// tableOperationID is the id a write's table ends with.
	tableOperationID := func(r result) string {
		GinkgoHelper()
		lines := r.lines()
		Expect(lines).NotTo(BeEmpty())
		match := operationLine.FindStringSubmatch(lines[len(lines)-1])
		Expect(match).NotTo(BeNil(), "stdout %q", r.stdout)
		return match[1]
	}

	It("lists every operation newest first, follows the pages, and stops at --limit", func() {
		succeed("desire", fixture("hello-local.json"))
		// More operations than the board's page: cork follows the cursor.
		c := client.New(board)
		for i := range models.DefaultOperationsPage + 4 {
			instances := int32(1 + i%5)
			_, err := c.UpdateDesiredLRP(context.Background(), "hello", &models.DesiredLRPUpdate{Instances: &instances})
			Expect(err).NotTo(HaveOccurred())
		}
		succeed("desire", fixture("minimal.json"))
		total := int64(models.DefaultOperationsPage + 5)

		all := operationsOf(succeed("operations", "hello"))
		Expect(all).To(HaveLen(int(total)))
		for i, op := range all {
			Expect(op.GetProcessGuid()).To(Equal("hello"))
			Expect(op.GetSequence()).To(Equal(total-int64(i)), "newest first")
		}
		Expect(operationsOf(succeed("operations"))).To(HaveLen(int(total) + 1))

		Expect(sequencesOf(operationsOf(succeed("operations", "hello", "--limit", "3")))).To(Equal([]int64{total, total - 1, total - 2}))
		first := operationsOf(succeed("operations", "--limit", "1"))
		Expect(first).To(HaveLen(1))
		Expect(first[0].GetProcessGuid()).To(Equal("minimal"))
	})

	It("filters by status and kind, named in any case", func() {
		succeed("desire", fixture("hello-local.json"))
		succeed("update", "hello", "--instances", "2")
		succeed("update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--id", "v2")

		desires := operationsOf(succeed("operations", "hello", "--kind", "desire"))
		Expect(desires).To(HaveLen(1))
		Expect(desires[0].GetKind()).To(Equal(models.Operation_DESIRE))
		inProgress := operationsOf(succeed("operations", "--status", "In-Progress"))
		Expect(inProgress).To(HaveLen(1))
		Expect(inProgress[0].GetKind()).To(Equal(models.Operation_UPDATE_DEFINITION))
		Expect(operationsOf(succeed("operations", "hello", "--status", "FINISHED", "--kind", "update"))).To(HaveLen(1))
		Expect(succeed("operations", "--status", "pending").stdout).To(BeEmpty())
	})

	It("prints a table with the operations' times, lease and shortened reason", func() {
		succeed("desire", fixture("hello-local.json"))
		succeed("update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--id", "v2")
		superseding := succeed("update", "hello", "--definition", fixture("hello-local-v3-definition.json"), "--id", "v3", "-o", "table")
		ops := operationsOf(succeed("operations", "hello"))
		Expect(ops).To(HaveLen(3))
		Expect(ops[0].GetId()).To(Equal(tableOperationID(superseding)))
		Expect(ops[1].GetStatus()).To(Equal(models.Operation_CANCELED), "superseded")
		Expect(ops[1].GetReason()).NotTo(BeEmpty())

		table := succeed("operations", "hello", "-o", "table").lines()
		Expect(table).To(HaveLen(4))
		Expect(strings.Fields(table[0])).To(Equal([]string{"ID", "SEQ", "GUID", "KIND", "STATUS", "CREATED", "STARTED", "FINISHED", "LEASE", "REASON"}))
		for i, op := range ops {
			row := strings.Fields(table[i+1])
			Expect(row[:5]).To(Equal([]string{op.GetId(), strconv.FormatInt(op.GetSequence(), 10), "hello", op.GetKind().String(), op.GetStatus().String()}))
			Expect(row[5]).To(Equal(time.Unix(0, op.GetCreatedAt()).UTC().Format(time.RFC3339)))
			Expect(row[8]).To(Equal("-"), "no board owns a lease here")
		}
		canceled := strings.Fields(table[2])
		Expect(canceled[7]).To(Equal(time.Unix(0, ops[1].GetFinishedAt()).UTC().Format(time.RFC3339)))
		reason := strings.Join(canceled[9:], " ")
		Expect([]rune(reason)).To(HaveLen(min(60, len([]rune(ops[1].GetReason())))))
		Expect(ops[1].GetReason()).To(HavePrefix(strings.TrimSuffix(reason, "…")))
	})

	It("shows one operation as JSON, and as its fields and a timeline of its history", func() {
		desired := succeed("desire", fixture("hello-local.json"), "-o", "table")
		id := tableOperationID(desired)

		var op models.Operation
		parseLines(succeed("operation", id), &op)
		Expect(op.GetId()).To(Equal(id))
		Expect(op.GetKind()).To(Equal(models.Operation_DESIRE))
		Expect(op.GetRequestedBy()).To(MatchRegexp(corkCaller.String()))
		Expect(op.GetParameters().GetTypeUrl()).To(HaveSuffix("DesireLRPRequest"))

		lines := strings.Split(strings.TrimSuffix(succeed("operation", id, "-o", "table").stdout, "\n"), "\n")
		fields := map[string]string{}
		i := 1
		Expect(strings.Fields(lines[0])).To(Equal([]string{"FIELD", "VALUE"}))
		for ; lines[i] != ""; i++ {
			name, value, _ := strings.Cut(lines[i], " ")
			fields[name] = strings.TrimSpace(value)
		}
		Expect(fields).To(HaveKeyWithValue("id", id))
		Expect(fields).To(HaveKeyWithValue("process_guid", "hello"))
		Expect(fields).To(HaveKeyWithValue("sequence", "1"))
		Expect(fields).To(HaveKeyWithValue("kind", "DESIRE"))
		Expect(fields).To(HaveKeyWithValue("status", "FINISHED"))
		Expect(fields["requested_by"]).To(MatchRegexp(corkCaller.String()))
		Expect(fields).To(HaveKeyWithValue("created_at", time.Unix(0, op.GetCreatedAt()).UTC().Format(time.RFC3339)))
		Expect(fields).To(HaveKeyWithValue("lease", "-"))
		Expect(fields["parameters"]).To(HavePrefix(`DesireLRPRequest {"desired_lrp":{"process_guid":"hello"`))
		Expect([]rune(fields["parameters"])).To(HaveLen(120))

		timeline := lines[i+1:]
		Expect(strings.Fields(timeline[0])).To(Equal([]string{"TIME", "HISTORY"}))
		Expect(op.GetHistory()).NotTo(BeEmpty())
		Expect(timeline[1:]).To(HaveLen(len(op.GetHistory())))
		for j, entry := range op.GetHistory() {
			at := time.Unix(0, entry.GetAt()).UTC().Format("2006-01-02T15:04:05.000Z07:00")
			Expect(timeline[j+1]).To(Equal(at + "  " + entry.GetMessage()))
		}
	})

	It("queues an update with --queue and cancels it; cannot cancel it twice", func() {
		succeed("desire", fixture("hello-local.json"))
		succeed("update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--id", "v2")
		r := succeed("update", "hello", "--definition", fixture("hello-local-v3-definition.json"), "--id", "v3", "--queue", "-o", "table")
		id := tableOperationID(r)
		Expect(strings.Fields(r.lines()[1])[3]).To(Equal("v2"), "the table shows v2 still active")

		var queued models.Operation
		parseLines(succeed("operation", id), &queued)
		Expect(queued.GetStatus()).To(Equal(models.Operation_PENDING))
		Expect(queued.GetDefinitionId()).To(Equal("v3"))

		var canceled models.Operation
		parseLines(succeed("operation", "cancel", id), &canceled)
		Expect(canceled.GetId()).To(Equal(id))
		Expect(canceled.GetStatus()).To(Equal(models.Operation_CANCELED))

		again := fail(1, "operation", "cancel", id)
		Expect(again.stderr).To(HavePrefix("cork: InvalidStateTransition: "))
		Expect(again.stdout).To(BeEmpty())
	})

	It("cancels a rollout, which rolls back, and shows the canceled operation as a table", func() {
		var lrp models.DesiredLRP
		parseLines(succeed("desire", fixture("hello-local.json")), &lrp)
		id := tableOperationID(succeed("update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--id", "v2", "-o", "table"))

		lines := succeed("operation", "cancel", id, "-o", "table").lines()
		Expect(lines).To(ContainElement(MatchRegexp(`^status\s+CANCELED$`)))
		parseLines(succeed("get", "hello"), &lrp)
		Expect(lrp.GetActiveDefinitionId()).NotTo(Equal("v2"), "back to the healthy definition")
		aborts := operationsOf(succeed("operations", "hello", "--kind", "abort"))
		Expect(aborts).To(HaveLen(1))
		Expect(aborts[0].GetRequestedBy()).To(MatchRegexp(corkCaller.String()))
	})

	It("prints the operation id after the table of a desire, an update, a rollback, an abort and a removal, and keeps JSON as the board answered", func() {
		desired := succeed("desire", fixture("hello-local.json"), "-o", "table")
		Expect(desired.lines()).To(HaveLen(3))
		updated := succeed("update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--id", "v2", "-o", "table")
		aborted := succeed("rollout", "abort", "hello", "-o", "table")
		rolledBack := cork("rollback", "hello", "--to", "v2", "-o", "table")
		Expect(rolledBack.code).To(Equal(0))
		Expect(rolledBack.stderr).To(HavePrefix("cork: warning: v2 never became healthy"), "its rollout was aborted")
		Expect(rolledBack.lines()).To(HaveLen(3), "the warning is not in the output")
		removed := succeed("remove", "hello", "-o", "table")
		Expect(removed.lines()).To(HaveLen(1))

		kinds := map[string]models.Operation_Kind{}
		for _, op := range operationsOf(succeed("operations", "hello")) {
			kinds[op.GetId()] = op.GetKind()
		}
		Expect(kinds).To(Equal(map[string]models.Operation_Kind{
			tableOperationID(desired):    models.Operation_DESIRE,
			tableOperationID(updated):    models.Operation_UPDATE_DEFINITION,
			tableOperationID(aborted):    models.Operation_ABORT,
			tableOperationID(rolledBack): models.Operation_ROLLBACK,
			tableOperationID(removed):    models.Operation_REMOVE,
		}))

		succeed("desire", fixture("minimal.json"))
		Expect(succeed("update", "minimal", "--instances", "2").lines()).To(HaveLen(1), "JSON: the LRP alone, as before")
		Expect(succeed("remove", "minimal").stdout).To(BeEmpty())
	})

	It("follows operation_changed events, filtered by type, as JSON and as a table", func() {
		session := startCork(board, "events", "--type", "operation_changed")
		waitForSubscriber(hub, 1)
		table := startCork(board, "events", "--type", models.EventOperationChanged, "-o", "table")
		waitForSubscriber(hub, 2)
		succeed("desire", fixture("hello-local.json"))

		// One write may change its operation more than once; the first
		// event is its creation.
		Eventually(func() int { return len(outputLines(session)) }, 5*time.Second).Should(BeNumerically(">=", 1))
		var got [1]printedEvent
		Expect(json.Unmarshal([]byte(outputLines(session)[0]), &got[0])).To(Succeed())
		Expect(got[0].Type).To(Equal("operation_changed"))
		var changed models.OperationChangedEvent
		Expect(protojson.Unmarshal(got[0].Data, &changed)).To(Succeed())
		op := changed.GetOperation()
		Expect(op.GetKind()).To(Equal(models.Operation_DESIRE))
		Expect(op.GetProcessGuid()).To(Equal("hello"))

		Eventually(func() int { return len(outputLines(table)) }, 5*time.Second).Should(BeNumerically(">=", 2))
		rows := outputLines(table)
		Expect(strings.Fields(rows[0])).To(Equal([]string{"ID", "TYPE", "ABOUT", "DETAIL"}))
		Expect(strings.Fields(rows[1])[:7]).To(Equal([]string{strconv.FormatUint(got[0].ID, 10), "operation_changed", "hello", op.GetId(), "#" + strconv.FormatInt(op.GetSequence(), 10), op.GetKind().String(), op.GetStatus().String()}))

		session.Interrupt()
		table.Interrupt()
		Eventually(session, 5*time.Second).Should(gexec.Exit(0))
		Eventually(table, 5*time.Second).Should(gexec.Exit(0))
	})

	DescribeTable("usage errors exit 2 naming the flag",
		func(want string, args ...string) {
			r := fail(2, args...)
			Expect(r.stderr).To(ContainSubstring(want))
			Expect(r.stdout).To(BeEmpty())
		},
		Entry("an unknown status", `--status "sleeping" is not an operation status; want one of pending, in_progress, finished, error, canceled, evicted`, "operations", "--status", "sleeping"),
		Entry("the unset status", `--status "status_unknown" is not an operation status`, "operations", "--status", "status_unknown"),
		Entry("an unknown kind", `--kind "redeploy" is not an operation kind; want one of desire, update, update_definition,`, "operations", "--kind", "redeploy"),
		Entry("a zero limit", "--limit must be at least 1, got 0", "operations", "--limit", "0"),
		Entry("two guids", "operations wants at most 1 argument, GUID; got 2", "operations", "hello", "minimal"),
		Entry("an operation without an id", "operation wants 1 argument(s), ID; got 0", "operation"),
		Entry("a cancel without an id", "cancel wants 1 argument(s), ID; got 0", "operation", "cancel"),
		Entry("--queue without a definition", "--queue queues a new definition; it needs --definition", "update", "hello", "--queue", "--instances", "2"),
	)

	It("says what the board says of an operation it does not know or a bad id", func() {
		r := fail(1, "operation", models.NewOperationID(time.Now()))
		Expect(r.stderr).To(HavePrefix("cork: ResourceNotFound: "))
		r = fail(1, "operation", "cancel", "latest")
		Expect(r.stderr).To(HavePrefix("cork: InvalidRequest: id: "))
	})
})
