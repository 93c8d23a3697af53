package main_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("cork and autoscaling", func() {
	var (
		board string
		store *sqldb.SQLDB
	)

	BeforeEach(func() {
		board, store = startBoardWithStore(nil)
	})

	cork := func(stdin string, args ...string) result {
		return runCork(board, stdin, args...)
	}
	succeed := func(args ...string) result {
		r := cork("", args...)
		ExpectWithOffset(1, r.code).To(Equal(0), "cork %v: stderr %q", args, r.stderr)
		ExpectWithOffset(1, r.stderr).To(BeEmpty())
		return r
	}
	fail := func(code int, args ...string) result {
		r := cork("", args...)
		ExpectWithOffset(1, r.code).To(Equal(code), "cork %v: stdout %q stderr %q", args, r.stdout, r.stderr)
		ExpectWithOffset(1, r.stderr).To(HavePrefix("cork: "))
		return r
	}

	// settings is the brief's example, snake_case.
	const settings = `{"enabled": true, "min": 2, "max": 10, "policy": {"type": "roomOccupancy", "parameters": {"room_occupancy": {"ready_target": 0.5}}}, "scale_down_stabilization_ms": 120000}`
	// camelSettings is the same in protojson's camelCase names, no limit.
	const camelSettings = `{"enabled": true, "min": 3, "max": -1, "policy": {"type": "roomOccupancy", "parameters": {"roomOccupancy": {"readyTarget": 0.3}}}, "scaleDownStabilizationMs": 60000}`

	// helloSpec is the hello fixture with extra top-level fields.
	helloSpec := func(extra string) string {
		spec, err := os.ReadFile(fixture("hello-local.json"))
		Expect(err).NotTo(HaveOccurred())
		body := strings.TrimSpace(string(spec))
		return writeFile(strings.TrimSuffix(body, "}") + ", " + extra + "}")
	}
	get := func() *models.DesiredLRP {
		var lrp models.DesiredLRP
		parseLines(succeed("get", "hello"), &lrp)
		return &lrp
	}

	Describe("desire", func() {
		It("takes autoscaling from the spec; get shows it in JSON and in the table", func() {
			var stored models.DesiredLRP
			parseLines(succeed("desire", helloSpec(`"autoscaling": `+settings)), &stored)
			Expect(stored.GetAutoscaling().GetEnabled()).To(BeTrue())

			lrp := get()
			Expect(lrp.GetAutoscaling().GetMin()).To(BeEquivalentTo(2))
			Expect(lrp.GetAutoscaling().GetMax()).To(BeEquivalentTo(10))
			Expect(lrp.GetAutoscaling().GetPolicy().GetType()).To(Equal(models.RoomOccupancyPolicy))
			Expect(lrp.GetAutoscaling().ReadyTarget()).To(Equal(0.5))
			Expect(lrp.GetAutoscaling().GetScaleDownStabilizationMs()).To(BeEquivalentTo(120000))
			Expect(lrp.GetInstances()).To(BeNumerically(">=", 2))
			Expect(lrp.GetInstances()).To(BeNumerically("<=", 10), "enabling clamps instances")

			var raw map[string]any
			Expect(json.Unmarshal([]byte(succeed("get", "hello").lines()[0]), &raw)).To(Succeed())
			Expect(raw).To(HaveKey("autoscaling"))
			Expect(raw["autoscaling"]).To(HaveKeyWithValue("scale_down_stabilization_ms", "120000"))

			table := succeed("get", "hello", "-o", "table").lines()
			Expect(table).To(HaveLen(4))
			header := strings.Fields(table[0])
			Expect(header[7]).To(Equal("AUTOSCALE"))
			Expect(strings.Fields(table[1])[7]).To(Equal("2-10@0.5"))
			Expect(table[2]).To(Equal("autoscaling: enabled, min 2, max 10, policy roomOccupancy, ready_target 0.5, scale-down window 2m0s"))
			Expect(table[3]).To(HavePrefix("autoscaler: "), "the last decision, or none yet")

			Expect(strings.Fields(succeed("list", "-o", "table").lines()[1])[7]).To(Equal("2-10@0.5"))
			Expect(strings.Fields(succeed("scheduling-infos", "-o", "table").lines()[1])[7]).To(Equal("2-10@0.5"))
		})

		It("takes --autoscaling FILE in camelCase over the spec's, and shows no limit", func() {
			succeed("desire", helloSpec(`"autoscaling": `+settings), "--autoscaling", writeFile(camelSettings))
			lrp := get()
			Expect(lrp.GetAutoscaling().GetMin()).To(BeEquivalentTo(3))
			Expect(lrp.GetAutoscaling().GetMax()).To(BeEquivalentTo(-1))
			Expect(lrp.GetAutoscaling().ReadyTarget()).To(Equal(0.3))

			table := succeed("get", "hello", "-o", "table").lines()
			Expect(strings.Fields(table[1])[7]).To(Equal("3-∞@0.3"))
			Expect(table[2]).To(Equal("autoscaling: enabled, min 3, max no limit, policy roomOccupancy, ready_target 0.3, scale-down window 1m0s"))
		})

		It("reads --autoscaling from stdin with '-'", func() {
			r := cork(settings, "desire", fixture("hello-local.json"), "--autoscaling", "-")
			Expect(r.code).To(Equal(0), r.stderr)
			Expect(get().GetAutoscaling().GetMax()).To(BeEquivalentTo(10))
		})

		It("refuses invalid settings naming the file and the field, and desires nothing", func() {
			file := writeFile(`{"enabled": true, "min": 0, "max": 10, "policy": {"type": "roomOccupancy", "parameters": {"room_occupancy": {"ready_target": 0.5}}}}`)
			r := fail(1, "desire", fixture("hello-local.json"), "--autoscaling", file)
			Expect(r.stderr).To(HavePrefix("cork: " + file + ": InvalidRequest: autoscaling.min: "))
			Expect(r.stderr).To(ContainSubstring("disable autoscaling"))

			spec := helloSpec(`"autoscaling": {"enabled": true, "min": 2, "max": 10, "policy": {"type": "roomOccupancy", "parameters": {"room_occupancy": {"ready_target": 0.95}}}}`)
			r = fail(1, "desire", spec)
			Expect(r.stderr).To(HavePrefix("cork: " + spec + ": InvalidRequest: autoscaling.policy.parameters.room_occupancy.ready_target: "))
			Expect(succeed("list").stdout).To(BeEmpty())
		})

		It("refuses both the spec and --autoscaling from stdin", func() {
			Expect(fail(2, "desire", "-", "--autoscaling", "-").stderr).To(ContainSubstring("only one of FILE and --autoscaling"))
		})
	})

	Describe("update", func() {
		It("sets autoscaling with --autoscaling FILE and turns it off with --autoscaling-enabled=false", func() {
			succeed("desire", fixture("hello-local.json"))
			Expect(get().GetAutoscaling()).To(BeNil())
			Expect(succeed("get", "hello", "-o", "table").lines()).To(HaveLen(2), "nothing about autoscaling without it")

			var updated models.DesiredLRP
			parseLines(succeed("update", "hello", "--autoscaling", writeFile(settings)), &updated)
			Expect(updated.GetAutoscaling().IsEnabled()).To(BeTrue())
			Expect(get().GetAutoscaling().GetMax()).To(BeEquivalentTo(10))

			scaled := get().GetInstances()
			parseLines(succeed("update", "hello", "--autoscaling-enabled=false"), &updated)
			Expect(updated.GetAutoscaling().IsEnabled()).To(BeFalse())
			lrp := get()
			Expect(lrp.GetAutoscaling().IsEnabled()).To(BeFalse())
			Expect(lrp.GetInstances()).To(Equal(scaled), "instances stay where autoscaling left them")
			table := succeed("get", "hello", "-o", "table").lines()
			Expect(strings.Fields(table[1])[7]).To(Equal("-"))
			Expect(table).NotTo(ContainElement(HavePrefix("autoscaling: enabled")), "{enabled: false} may be stored as no settings")

			parseLines(succeed("update", "hello", "--instances", "5"), &updated)
			Expect(updated.GetInstances()).To(BeEquivalentTo(5), "instances can be set again")
		})

		It("lets --autoscaling-enabled=false override the file's enabled, keeping the settings", func() {
			succeed("desire", fixture("hello-local.json"))
			succeed("update", "hello", "--autoscaling", writeFile(settings), "--autoscaling-enabled=false", "--instances", "3")
			lrp := get()
			Expect(lrp.GetAutoscaling().GetEnabled()).To(BeFalse())
			Expect(lrp.GetAutoscaling().GetMax()).To(BeEquivalentTo(10))
			Expect(lrp.GetInstances()).To(BeEquivalentTo(3))
			Expect(succeed("get", "hello", "-o", "table").lines()).To(ContainElement(
				"autoscaling: disabled, min 2, max 10, policy roomOccupancy, ready_target 0.5, scale-down window 2m0s"))
		})

		It("refuses --instances while autoscaling is enabled, naming instances, and changes nothing", func() {
			succeed("desire", helloSpec(`"autoscaling": `+settings))
			before := get()
			r := fail(1, "update", "hello", "--instances", "7")
			Expect(r.stderr).To(HavePrefix("cork: InvalidRequest: "))
			Expect(r.stderr).To(ContainSubstring("instances"))
			Expect(r.stderr).To(ContainSubstring("autoscaling"))
			Expect(get().GetInstances()).To(Equal(before.GetInstances()))
		})

		It("refuses --instances with enabled settings in the same update", func() {
			succeed("desire", fixture("hello-local.json"))
			r := fail(1, "update", "hello", "--autoscaling", writeFile(settings), "--instances", "7")
			Expect(r.stderr).To(HavePrefix("cork: InvalidRequest: "))
			Expect(r.stderr).To(ContainSubstring("instances"))
			Expect(get().GetAutoscaling()).To(BeNil())
		})

		It("names the file and the field of invalid settings and changes nothing", func() {
			succeed("desire", fixture("hello-local.json"))
			file := writeFile(`{"enabled": true, "min": 5, "max": 3, "policy": {"type": "roomOccupancy", "parameters": {"room_occupancy": {"ready_target": 0.5}}}}`)
			r := fail(1, "update", "hello", "--autoscaling", file)
			Expect(r.stderr).To(HavePrefix("cork: " + file + ": InvalidRequest: autoscaling.max: "))
			file = writeFile(`{"enabled": true, "min": 2, "max": 3, "polcy": {}}`)
			r = fail(1, "update", "hello", "--autoscaling", file)
			Expect(r.stderr).To(ContainSubstring(`unknown field "polcy"`))
			Expect(get().GetAutoscaling()).To(BeNil())
		})

		DescribeTable("usage errors",
			func(want string, args ...string) {
				r := fail(2, args...)
				Expect(r.stderr).To(ContainSubstring(want))
			},
			Entry("enabling without settings", "--autoscaling-enabled=true needs --autoscaling FILE", "update", "hello", "--autoscaling-enabled"),
			Entry("two files from stdin", "only one of --definition, --routes, --autoscaling and --analysis can be", "update", "hello", "--definition", "-", "--autoscaling", "-"),
		)
	})

	Describe("rollout status", func() {
		It("follows the table with the autoscaler's line when the LRP is autoscaled", func() {
			succeed("desire", helloSpec(`"autoscaling": `+settings))
			lines := succeed("rollout", "status", "hello", "-o", "table").lines()
			Expect(lines).To(HaveLen(3))
			Expect(lines[2]).To(HavePrefix("autoscaler: "))

			succeed("desire", writeFile(`{"process_guid": "plain", "domain": "cork", "instances": 1, "definition": {"action": {"path": "./x"}}}`))
			Expect(succeed("rollout", "status", "plain", "-o", "table").lines()).To(HaveLen(2))
		})
	})

	Describe("the autoscaler's last decision", func() {
		// decided is when the decision below was made.
		decided := time.Date(2026, 11, 26, 16, 0, 0, 0, time.UTC)

		BeforeEach(func() {
			succeed("desire", helloSpec(`"autoscaling": `+settings))
			lrp := get()
			Expect(lrp.GetInstances()).To(BeEquivalentTo(4))
			// What convergence writes when 4 instances are occupied.
			decision := &models.AutoscalerDecision{
				At: decided.UnixNano(), Occupied: 4, ReadyTarget: 0.5, Computed: 8, Wanted: 8,
				Min: 2, Max: 10, Instances: 8, PreviousInstances: 4,
			}
			_, err := store.ApplyConvergence(context.Background(), &convergence.ConvergenceWrites{Autoscale: []convergence.AutoscaleWrite{{
				ProcessGuid: "hello", ExpectModificationIndex: int64(lrp.GetModificationTag().GetIndex()),
				PreviousInstances: 4, Instances: 8,
				Status: &models.AutoscalerStatus{
					LastDecision:    decision,
					Recommendations: []*models.AutoscalerRecommendation{{At: decided.UnixNano(), Wanted: 8}},
				},
			}}})
			Expect(err).NotTo(HaveOccurred())
			Expect(get().GetInstances()).To(BeEquivalentTo(8))
		})

		const line = "autoscaler: occupied 4, ready_target 0.5: ceil(4 / (1 − 0.5)) = 8, within [2, 10]: wanted 8; instances 4 → 8 (at 2026-11-26T16:00:00Z)"

		It("is in get's JSON and table", func() {
			lrp := get()
			Expect(lrp.GetAutoscaler().GetLastDecision().GetWanted()).To(BeEquivalentTo(8))
			Expect(lrp.GetAutoscaler().GetLastDecision().GetAt()).To(Equal(decided.UnixNano()))

			table := succeed("get", "hello", "-o", "table").lines()
			Expect(table).To(HaveLen(4))
			Expect(strings.Fields(table[1])[2]).To(Equal("8"))
			Expect(table[3]).To(Equal(line))
		})

		It("follows the rollout status table", func() {
			lines := succeed("rollout", "status", "hello", "-o", "table").lines()
			Expect(lines).To(HaveLen(3))
			Expect(lines[2]).To(Equal(line))
		})
	})
})
