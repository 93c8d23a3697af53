package main_test

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("cork", func() {
	var board string

	BeforeEach(func() {
		board = startBoard()
	})

	cork := func(args ...string) result {
		return runCork(board, "", args...)
	}
	// succeed runs cork and expects exit 0 with nothing on stderr.
	succeed := func(args ...string) result {
		r := cork(args...)
		ExpectWithOffset(1, r.code).To(Equal(0), "cork %v: stderr %q", args, r.stderr)
		ExpectWithOffset(1, r.stderr).To(BeEmpty())
		return r
	}
	// fail runs cork and expects the exit code and one "cork: ..." line on stderr.
	fail := func(code int, args ...string) result {
		r := cork(args...)
		ExpectWithOffset(1, r.code).To(Equal(code), "cork %v: stdout %q stderr %q", args, r.stdout, r.stderr)
		ExpectWithOffset(1, r.stderr).To(HavePrefix("cork: "))
		return r
	}

	desireHello := func() *models.DesiredLRP {
		var lrp models.DesiredLRP
		parseLines(succeed("desire", fixture("hello-local.json")), &lrp)
		return &lrp
	}

	Describe("desire, get and list", func() {
		It("desires the hello fixture and prints it as one snake_case JSON line", func() {
			r := succeed("desire", fixture("hello-local.json"))
			Expect(r.lines()).To(HaveLen(1))
			var raw map[string]any
			Expect(json.Unmarshal([]byte(r.lines()[0]), &raw)).To(Succeed())
			Expect(raw).To(HaveKeyWithValue("process_guid", "hello"))
			Expect(raw).To(HaveKey("active_definition_id"))
			Expect(raw).NotTo(HaveKey("processGuid"))
			Expect(r.lines()[0]).To(HavePrefix(`{"process_guid":"hello","domain":"cork","instances":4,`), "compact and stable")

			var lrp models.DesiredLRP
			parseLines(r, &lrp)
			Expect(lrp.GetDomain()).To(Equal("cork"))
			Expect(lrp.GetInstances()).To(BeEquivalentTo(4))
			Expect(lrp.GetDefinition().GetAction().GetEnv()).To(ContainElement(HaveField("Value", "v1")))
		})

		It("reads the spec from stdin with '-'", func() {
			spec, err := os.ReadFile(fixture("minimal.json"))
			Expect(err).NotTo(HaveOccurred())
			r := runCork(board, string(spec), "desire", "-")
			Expect(r.code).To(Equal(0), r.stderr)
			var lrp models.DesiredLRP
			parseLines(r, &lrp)
			Expect(lrp.GetProcessGuid()).To(Equal("minimal"))
		})

		It("gets an LRP as JSON and as a table", func() {
			desired := desireHello()

			var got models.DesiredLRP
			parseLines(succeed("get", "hello"), &got)
			Expect(proto.Equal(&got, desired)).To(BeTrue(), "get shows what desire stored")

			table := succeed("get", "hello", "-o", "table").lines()
			Expect(table).To(HaveLen(2))
			Expect(strings.Fields(table[0])).To(Equal([]string{"PROCESS_GUID", "DOMAIN", "INSTANCES", "ACTIVE_DEFINITION", "HEALTHY_DEFINITION", "MEMORY_MB", "DISK_MB", "AUTOSCALE", "STRATEGY"}))
			Expect(strings.Fields(table[1])).To(Equal([]string{"hello", "cork", "4", desired.GetActiveDefinitionId(), desired.GetActiveDefinitionId(), "64", "64", "-",
				"max_surge=1,max_unavailable=0,min_ready=0s,progress_deadline=10m,auto_revert=no,history_limit=10"}))
		})

		It("shows the strategy the board applies where the spec set none, and JSON as stored", func() {
			var lrp models.DesiredLRP
			parseLines(succeed("desire", fixture("minimal.json")), &lrp)
			Expect(lrp.GetUpdateStrategy().GetProgressDeadlineMs()).To(BeZero())

			table := succeed("get", "minimal", "-o", "table").lines()
			Expect(table).To(HaveLen(2))
			Expect(table[0]).To(HaveSuffix("STRATEGY"))
			Expect(table[1]).To(HaveSuffix(" max_surge=1,max_unavailable=0,min_ready=0s,progress_deadline=10m,auto_revert=no,history_limit=10"))
			Expect(succeed("list", "-o", "table").lines()[1]).To(HaveSuffix(" max_surge=1,max_unavailable=0,min_ready=0s,progress_deadline=10m,auto_revert=no,history_limit=10"))
			Expect(strings.Fields(succeed("scheduling-infos", "-o", "table").lines()[0])).NotTo(ContainElement("STRATEGY"), "a scheduling info has no strategy")
		})

		It("lists LRPs one JSON line each, filters by domain, and prints a table", func() {
			desireHello()
			succeed("desire", fixture("minimal.json"))
			elsewhere := writeFile(`{"process_guid": "elsewhere", "domain": "other", "instances": 1, "definition": {"action": {"path": "./x"}}}`)
			succeed("desire", elsewhere)

			r := succeed("list")
			Expect(r.lines()).To(HaveLen(3))
			var guids []string
			for _, line := range r.lines() {
				var lrp models.DesiredLRP
				Expect(protojson.Unmarshal([]byte(line), &lrp)).To(Succeed(), line)
				guids = append(guids, lrp.GetProcessGuid())
			}
			Expect(guids).To(ConsistOf("hello", "minimal", "elsewhere"))

			Expect(succeed("list", "--domain", "cork").lines()).To(HaveLen(2))
			Expect(succeed("list", "--domain", "nowhere").stdout).To(BeEmpty())

			table := succeed("list", "-o", "table", "--domain", "other").lines()
			Expect(table).To(HaveLen(2))
			Expect(table[0]).To(HavePrefix("PROCESS_GUID"))
			Expect(strings.Fields(table[1])[0]).To(Equal("elsewhere"))
		})

		It("lists scheduling infos without definitions", func() {
			desireHello()
			var info models.DesiredLRPSchedulingInfo
			parseLines(succeed("scheduling-infos", "--domain", "cork"), &info)
			Expect(info.GetProcessGuid()).To(Equal("hello"))
			Expect(info.GetMemoryMb()).To(BeEquivalentTo(64))
			Expect(succeed("scheduling-infos", "-o", "table").lines()[0]).To(HavePrefix("PROCESS_GUID"))
		})
	})

	Describe("update and definitions", func() {
		var desired *models.DesiredLRP

		BeforeEach(func() {
			desired = desireHello()
		})

		It("changes the instance count and annotation", func() {
			var updated models.DesiredLRP
			parseLines(succeed("update", "hello", "--instances", "6", "--annotation", "scaled up"), &updated)
			Expect(updated.GetInstances()).To(BeEquivalentTo(6))
			Expect(updated.GetAnnotation()).To(Equal("scaled up"))
			Expect(updated.GetActiveDefinitionId()).To(Equal(desired.GetActiveDefinitionId()))
			Expect(succeed("actual-lrps", "--guid", "hello").lines()).To(HaveLen(6))

			parseLines(succeed("update", "hello", "--instances", "0"), &updated)
			Expect(updated.GetInstances()).To(BeZero())
			Expect(succeed("actual-lrps", "--guid", "hello").stdout).To(BeEmpty())
		})

		It("stores a new definition under --id and lists both, the new one active", func() {
			var updated models.DesiredLRP
			parseLines(succeed("update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--id", "v2"), &updated)
			Expect(updated.GetActiveDefinitionId()).To(Equal("v2"))
			Expect(updated.GetDefinition().GetAction().GetEnv()).To(ContainElement(HaveField("Value", "v2")))

			r := succeed("definitions", "hello")
			Expect(r.lines()).To(HaveLen(2))
			var newest, oldest models.DefinitionSummary
			Expect(protojson.Unmarshal([]byte(r.lines()[0]), &newest)).To(Succeed())
			Expect(protojson.Unmarshal([]byte(r.lines()[1]), &oldest)).To(Succeed())
			Expect(newest.GetDefinitionId()).To(Equal("v2"))
			Expect(newest.GetActive()).To(BeTrue())
			Expect(oldest.GetDefinitionId()).To(Equal(desired.GetActiveDefinitionId()))
			Expect(oldest.GetActive()).To(BeFalse())
			Expect(r.lines()[1]).To(ContainSubstring(`"active":false`), "default values are printed")

			table := succeed("definitions", "hello", "-o", "table").lines()
			Expect(table).To(HaveLen(3))
			Expect(strings.Fields(table[0])).To(Equal([]string{"DEFINITION_ID", "CREATED", "ACTIVE", "HEALTHY", "EVER_HEALTHY", "FAILED_VALIDATION", "MEMORY_MB", "DISK_MB"}))
			Expect(strings.Fields(table[1])[0:3]).To(Equal([]string{"v2", strings.Fields(table[1])[1], "yes"}))
			Expect(strings.Fields(table[2])[2]).To(Equal("no"))
			Expect(strings.Fields(table[1])[4:6]).To(Equal([]string{"no", "no"}), "v2 is rolling out: not healthy yet")
			Expect(strings.Fields(table[2])[4:6]).To(Equal([]string{"yes", "no"}), "the first definition is the healthy baseline")

			var full models.LRPDefinition
			parseLines(succeed("definition", "hello", "v2"), &full)
			Expect(full.GetAction().GetPath()).To(Equal("./hello"))
			Expect(full.GetAction().GetEnv()).To(ContainElement(HaveField("Value", "v2")))
			fields := succeed("definition", "hello", desired.GetActiveDefinitionId(), "-o", "table").stdout
			Expect(fields).To(MatchRegexp(`(?m)^FIELD\s+VALUE$`))
			Expect(fields).To(MatchRegexp(`(?m)^env\s+VERSION=v1$`))
			Expect(fields).To(MatchRegexp(`(?m)^health_check\s+http port 8080 path /health$`))
		})

		It("lets the board name a definition sent without --id, and repeats it as a no-op", func() {
			var first, second models.DesiredLRP
			parseLines(succeed("update", "hello", "--definition", fixture("hello-local-v2-definition.json")), &first)
			Expect(first.GetActiveDefinitionId()).To(HavePrefix("d-"))
			Expect(first.GetActiveDefinitionId()).NotTo(Equal(desired.GetActiveDefinitionId()))
			parseLines(succeed("update", "hello", "--definition", fixture("hello-local-v2-definition.json")), &second)
			Expect(second.GetActiveDefinitionId()).To(Equal(first.GetActiveDefinitionId()))
			Expect(succeed("definitions", "hello").lines()).To(HaveLen(2))
		})

		It("replaces the routes with --routes, and refuses routes to a port the definition does not expose", func() {
			r := runCork(board, `{"http": [{"hostname": "hello.example.test", "port": 8080}, {"hostname": "hi.example.test", "port": 8080}]}`,
				"update", "hello", "--routes", "-")
			Expect(r.code).To(Equal(0), r.stderr)
			var updated models.DesiredLRP
			parseLines(succeed("get", "hello"), &updated)
			Expect(updated.GetRoutes().GetFields()["http"].GetListValue().GetValues()).To(HaveLen(2))

			r = runCork(board, `{"http": [{"hostname": "hello.example.test", "port": 9090}]}`, "update", "hello", "--routes", "-")
			Expect(r.code).To(Equal(1))
			Expect(r.stderr).To(ContainSubstring(`InvalidRequest: update.routes.http[0].port: sends route "hello.example.test" to port 9090, which the definition does not expose (its ports: [8080])`))
		})

		It("reports a reused --id with other content as ResourceConflict and changes nothing", func() {
			succeed("update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--id", "v2")
			r := fail(1, "update", "hello", "--definition", fixture("hello-local-v3-definition.json"), "--id", "v2")
			Expect(r.stderr).To(HavePrefix("cork: ResourceConflict: "))
			Expect(succeed("definitions", "hello").lines()).To(HaveLen(2))
		})
	})

	Describe("remove", func() {
		It("removes an LRP silently; getting it afterwards fails with ResourceNotFound", func() {
			desireHello()
			r := succeed("remove", "hello")
			Expect(r.stdout).To(BeEmpty())

			r = fail(1, "get", "hello")
			Expect(r.stdout).To(BeEmpty())
			Expect(r.stderr).To(MatchRegexp(`^cork: ResourceNotFound: .*hello.*\n$`))
			Expect(succeed("actual-lrps", "--guid", "hello").stdout).To(BeEmpty())
		})
	})

	Describe("actual-lrps", func() {
		BeforeEach(func() {
			desireHello()
			succeed("desire", fixture("minimal.json"))
			other := writeFile(`{"process_guid": "other", "domain": "elsewhere", "instances": 2, "definition": {"action": {"path": "./x"}}}`)
			succeed("desire", other)
		})

		It("lists every instance, one JSON line each", func() {
			r := succeed("actual-lrps")
			Expect(r.lines()).To(HaveLen(4 + 1 + 2))
			for _, line := range r.lines() {
				var lrp models.ActualLRP
				Expect(protojson.Unmarshal([]byte(line), &lrp)).To(Succeed())
				Expect(lrp.GetState()).To(Equal(models.ActualLRP_UNCLAIMED))
				Expect(lrp.GetDefinitionId()).NotTo(BeEmpty())
			}
			Expect(r.lines()[0]).To(ContainSubstring(`"state":"UNCLAIMED"`))
		})

		It("filters by domain, guid, index and cell", func() {
			Expect(succeed("actual-lrps", "--domain", "elsewhere").lines()).To(HaveLen(2))
			Expect(succeed("actual-lrps", "--domain", "cork").lines()).To(HaveLen(5))
			Expect(succeed("actual-lrps", "--guid", "hello").lines()).To(HaveLen(4))

			var second models.ActualLRP
			parseLines(succeed("actual-lrps", "--guid", "hello", "--index", "2"), &second)
			Expect(second.GetProcessGuid()).To(Equal("hello"))
			Expect(second.GetIndex()).To(BeEquivalentTo(2))
			Expect(succeed("actual-lrps", "--index", "0").lines()).To(HaveLen(3))

			Expect(succeed("actual-lrps", "--cell", "cell-1").stdout).To(BeEmpty(), "nothing is claimed yet")
		})

		It("prints a table", func() {
			table := succeed("actual-lrps", "--guid", "minimal", "-o", "table").lines()
			Expect(table).To(HaveLen(2))
			Expect(strings.Fields(table[0])).To(Equal([]string{"PROCESS_GUID", "INDEX", "PRESENCE", "STATE", "DEFINITION_ID", "CELL_ID", "ADDRESS", "ROUTES", "ROUTABLE", "OCCUPIED", "CRASHES", "SINCE", "REASON"}))
			row := strings.Fields(table[1])
			Expect(row).To(HaveLen(13))
			Expect(row[:4]).To(Equal([]string{"minimal", "0", "ORDINARY", "UNCLAIMED"}))
			Expect(row[5:8]).To(Equal([]string{"-", "-", "-"}), "no cell, no address, no routes until it runs")
			Expect(row[8:10]).To(Equal([]string{"no", "no"}), "neither routable nor occupied")
			Expect(row[12]).To(Equal("-"), "not placed yet, and no placement failed")
		})
	})

	Describe("domains", func() {
		It("sets domains with and without a TTL and lists them", func() {
			Expect(succeed("set-domain", "cork", "--ttl", "10m").stdout).To(BeEmpty())
			succeed("set-domain", "forever")

			r := succeed("domains")
			Expect(r.lines()).To(HaveLen(2))
			expires := map[string]string{}
			for _, line := range r.lines() {
				var raw map[string]any
				Expect(json.Unmarshal([]byte(line), &raw)).To(Succeed())
				expires[raw["domain"].(string)] = raw["expires_at"].(string)
			}
			Expect(expires).To(HaveKeyWithValue("forever", "0"))
			Expect(expires["cork"]).NotTo(Equal("0"))

			table := succeed("domains", "-o", "table").stdout
			Expect(table).To(MatchRegexp(`(?m)^DOMAIN\s+EXPIRES$`))
			Expect(table).To(MatchRegexp(`(?m)^forever\s+never$`))
			Expect(table).To(MatchRegexp(`(?m)^cork\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`))
		})

		It("rejects a negative TTL as a usage error", func() {
			fail(2, "set-domain", "cork", "--ttl", "-1m")
			Expect(succeed("domains").stdout).To(BeEmpty())
		})
	})

	Describe("ping and the board address", func() {
		It("pings the board named by BBS_URL", func() {
			Expect(succeed("ping").stdout).To(Equal("{\"available\":true}\n"))
		})

		It("prefers --bbs-url over BBS_URL", func() {
			r := runCork("http://127.0.0.1:1", "", "ping", "--bbs-url", board)
			Expect(r.code).To(Equal(0), r.stderr)
		})

		It("fails with exit 1 when the board cannot be reached", func() {
			r := runCork("http://127.0.0.1:1", "", "ping")
			Expect(r.code).To(Equal(1))
			Expect(r.stderr).To(HavePrefix("cork: "))
			Expect(r.stderr).To(ContainSubstring("connection refused"))
			Expect(r.stderr).NotTo(ContainSubstring("cork tried"), "the address was given")
		})

		It("says it tried the default address when none was given", func() {
			// Nothing may listen there for the spec: cork must be refused.
			l, err := net.Listen("tcp", "127.0.0.1:8889")
			Expect(err).NotTo(HaveOccurred(), "the spec needs cork's default address free")
			Expect(l.Close()).To(Succeed())
			r := runCork("", "", "ping")
			Expect(r.code).To(Equal(1))
			Expect(r.stderr).To(ContainSubstring("connection refused"))
			Expect(r.stderr).To(ContainSubstring("cork: neither --bbs-url nor BBS_URL is set: cork tried http://127.0.0.1:8889\n"))
		})
	})

	Describe("bad spec files", func() {
		It("names the file and the unknown field, and desires nothing", func() {
			spec := writeFile(`{"process_guid": "typo", "domain": "cork", "instancez": 3, "definition": {"action": {"path": "./x"}}}`)
			r := fail(1, "desire", spec)
			Expect(r.stderr).To(Equal("cork: " + spec + `: line 1:44: unknown field "instancez"` + "\n"))
			Expect(succeed("list").stdout).To(BeEmpty())
		})

		It("names the file and the field with a wrong type", func() {
			spec := writeFile(`{"process_guid": "typo", "domain": "cork", "instances": "four"}`)
			r := fail(1, "desire", spec)
			Expect(r.stderr).To(ContainSubstring(spec + ": "))
			Expect(r.stderr).To(ContainSubstring("instances"))
		})

		It("names the file and the field that fails validation, and desires nothing", func() {
			spec := writeFile(`{"process_guid": "bad", "domain": "cork", "instances": 1, "definition": {"action": {"path": ""}}}`)
			r := fail(1, "desire", spec)
			Expect(r.stderr).To(Equal("cork: " + spec + ": InvalidRequest: definition.action.path: required\n"))
			Expect(succeed("list").stdout).To(BeEmpty())
		})

		It("reports a file that is not there or empty", func() {
			missing := filepath.Join(GinkgoT().TempDir(), "missing.json")
			Expect(fail(1, "desire", missing).stderr).To(Equal("cork: " + missing + ": no such file or directory\n"))
			empty := writeFile("  \n")
			Expect(fail(1, "desire", empty).stderr).To(Equal("cork: " + empty + ": empty, want a JSON object\n"))
		})

		It("names a bad definition file for update and changes nothing", func() {
			desireHello()
			spec := writeFile(`{"action": {"path": "./hello"}, "ports": [70000]}`)
			r := fail(1, "update", "hello", "--definition", spec, "--id", "v2")
			Expect(r.stderr).To(ContainSubstring(spec + ": "))
			Expect(r.stderr).To(ContainSubstring("ports"))
			Expect(succeed("definitions", "hello").lines()).To(HaveLen(1))
		})
	})

	Describe("errors from the board", func() {
		It("exits 1 with the typed error for a missing guid on every per-LRP command", func() {
			for _, args := range [][]string{
				{"get", "nobody"},
				{"remove", "nobody"},
				{"update", "nobody", "--instances", "2"},
				{"definitions", "nobody"},
				{"definition", "nobody", "v1"},
			} {
				r := fail(1, args...)
				Expect(r.stderr).To(HavePrefix("cork: ResourceNotFound: "), "cork %v", args)
				Expect(r.stdout).To(BeEmpty())
			}
		})

		It("exits 1 with InvalidRequest for a value only the board checks", func() {
			desireHello()
			r := fail(1, "update", "hello", "--instances", "-3")
			Expect(r.stderr).To(HavePrefix("cork: InvalidRequest: "))
			Expect(r.stderr).To(ContainSubstring("instances"))
		})
	})

	Describe("usage errors", func() {
		DescribeTable("exit 2 with a message on stderr",
			func(want string, args ...string) {
				r := fail(2, args...)
				Expect(r.stderr).To(ContainSubstring(want))
				Expect(r.stdout).To(BeEmpty())
			},
			Entry("an unknown command", "unknown command", "frobnicate"),
			Entry("an unknown flag", "unknown flag", "list", "--colour"),
			Entry("a missing argument", "get wants 1 argument(s), GUID; got 0", "get"),
			Entry("an extra argument", "got 2", "remove", "a", "b"),
			Entry("an unknown output format", `-o must be json or table, not "yaml"`, "list", "-o", "yaml"),
			Entry("update without a change", "at least one of --instances, --definition, --routes, --annotation", "update", "hello"),
			Entry("--id without --definition", "--id names a new definition; it needs --definition", "update", "hello", "--id", "v2"),
			Entry("a non-numeric instance count", "invalid argument", "update", "hello", "--instances", "many"),
			Entry("a negative index filter", "--index must not be negative", "actual-lrps", "--index", "-1"),
			Entry("an unknown command of a command", `unknown command "frob" for "cork cell"; its commands: clear, drain, drain-status, quarantine`,
				"cell", "frob", "x"),
			Entry("an argument to a command that takes none", "ping takes no arguments; got 1", "ping", "extra"),
			Entry("a board URL without a scheme", `--bbs-url (or BBS_URL) must be http://HOST:PORT or https://HOST:PORT, not "127.0.0.1:8889"`,
				"ping", "--bbs-url", "127.0.0.1:8889"),
			Entry("a board URL with a path", `--bbs-url (or BBS_URL) is the board's address alone, http://127.0.0.1:8889, not "http://127.0.0.1:8889/v1"`,
				"ping", "--bbs-url", "http://127.0.0.1:8889/v1"),
			Entry("an annotation that is not UTF-8", "--annotation must be UTF-8 text", "update", "hello", "--annotation", "bad \x9b byte"),
		)

		It("names the strategy flag whose value the update strategy refuses", func() {
			desireHello()
			r := fail(2, "update", "hello", "--max-surge", "150%")
			Expect(r.stderr).To(HavePrefix(`cork: --max-surge 150%: max_surge must be a count like "2" or a percent like "25%" (0-100%), got "150%"`))
			r = fail(2, "update", "hello", "--min-ready", "-5s")
			Expect(r.stderr).To(HavePrefix("cork: --min-ready -5s: min_ready_ms must not be negative"))
		})
	})
})

// parseLines expects exactly one JSON line per message and decodes them.
func parseLines(r result, messages ...proto.Message) {
	lines := r.lines()
	ExpectWithOffset(1, lines).To(HaveLen(len(messages)), "stdout: %q, stderr: %q", r.stdout, r.stderr)
	for i, m := range messages {
		ExpectWithOffset(1, protojson.Unmarshal([]byte(lines[i]), m)).To(Succeed(), lines[i])
	}
}

// writeFile puts content in a fresh temporary file and returns its path.
func writeFile(content string) string {
	path := filepath.Join(GinkgoT().TempDir(), "spec.json")
	ExpectWithOffset(1, os.WriteFile(path, []byte(content), 0o644)).To(Succeed())
	return path
}
